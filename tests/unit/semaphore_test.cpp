// InterProcessSemaphoreV2 and InterProcessSemaphoreMutex on the in-memory
// ensemble: the bound, all-or-none, Curator's layout, a SharedCount limit,
// arrival order, leases released from any thread, no mix with the lock
// queues (at the grant too), and threads sharing a InterProcessSemaphoreMutex.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "lock_fixture.hpp"
#include "zkr/read_write_lock.hpp"
#include "zkr/semaphore.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

const std::string kLeases = kDir + "/leases";
const std::string kLocks = kDir + "/locks";

class SemaphoreTest : public LockUnitTest<InterProcessMutex> {
 protected:
  std::unique_ptr<InterProcessSemaphoreV2> semaphore_for(Contender& c, SemaphoreLimit limit) {
    return std::make_unique<InterProcessSemaphoreV2>(*c.client, kDir, std::move(limit));
  }
  std::vector<std::string> leases() { return ensemble_.children_now(kLeases); }
  bool wait_leases(std::size_t n) {
    return test::wait_children(
        raw(), kLeases, [n](const auto& names) { return names.size() == n; }, kWait);
  }
  bool wait_locks_queue(std::size_t n) {
    return test::wait_children(
        raw(), kLocks, [n](const auto& names) { return names.size() == n; }, kWait);
  }
  static std::string big_endian(std::int32_t value) {
    const auto v = static_cast<std::uint32_t>(value);
    return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
            static_cast<char>(v)};
  }
};

TEST_F(SemaphoreTest, GrantsUpToTheLimitThenWaitsForARelease) {
  auto& a = contender();
  auto& b = contender();
  auto sa = semaphore_for(a, SemaphoreLimit::fixed(3));
  auto sb = semaphore_for(b, SemaphoreLimit::fixed(3));
  auto two = sa->try_acquire_for(2, kWait);
  ASSERT_EQ(two.size(), 2u);
  auto one = sb->try_acquire_for(1, kWait);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_TRUE(sb->try_acquire_for(1, 50ms).empty());
  EXPECT_EQ(leases().size(), 3u);  // the refused contender left nothing
  EXPECT_TRUE(ensemble_.children_now(kLocks).empty()) << "the internal mutex is held after a grant";
  auto waiter =
      std::async(std::launch::async, [&] { return sb->try_acquire_for(1, kWait).size(); });
  ASSERT_TRUE(wait_leases(4));
  EXPECT_EQ(waiter.wait_for(0s), std::future_status::timeout);
  EXPECT_TRUE(two[0].release());
  EXPECT_FALSE(two[0].release());
  EXPECT_EQ(waiter.get(), 1u);
}

TEST_F(SemaphoreTest, CuratorsLayoutAndTokens) {
  auto& a = contender();
  auto s = semaphore_for(a, SemaphoreLimit::fixed(2));
  auto held = s->try_acquire_for(2, kWait);
  ASSERT_EQ(held.size(), 2u);
  const std::regex lease(kLeases + "/_c_[0-9a-f]{8}-[0-9a-f-]{27}-lease-[0-9]{10}");
  for (const auto& h : held)
    EXPECT_TRUE(std::regex_match(h.grant().node_path(), lease)) << h.grant().node_path();
  EXPECT_LT(held[0].grant().fencing_token(), held[1].grant().fencing_token());
  EXPECT_EQ(s->participant_nodes(),
            (std::vector<std::string>{held[0].grant().node_path(), held[1].grant().node_path()}));
  auto children = ensemble_.children_now(kDir);
  EXPECT_EQ(children, (std::vector<std::string>{"leases", "locks"}));
  held.clear();  // released as they go
  ASSERT_TRUE(wait_leases(0));
}

TEST_F(SemaphoreTest, AllOrNoneGivesBackWhatItGotByTheDeadline) {
  auto& a = contender();
  auto& b = contender();
  auto sa = semaphore_for(a, SemaphoreLimit::fixed(4));
  auto sb = semaphore_for(b, SemaphoreLimit::fixed(4));
  auto three = sa->try_acquire_for(3, kWait);
  ASSERT_EQ(three.size(), 3u);
  EXPECT_TRUE(sb->try_acquire_for(2, 100ms).empty());
  ASSERT_TRUE(wait_leases(3)) << "the one lease granted before the deadline was kept";
  EXPECT_TRUE(ensemble_.ephemerals_of(session_of(b)).empty());
  EXPECT_THROW((void)sb->try_acquire_for(5, kWait), std::invalid_argument);
  EXPECT_THROW((void)sb->try_acquire_for(0, kWait), std::invalid_argument);
}

// The internal mutex queues contenders: first come, first served.
TEST_F(SemaphoreTest, WaitersAreServedInArrivalOrder) {
  auto& a = contender();
  auto& b = contender();
  auto& c = contender();
  auto sa = semaphore_for(a, SemaphoreLimit::fixed(1));
  auto sb = semaphore_for(b, SemaphoreLimit::fixed(1));
  auto sc = semaphore_for(c, SemaphoreLimit::fixed(1));
  auto held = sa->try_acquire_for(1, kWait);
  ASSERT_EQ(held.size(), 1u);
  std::atomic<int> order{0};
  auto first = std::async(std::launch::async, [&] {
    auto l = sb->try_acquire_for(1, kWait);
    return l.empty() ? -1 : order++;
  });
  ASSERT_TRUE(wait_leases(2));  // b holds the internal mutex and waits for the count
  auto second = std::async(std::launch::async, [&] {
    auto l = sc->try_acquire_for(1, kWait);
    return l.empty() ? -1 : order++;
  });
  ASSERT_TRUE(wait_locks_queue(2));  // c waits for the internal mutex
  held.clear();
  EXPECT_EQ(first.get(), 0);
  EXPECT_EQ(second.get(), 1);
}

TEST_F(SemaphoreTest, TheLimitCanComeFromASharedCount) {
  const std::string count = "/counts/gpu";
  raw().create_parents(count);
  raw().create(count, big_endian(2));
  auto& a = contender();
  auto& b = contender();
  auto sa = semaphore_for(a, SemaphoreLimit::shared_count(count));
  auto sb = semaphore_for(b, SemaphoreLimit::shared_count(count));
  auto two = sa->try_acquire_for(2, kWait);
  ASSERT_EQ(two.size(), 2u);
  auto waiter =
      std::async(std::launch::async, [&] { return sb->try_acquire_for(1, kWait).size(); });
  ASSERT_TRUE(wait_leases(3));
  EXPECT_EQ(waiter.wait_for(0s), std::future_status::timeout);
  raw().set(count, big_endian(3));  // the watch on the count wakes the waiter
  EXPECT_EQ(waiter.get(), 1u);
  EXPECT_EQ(two.size(), 2u);
}

TEST_F(SemaphoreTest, ABadSharedCountIsANamedError) {
  const std::string count = "/counts/bad";
  raw().create_parents(count);
  raw().create(count, "abc");
  auto& a = contender();
  auto s = semaphore_for(a, SemaphoreLimit::shared_count(count));
  try {
    (void)s->try_acquire_for(1, kWait);
    ADD_FAILURE() << "a 3-byte count was taken";
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::bad_arguments);
    EXPECT_EQ(e.path(), count);
    EXPECT_THAT(e.what(), HasSubstr("4 bytes"));
  }
  raw().set(count, big_endian(0));
  EXPECT_THROW((void)s->try_acquire_for(1, kWait), KeeperError);
  EXPECT_TRUE(ensemble_.ephemerals_of(session_of(a)).empty());
  EXPECT_THROW(SemaphoreLimit::fixed(0), std::invalid_argument);
}

TEST_F(SemaphoreTest, ALeaseIsReleasedFromAnyThreadAndSaysWhenLost) {
  auto& a = contender();
  auto s = semaphore_for(a, SemaphoreLimit::fixed(2));
  auto held = s->try_acquire_for(2, kWait);
  ASSERT_EQ(held.size(), 2u);
  std::thread([&] { EXPECT_TRUE(held[0].release()); }).join();
  ASSERT_TRUE(wait_leases(1));
  test::Latch lost;
  held[1].grant().on_lost([&](LostReason why) {
    EXPECT_EQ(why, LostReason::node_deleted);
    lost.open();
  });
  raw().remove(held[1].grant().node_path());
  ASSERT_TRUE(lost.wait(kWait));
  EXPECT_TRUE(held[1].grant().lost());
}

// No silent mix, both ways round.
TEST_F(SemaphoreTest, LockQueueNodesOnThePathRefuseIt) {
  auto& a = contender();
  auto& b = contender();
  InterProcessMutex mutex(*a.client, kDir);
  ASSERT_TRUE(mutex.try_acquire());
  auto s = semaphore_for(b, SemaphoreLimit::fixed(2));
  try {
    (void)s->try_acquire_for(1, kWait);
    ADD_FAILURE() << "granted beside a mutex";
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::foreign_lock_protocol);
    EXPECT_EQ(e.path(), kDir);
    EXPECT_THAT(e.what(), HasSubstr("a mutex, InterProcessMutex"));
  }
  EXPECT_TRUE(ensemble_.ephemerals_of(session_of(b)).empty());
  mutex.release();
  const std::string other = "/locks/other";
  InterProcessReadWriteLock rw(*a.client, other);
  ASSERT_TRUE(rw.read_lock().try_acquire());
  InterProcessSemaphoreV2 beside_rw(*b.client, other, SemaphoreLimit::fixed(2));
  EXPECT_THROW((void)beside_rw.try_acquire_for(1, kWait), KeeperError);
  EXPECT_TRUE(ensemble_.ephemerals_of(session_of(b)).empty());
  rw.read_lock().release();
}

TEST_F(SemaphoreTest, TheLockQueuesRefuseASemaphorePath) {
  auto& a = contender();
  auto& b = contender();
  auto s = semaphore_for(a, SemaphoreLimit::fixed(2));
  auto held = s->try_acquire_for(1, kWait);
  ASSERT_EQ(held.size(), 1u);
  InterProcessMutex mutex(*b.client, kDir);
  InterProcessReadWriteLock rw(*b.client, kDir);
  EXPECT_THROW((void)mutex.try_acquire(), KeeperError);
  EXPECT_THROW((void)rw.write_lock().try_acquire(), KeeperError);
  EXPECT_TRUE(ensemble_.ephemerals_of(session_of(b)).empty());
}

TEST_F(SemaphoreTest, CuratorSemaphoreMutexExcludesAndAnyThreadReleases) {
  auto& a = contender();
  auto& b = contender();
  InterProcessSemaphoreMutex ma(*a.client, kDir);
  InterProcessSemaphoreMutex mb(*b.client, kDir);
  ASSERT_TRUE(ma.try_acquire());
  EXPECT_FALSE(mb.try_acquire());
  EXPECT_TRUE(ma.is_acquired_in_this_process());
  EXPECT_EQ(node_name(parent_path(ma.grant().node_path())), "leases");
  std::thread([&] { EXPECT_TRUE(ma.release()); }).join();
  EXPECT_FALSE(ma.release());
  EXPECT_THROW((void)ma.grant(), std::logic_error);
  ASSERT_TRUE(mb.try_acquire_for(kWait));
  EXPECT_TRUE(mb.release());
  {
    std::scoped_lock hold(ma);  // Lockable
    EXPECT_FALSE(mb.try_acquire());
  }
  EXPECT_TRUE(mb.try_acquire());
  EXPECT_TRUE(mb.release());
}

// A mutex of another protocol that takes the path while we wait is seen by
// the listing we would be granted on: refused, not held beside it.
TEST_F(SemaphoreTest, AForeignMutexArrivingWhileWeWaitRefusesTheGrant) {
  auto& a = contender();
  auto& b = contender();
  auto sa = semaphore_for(a, SemaphoreLimit::fixed(1));
  auto sb = semaphore_for(b, SemaphoreLimit::fixed(1));
  auto held = sa->try_acquire_for(1, kWait);
  ASSERT_EQ(held.size(), 1u);
  auto waiter = std::async(std::launch::async, [&] { return sb->try_acquire_for(1, kWait); });
  ASSERT_TRUE(wait_leases(2));  // B waits behind A's lease
  // Curator's InterProcessMutex on the same path, as Java would make it.
  const auto foreign = raw().create(kDir + "/_c_8c3a3b7e-0000-4000-8000-00000000f0f0-lock-", "",
                                    CreateMode::ephemeral_sequential);
  EXPECT_TRUE(held[0].release());
  try {
    const auto granted = waiter.get();
    ADD_FAILURE() << "granted " << granted.size() << " lease(s) beside " << foreign.path;
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::foreign_lock_protocol);
    EXPECT_THAT(e.what(), HasSubstr("a mutex, InterProcessMutex"));
  }
  EXPECT_TRUE(wait_leases(0));
  EXPECT_TRUE(ensemble_.ephemerals_of(session_of(b)).empty());
}

// The same race at its narrowest: the foreign mutex and the release land
// while our look is in flight, after its listing of the semaphore's path was
// sent and before its listing of the leases was. The grant is decided on the
// leases' listing, so the path's must be read after it: a listing of the
// path taken before then would miss a node that was there at the grant.
TEST_F(SemaphoreTest, AForeignMutexArrivingMidLookRefusesTheGrant) {
  auto& a = contender();
  auto& b = contender();
  auto sa = semaphore_for(a, SemaphoreLimit::fixed(1));
  auto sb = semaphore_for(b, SemaphoreLimit::fixed(1));
  auto held = sa->try_acquire_for(1, kWait);
  ASSERT_EQ(held.size(), 1u);
  std::string foreign;
  b.faults->on(test::OpKind::children, kLeases).before([&](const test::FaultCall&) {
    foreign = raw()
                  .create(kDir + "/_c_8c3a3b7e-0000-4000-8000-00000000f0f0-lock-", "",
                          CreateMode::ephemeral_sequential)
                  .path;
    EXPECT_TRUE(held[0].release());
  });
  try {
    const auto granted = sb->try_acquire_for(1, kWait);
    ADD_FAILURE() << "granted " << granted.size() << " lease(s) beside " << foreign;
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::foreign_lock_protocol);
  }
  EXPECT_FALSE(foreign.empty()) << "the look never listed the leases";
  EXPECT_TRUE(wait_leases(0));
  EXPECT_TRUE(ensemble_.ephemerals_of(session_of(b)).empty());
}

// Threads sharing one InterProcessSemaphoreMutex: a hold lost without a release,
// then another thread's grant. The first thread's release gives back its own
// (lost) grant, never the new holder's.
TEST_F(SemaphoreTest, CuratorSemaphoreMutexReleasesTheOldestGrantFirst) {
  auto& a = contender();
  auto& b = contender();
  InterProcessSemaphoreMutex shared(*a.client, kDir);
  InterProcessSemaphoreMutex other(*b.client, kDir);
  ASSERT_TRUE(shared.try_acquire());  // thread 1
  const Grant first = shared.grant();
  test::Latch lost;
  first.on_lost([&](LostReason) { lost.open(); });
  raw().remove(first.node_path());
  ASSERT_TRUE(lost.wait(kWait));
  Grant second = first;
  std::thread([&] {  // thread 2
    ASSERT_TRUE(shared.try_acquire_for(kWait));
    second = shared.grant();
  })
      .join();
  ASSERT_NE(second.node_path(), first.node_path());
  EXPECT_TRUE(shared.release());  // thread 1 gives its grant back
  EXPECT_TRUE(ensemble_.exists_now(second.node_path())) << "thread 1 released thread 2's grant";
  EXPECT_FALSE(second.released());
  EXPECT_FALSE(second.lost());
  EXPECT_TRUE(shared.is_acquired_in_this_process());
  EXPECT_FALSE(other.try_acquire()) << "granted while thread 2 holds";
  EXPECT_TRUE(shared.release());  // thread 2's
  EXPECT_FALSE(shared.release());
  EXPECT_TRUE(other.try_acquire_for(kWait));
  EXPECT_TRUE(other.release());
}

// A waiter queues its lease node while it holds the internal lock; the lease
// is granted only while that lock is still held. Its node deleted by someone
// (a lost hold): the lease node goes at once, and the waiter queues again
// from the internal lock, still bounded by the limit.
TEST_F(SemaphoreTest, AWaiterThatLosesTheInternalLockWithdrawsItsLeaseAndQueuesAgain) {
  auto& a = contender();
  auto& b = contender();
  auto sa = semaphore_for(a, SemaphoreLimit::fixed(1));
  auto sb = semaphore_for(b, SemaphoreLimit::fixed(1));
  auto held = sa->try_acquire_for(1, kWait);
  ASSERT_EQ(held.size(), 1u);
  auto waiter = std::async(std::launch::async, [&] { return sb->try_acquire_for(1, 4 * kWait); });
  ASSERT_TRUE(wait_leases(2));  // B waits behind A's lease, holding the internal lock
  const auto first_lease = [&] {
    for (const auto& name : leases())
      if (kLeases + "/" + name != held[0].grant().node_path()) return kLeases + "/" + name;
    return std::string();
  }();
  const auto locks = ensemble_.children_now(kLocks);
  ASSERT_EQ(locks.size(), 1u);
  raw().remove(kLocks + "/" + locks[0]);  // B's hold of the internal lock is lost
  // B withdraws its lease node and takes the internal lock again.
  ASSERT_TRUE(test::wait_children(
      raw(), kLeases,
      [&](const auto& names) {
        return names.size() == 2 &&
               std::find(names.begin(), names.end(), first_lease.substr(kLeases.size() + 1)) ==
                   names.end();
      },
      kWait))
      << "B's first lease node " << first_lease << " stayed";
  ASSERT_TRUE(wait_locks_queue(1));
  EXPECT_EQ(waiter.wait_for(0s), std::future_status::timeout) << "granted beside A";
  EXPECT_TRUE(held[0].release());
  const auto granted = waiter.get();
  ASSERT_EQ(granted.size(), 1u);
  EXPECT_NE(granted[0].grant().node_path(), first_lease);
  EXPECT_EQ(leases().size(), 1u);
}

TEST_F(SemaphoreTest, PathLongEnoughForItsNodes) {
  auto& a = contender();
  const std::string longest = "/" + std::string(kMaxSemaphorePathLength - 1, 's');
  EXPECT_NO_THROW(InterProcessSemaphoreV2(*a.client, longest, SemaphoreLimit::fixed(1)));
  EXPECT_THROW(InterProcessSemaphoreV2(*a.client, longest + "s", SemaphoreLimit::fixed(1)),
               std::invalid_argument);
}

}  // namespace
}  // namespace zkr
