// DistributedAtomicLong on the in-memory ensemble: Curator's encoding, a
// missing node read as 0 and made by the first write, compare-and-set, the
// optimistic loop through a real version conflict, the promotion to a lock,
// and a lost reply answered `indeterminate` with the change applied once.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "counter_write.hpp"
#include "lock_fixture.hpp"
#include "zkr/distributed_atomic_long.hpp"
#include "zkr/shared_count.hpp"

namespace zkr {
namespace {

const std::string kCounter = "/counters/hits";
const std::string kLockPath = "/counters/hits-lock";

std::string long_bytes(std::int64_t v) { return detail::encode_int64(v); }

TEST(CounterEncoding, IsCuratorsBigEndianIntAndLong) {
  EXPECT_EQ(detail::encode_int64(1), std::string("\0\0\0\0\0\0\0\x01", 8));
  EXPECT_EQ(detail::encode_int64(-2), std::string("\xff\xff\xff\xff\xff\xff\xff\xfe", 8));
  EXPECT_EQ(detail::encode_int64(0x0102030405060708),
            std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8));
  EXPECT_EQ(detail::encode_int32(0x01020304), std::string("\x01\x02\x03\x04", 4));
  EXPECT_EQ(detail::encode_int32(-1), std::string("\xff\xff\xff\xff", 4));
  for (const std::int64_t v :
       {std::numeric_limits<std::int64_t>::min(), std::int64_t{-1}, std::int64_t{0},
        std::int64_t{300}, std::numeric_limits<std::int64_t>::max()})
    EXPECT_EQ(detail::decode_int64("/c", detail::encode_int64(v)), v);
  for (const std::int32_t v : {std::numeric_limits<std::int32_t>::min(), -1, 0, 70000,
                               std::numeric_limits<std::int32_t>::max()})
    EXPECT_EQ(detail::decode_int32("/c", detail::encode_int32(v)), v);
  EXPECT_EQ(detail::decode_int64("/c", ""), 0);  // Curator reads an empty node as 0
}

TEST(CounterEncoding, DataOfTheWrongSizeIsRefusedNamingPathAndSize) {
  try {
    (void)detail::decode_int64("/c/long", "abc");
    FAIL() << "three bytes decoded as a long";
  } catch (const CounterDataError& e) {
    EXPECT_EQ(e.path(), "/c/long");
    EXPECT_EQ(e.size(), 3u);
    EXPECT_NE(std::string(e.what()).find("/c/long"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("3 bytes"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)detail::decode_int32("/c/int", detail::encode_int64(1)), CounterDataError);
  EXPECT_THROW((void)detail::decode_int32("/c/int", ""), CounterDataError);
}

class AtomicLongTest : public LockUnitTest<InterProcessMutex> {
 protected:
  std::unique_ptr<DistributedAtomicLong> counter(Contender& c,
                                                 DistributedAtomicLongOptions options = {}) {
    return std::make_unique<DistributedAtomicLong>(*c.client, kCounter, std::move(options));
  }
  std::int64_t server_value() {
    const auto data = ensemble_.data_now(kCounter);
    EXPECT_TRUE(data) << kCounter << " missing";
    return data ? detail::decode_int64(kCounter, *data) : -1;
  }
  void put(std::int64_t v) {
    if (!ensemble_.exists_now(kCounter)) {
      raw().create_parents(kCounter);
      raw().create(kCounter, long_bytes(v));
    } else {
      raw().set(kCounter, long_bytes(v));
    }
  }
};

TEST_F(AtomicLongTest, AMissingNodeIsZeroAndTheFirstAddMakesItWithContainerParents) {
  auto& a = contender();
  auto hits = counter(a);
  EXPECT_EQ(hits->get(), 0);
  EXPECT_FALSE(ensemble_.exists_now(kCounter)) << "a read made the node";
  const auto r = hits->add(5);
  ASSERT_TRUE(r.succeeded()) << to_string(r.outcome);
  EXPECT_EQ(r.pre, 0);
  EXPECT_EQ(r.post, 5);
  EXPECT_EQ(ensemble_.data_now(kCounter), long_bytes(5));
  const auto node = ensemble_.exists_now(kCounter);
  ASSERT_TRUE(node);
  EXPECT_FALSE(node->is_ephemeral());
  EXPECT_EQ(hits->increment().post, 6);
  EXPECT_EQ(hits->decrement().post, 5);
  EXPECT_EQ(hits->subtract(10).post, -5);
  EXPECT_EQ(hits->get(), -5);
  EXPECT_EQ(server_value(), -5);
  // Its parent is a container: the server removes it once the counter goes.
  raw().remove(kCounter);
  EXPECT_EQ(ensemble_.reap_containers(), 1u);
  EXPECT_FALSE(ensemble_.exists_now("/counters"));
}

TEST_F(AtomicLongTest, AddWrapsAsJavasLongDoes) {
  auto& a = contender();
  put(std::numeric_limits<std::int64_t>::max());
  const auto r = counter(a)->increment();
  ASSERT_TRUE(r.succeeded());
  EXPECT_EQ(r.post, std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(server_value(), std::numeric_limits<std::int64_t>::min());
}

TEST_F(AtomicLongTest, ANodeOfTheWrongSizeIsAClearErrorAndIsNotWritten) {
  auto& a = contender();
  raw().create_parents(kCounter);
  raw().create(kCounter, "four");
  auto hits = counter(a);
  EXPECT_THROW((void)hits->get(), CounterDataError);
  EXPECT_THROW((void)hits->add(1), CounterDataError);
  EXPECT_EQ(ensemble_.data_now(kCounter), "four");
}

TEST_F(AtomicLongTest, CompareAndSetWritesOnlyOverTheExpectedValue) {
  auto& a = contender();
  auto hits = counter(a);
  auto missing = hits->compare_and_set(0, 9);  // Curator: a missing node never matches
  EXPECT_EQ(missing.outcome, CounterOutcome::conflict);
  EXPECT_FALSE(ensemble_.exists_now(kCounter));
  put(3);
  const auto stale = hits->compare_and_set(2, 9);
  EXPECT_EQ(stale.outcome, CounterOutcome::conflict);
  EXPECT_EQ(stale.pre, 3);
  EXPECT_FALSE(stale.post);
  EXPECT_EQ(server_value(), 3);
  const auto fresh = hits->compare_and_set(3, 9);
  ASSERT_TRUE(fresh.succeeded());
  EXPECT_EQ(fresh.pre, 3);
  EXPECT_EQ(fresh.post, 9);
  EXPECT_EQ(server_value(), 9);
}

TEST_F(AtomicLongTest, CompareAndSetLosesToAWriteBetweenItsReadAndItsSet) {
  auto& a = contender();
  put(3);
  auto& rule = a.faults->on(test::OpKind::get, kCounter).after([&](const test::FaultCall&) {
    raw().set(kCounter, long_bytes(4));
  });
  const auto r = counter(a)->compare_and_set(3, 9);
  EXPECT_EQ(rule.fired(), 1);
  EXPECT_EQ(r.outcome, CounterOutcome::conflict);
  EXPECT_EQ(server_value(), 4);
}

TEST_F(AtomicLongTest, AVersionConflictReadsAgainAndAddsToTheNewValue) {
  auto& a = contender();
  put(10);
  // Another writer gets in between our read and our write, twice.
  auto& rule =
      a.faults->on(test::OpKind::get, kCounter)
          .after([&](const test::FaultCall&) {
            raw().set(
                kCounter,
                long_bytes(detail::decode_int64(kCounter, *ensemble_.data_now(kCounter)) + 100));
          })
          .times(2);
  const auto r = counter(a)->add(1);
  EXPECT_EQ(rule.fired(), 2);
  ASSERT_TRUE(r.succeeded());
  EXPECT_EQ(r.pre, 210);
  EXPECT_EQ(r.post, 211);
  EXPECT_EQ(server_value(), 211);
}

TEST_F(AtomicLongTest, OptimisticAttemptsRunOutAsAConflictNotApplied) {
  auto& a = contender();
  put(10);
  DistributedAtomicLongOptions options;
  options.retry_policy = std::make_shared<RetryNTimes>(2, std::chrono::milliseconds(1));
  auto& rule =
      a.faults->on(test::OpKind::get, kCounter)
          .after([&](const test::FaultCall&) {
            raw().set(
                kCounter,
                long_bytes(detail::decode_int64(kCounter, *ensemble_.data_now(kCounter)) + 100));
          })
          .times(100);
  const auto r = counter(a, options)->add(1);
  EXPECT_EQ(rule.fired(), 3);  // the first attempt and two retries
  EXPECT_EQ(r.outcome, CounterOutcome::conflict);
  EXPECT_EQ(server_value(), 310);
}

TEST_F(AtomicLongTest, ALostReplyIsIndeterminateAndTheAddIsAppliedOnce) {
  auto& a = contender();
  put(10);
  const auto before = ensemble_.exists_now(kCounter)->version;
  auto& rule = a.faults->on(test::OpKind::set, kCounter).lose_reply_after_apply();
  const auto r = counter(a)->add(1);
  EXPECT_EQ(rule.fired(), 1);
  EXPECT_EQ(r.outcome, CounterOutcome::indeterminate);
  EXPECT_EQ(r.pre, 10);
  EXPECT_EQ(r.post, 11);
  EXPECT_EQ(server_value(), 11);
  EXPECT_EQ(ensemble_.exists_now(kCounter)->version, before + 1) << "written more than once";
}

TEST_F(AtomicLongTest, AWriteThatNeverLeftIsProvedUnappliedAndSentAgain) {
  auto& a = contender();
  put(10);
  auto& rule = a.faults->on(test::OpKind::set, kCounter).fail(Errc::connection_loss);
  const auto r = counter(a)->add(1);
  EXPECT_EQ(rule.fired(), 1);
  ASSERT_TRUE(r.succeeded()) << to_string(r.outcome);
  EXPECT_EQ(server_value(), 11);
}

TEST_F(AtomicLongTest, ALostReplyFollowedByAnotherWriteStaysIndeterminate) {
  auto& a = contender();
  put(10);
  // Our set never reaches the server, but someone else writes before our
  // re-read: nothing proves ours unapplied.
  a.faults->on(test::OpKind::set, kCounter).fail(Errc::connection_loss);
  auto& sync = a.faults->on(test::OpKind::sync, kCounter).before([&](const test::FaultCall&) {
    raw().set(kCounter, long_bytes(50));
  });
  const auto r = counter(a)->add(1);
  EXPECT_EQ(sync.fired(), 1);
  EXPECT_EQ(r.outcome, CounterOutcome::indeterminate);
  EXPECT_EQ(server_value(), 50);
}

TEST_F(AtomicLongTest, InitializeMakesTheNodeOnlyIfMissing) {
  auto& a = contender();
  auto hits = counter(a);
  EXPECT_TRUE(hits->initialize(7));
  EXPECT_FALSE(hits->initialize(8));
  EXPECT_EQ(server_value(), 7);
}

TEST_F(AtomicLongTest, PromotedToLockTakesTheLockAfterTheOptimisticAttemptsAndLeavesNoLockNode) {
  auto& a = contender();
  put(10);
  DistributedAtomicLongOptions options;
  options.retry_policy = std::make_shared<RetryNTimes>(0, std::chrono::milliseconds(1));
  options.promoted = PromotedToLock{kLockPath, std::chrono::seconds(5), nullptr};
  // The optimistic attempt meets a conflict; the locked one does not.
  auto& conflict = a.faults->on(test::OpKind::get, kCounter).after([&](const test::FaultCall&) {
    raw().set(kCounter, long_bytes(20));
  });
  test::Latch locked;
  auto& queued =
      a.faults->on(test::OpKind::create, kLockPath + "/").after([&](const test::FaultCall& call) {
        if (call.error == Errc::ok) locked.open();
      });
  const auto r = counter(a, options)->add(1);
  EXPECT_EQ(conflict.fired(), 1);
  EXPECT_EQ(queued.fired(), 1);
  EXPECT_TRUE(locked.is_open()) << "no lock node was made at " << kLockPath;
  ASSERT_TRUE(r.succeeded()) << to_string(r.outcome);
  EXPECT_EQ(r.pre, 20);
  EXPECT_EQ(server_value(), 21);
  EXPECT_TRUE(test::wait_children(
      raw(), kLockPath, [](const auto& names) { return names.empty(); }, kWait))
      << "the lock node was left behind";
}

TEST_F(AtomicLongTest, PromotedToLockALostReplyUnderTheLockIsIndeterminateAndTheLockIsReleased) {
  auto& a = contender();
  put(10);
  DistributedAtomicLongOptions options;
  options.retry_policy = std::make_shared<RetryNTimes>(0, std::chrono::milliseconds(1));
  options.promoted = PromotedToLock{kLockPath, std::chrono::seconds(5), nullptr};
  a.faults->on(test::OpKind::get, kCounter).after([&](const test::FaultCall&) {
    raw().set(kCounter, long_bytes(20));
  });
  // The optimistic set meets the conflict; the locked one is applied and
  // its reply lost.
  auto& optimistic = a.faults->on(test::OpKind::set, kCounter).after([](const test::FaultCall&) {});
  auto& lost = a.faults->on(test::OpKind::set, kCounter).lose_reply_after_apply();
  const auto r = counter(a, options)->add(1);
  EXPECT_EQ(optimistic.fired(), 1);
  EXPECT_EQ(lost.fired(), 1);
  EXPECT_EQ(r.outcome, CounterOutcome::indeterminate);
  EXPECT_EQ(server_value(), 21);
  EXPECT_TRUE(test::wait_children(
      raw(), kLockPath, [](const auto& names) { return names.empty(); }, kWait));
}

TEST_F(AtomicLongTest, PromotedToLockGivesUpAsAConflictWhenTheLockIsHeldPastItsTime) {
  auto& a = contender();
  auto& b = contender();
  put(10);
  InterProcessMutex other(*b.client, kLockPath);
  ASSERT_TRUE(other.try_acquire_for(kWait));
  DistributedAtomicLongOptions options;
  options.retry_policy = std::make_shared<RetryNTimes>(0, std::chrono::milliseconds(1));
  options.promoted = PromotedToLock{kLockPath, std::chrono::milliseconds(200), nullptr};
  a.faults->on(test::OpKind::get, kCounter).after([&](const test::FaultCall&) {
    raw().set(kCounter, long_bytes(20));
  });
  const auto r = counter(a, options)->add(1);
  EXPECT_EQ(r.outcome, CounterOutcome::conflict);
  EXPECT_EQ(server_value(), 20);
  other.release();
}

}  // namespace
}  // namespace zkr
