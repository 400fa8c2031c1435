// SharedCount on the in-memory ensemble: Curator's 4-byte encoding and seed,
// compare-and-set by version, listeners, the int32 version wrap
// (CURATOR-688), and fresh values after a reconnect and after a new session
// (CURATOR-311/331).
#include <gtest/gtest.h>

#include <condition_variable>
#include <limits>
#include <mutex>
#include <vector>

#include "counter_write.hpp"
#include "lock_fixture.hpp"
#include "zkr/shared_count.hpp"

namespace zkr {
namespace {

const std::string kCount = "/app/generation";

// The values a listener heard, to wait on.
class Heard {
 public:
  void operator()(VersionedCount c) {
    std::lock_guard lock(mutex_);
    values_.push_back(c);
    changed_.notify_all();
  }
  bool wait_for(std::int32_t value) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kWait, [&] {
      for (const auto& c : values_)
        if (c.value == value) return true;
      return false;
    });
  }
  std::vector<VersionedCount> values() {
    std::lock_guard lock(mutex_);
    return values_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<VersionedCount> values_;
};

class SharedCountTest : public LockUnitTest<InterProcessMutex> {
 protected:
  std::unique_ptr<SharedCount> count(Contender& c, std::int32_t seed = 0) {
    auto made = std::make_unique<SharedCount>(*c.client, kCount, seed);
    heard_ = std::make_shared<Heard>();
    made->add_listener([h = heard_](VersionedCount v) { (*h)(v); });
    return made;
  }
  void raw_set(std::int32_t v) { raw().set(kCount, detail::encode_int32(v)); }
  std::int32_t server_value() { return detail::decode_int32(kCount, *ensemble_.data_now(kCount)); }
  std::shared_ptr<Heard> heard_;
};

TEST_F(SharedCountTest, StartMakesTheNodeWithTheSeedAsFourBigEndianBytes) {
  auto& a = contender();
  auto generation = count(a, 0x01020304);
  generation->start();
  EXPECT_EQ(ensemble_.data_now(kCount), std::string("\x01\x02\x03\x04", 4));
  EXPECT_EQ(generation->get_count(), 0x01020304);
  // A second one with another seed finds the node and leaves it.
  auto& b = contender();
  auto other = count(b, 5);
  other->start();
  EXPECT_EQ(other->get_count(), 0x01020304);
  EXPECT_EQ(server_value(), 0x01020304);
  // Its parent is a container: the server removes it once the count goes.
  raw().remove(kCount);
  EXPECT_EQ(ensemble_.reap_containers(), 1u);
  EXPECT_FALSE(ensemble_.exists_now("/app"));
}

TEST_F(SharedCountTest, ANodeOfTheWrongSizeIsRefusedNamingPathAndSize) {
  auto& a = contender();
  raw().create_parents(kCount);
  raw().create(kCount, std::string(8, '\0'));
  auto generation = count(a);
  try {
    generation->start();
    FAIL() << "an 8-byte node was read as a count";
  } catch (const CounterDataError& e) {
    EXPECT_NE(std::string(e.what()).find(kCount), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("8 bytes"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)generation->get_count(), std::logic_error);
}

TEST_F(SharedCountTest, TrySetCountIsACompareAndSetOnTheVersion) {
  auto& a = contender();
  auto generation = count(a, 1);
  generation->start();
  const auto seen = generation->get_versioned_count();
  EXPECT_EQ(generation->try_set_count(seen, 2), CounterOutcome::succeeded);
  EXPECT_EQ(server_value(), 2);
  EXPECT_EQ(generation->get_count(), 2);
  // The version we saw is gone: refused, and the cache now holds the news.
  EXPECT_EQ(generation->try_set_count(seen, 3), CounterOutcome::conflict);
  EXPECT_EQ(server_value(), 2);
  raw_set(7);
  EXPECT_TRUE(heard_->wait_for(7));
  EXPECT_EQ(generation->try_set_count({generation->get_versioned_count().version - 1, 7}, 8),
            CounterOutcome::conflict);
  EXPECT_EQ(generation->try_set_count(generation->get_versioned_count(), 8),
            CounterOutcome::succeeded);
  EXPECT_EQ(server_value(), 8);
  generation->set_count(-4);
  EXPECT_EQ(server_value(), -4);
  EXPECT_EQ(generation->get_count(), -4);
}

TEST_F(SharedCountTest, ListenersHearOtherWritersAndOurOwn) {
  auto& a = contender();
  auto& b = contender();
  auto mine = count(a);
  mine->start();
  auto& heard_by_a = *heard_;
  auto theirs = count(b);
  theirs->start();
  raw_set(11);
  EXPECT_TRUE(heard_by_a.wait_for(11));
  EXPECT_TRUE(heard_->wait_for(11));
  ASSERT_EQ(theirs->try_set_count(theirs->get_versioned_count(), 12), CounterOutcome::succeeded);
  EXPECT_TRUE(heard_by_a.wait_for(12));
  EXPECT_EQ(mine->get_count(), 12);
}

TEST_F(SharedCountTest, KeepsFollowingTheCountAcrossTheInt32VersionWrap) {
  auto& a = contender();
  auto generation = count(a);
  generation->start();
  ASSERT_TRUE(ensemble_.set_version(kCount, std::numeric_limits<Version>::max() - 1));
  raw_set(1);  // version 2^31 - 1
  ASSERT_TRUE(heard_->wait_for(1));
  EXPECT_EQ(generation->get_versioned_count().version, std::numeric_limits<Version>::max());
  raw_set(2);  // the version wraps to -2^31: Curator's cache stopped here
  ASSERT_TRUE(heard_->wait_for(2));
  EXPECT_EQ(generation->get_versioned_count().version, std::numeric_limits<Version>::min());
  EXPECT_EQ(generation->try_set_count(generation->get_versioned_count(), 3),
            CounterOutcome::succeeded);
  raw_set(4);
  EXPECT_TRUE(heard_->wait_for(4));
  EXPECT_EQ(generation->get_count(), 4);
  EXPECT_EQ(generation->get_versioned_count().version, std::numeric_limits<Version>::min() + 2);
}

TEST_F(SharedCountTest, AReconnectReadsTheValueWrittenWhileDisconnected) {
  auto& a = contender();
  auto generation = count(a);
  generation->start();
  ASSERT_TRUE(ensemble_.wait_idle());
  const auto session = session_of(a);
  ensemble_.disconnect(session);
  raw_set(21);
  ensemble_.reconnect(session);
  EXPECT_TRUE(heard_->wait_for(21));
  EXPECT_EQ(generation->get_count(), 21);
}

TEST_F(SharedCountTest, ANewSessionReadsAgainThoughTheOldWatchIsGone) {
  auto& a = contender();
  auto generation = count(a);
  generation->start();
  ASSERT_TRUE(ensemble_.wait_idle());
  const auto epoch = a.client->session_epoch();
  ensemble_.expire(session_of(a));  // our watch ends with the session
  raw_set(31);
  ASSERT_TRUE(heard_->wait_for(31)) << "the value written after the expiry was never read";
  EXPECT_GT(a.client->session_epoch(), epoch);
  raw_set(32);  // and the new session's read set a new watch
  EXPECT_TRUE(heard_->wait_for(32));
  EXPECT_EQ(generation->get_count(), 32);
}

TEST_F(SharedCountTest, ALostReplyToTrySetCountIsIndeterminateAndAppliedOnce) {
  auto& a = contender();
  auto generation = count(a, 1);
  generation->start();
  const auto before = ensemble_.exists_now(kCount)->version;
  auto& rule = a.faults->on(test::OpKind::set, kCount).lose_reply_after_apply();
  EXPECT_EQ(generation->try_set_count(generation->get_versioned_count(), 2),
            CounterOutcome::indeterminate);
  EXPECT_EQ(rule.fired(), 1);
  EXPECT_EQ(server_value(), 2);
  EXPECT_EQ(ensemble_.exists_now(kCount)->version, before + 1);
  EXPECT_TRUE(heard_->wait_for(2));  // the watch tells us what became of it
}

TEST_F(SharedCountTest, AWriteProvedUnappliedIsSentAgain) {
  auto& a = contender();
  auto generation = count(a, 1);
  generation->start();
  auto& rule = a.faults->on(test::OpKind::set, kCount).fail(Errc::connection_loss);
  EXPECT_EQ(generation->try_set_count(generation->get_versioned_count(), 2),
            CounterOutcome::succeeded);
  EXPECT_EQ(rule.fired(), 1);
  EXPECT_EQ(server_value(), 2);
}

}  // namespace
}  // namespace zkr
