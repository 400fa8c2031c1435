// LockGuard: a grant owned by an object, not a thread, on the
// in-memory ensemble. It moves between threads with its grant, is given back
// from whichever thread destroys it, is never the calling thread's hold, and
// outlives the lock object (and the Client) safely.
#include <gtest/gtest.h>

#include <future>
#include <stop_token>
#include <thread>

#include "lock_fixture.hpp"
#include "zkr/read_write_lock.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;

template <class Lock>
class LockGuardTest : public LockUnitTest<Lock> {
 protected:
  // Another contender takes the lock at once: it is free.
  bool free_now() {
    auto other = this->lock_for(this->contender());
    const bool granted = other->try_acquire();
    if (granted) other->release();
    return granted;
  }
};

TYPED_TEST_SUITE(LockGuardTest, LockTypes);

// Taken on one thread, used on a second, given back by a third: as a
// coroutine that resumes on another thread of a pool would.
TYPED_TEST(LockGuardTest, TheGrantTravelsWithTheGuardAcrossThreads) {
  auto& c = this->contender();
  auto lock = this->lock_for(c);
  LockGuard guard =
      std::async(std::launch::async, [&] { return lock->try_acquire_guard_for(kWait); }).get();
  ASSERT_TRUE(guard);
  const Grant grant = guard.grant();
  EXPECT_TRUE(grant.held());
  EXPECT_FALSE(this->free_now());
  const auto token = std::async(std::launch::async, [held = std::move(guard)]() mutable {
                       const auto t = held.grant().fencing_token();
                       EXPECT_TRUE(held.grant().held());
                       return t;  // the guard goes with this thread's lambda
                     }).get();
  EXPECT_EQ(token, grant.fencing_token());
  EXPECT_TRUE(grant.released());
  EXPECT_TRUE(this->no_ephemerals_of(c));
  EXPECT_TRUE(this->free_now());
}

TYPED_TEST(LockGuardTest, MovingMovesTheGrantAndAssigningGivesTheOldOneBack) {
  auto& c = this->contender();
  auto first_lock = this->lock_for(c);
  LockGuard a = first_lock->acquire_guard();
  ASSERT_TRUE(a);
  const Grant first = a.grant();
  LockGuard b(std::move(a));
  EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move): moved-from is empty, by contract
  EXPECT_FALSE(a.unlock());
  EXPECT_THROW((void)a.grant(), std::logic_error);
  EXPECT_TRUE(b);
  EXPECT_TRUE(first.held());
  // A guard of another key, assigned over b: b's grant goes back first.
  InterProcessMutex other(*c.client, kDir + "-other");
  LockGuard second = other.acquire_guard();
  const Grant second_lease = second.grant();
  b = std::move(second);
  EXPECT_TRUE(first.released());
  EXPECT_TRUE(second_lease.held());
  EXPECT_TRUE(b.unlock());
  EXPECT_TRUE(second_lease.released());
  EXPECT_FALSE(b.unlock());
  EXPECT_TRUE(this->no_ephemerals_of(c));
}

// The guard's grant is not the thread's: the lock's own release() does not
// give it back, and a guard asked by the same thread waits behind it.
TYPED_TEST(LockGuardTest, AGuardsGrantIsNotTheCallingThreadsHold) {
  auto& c = this->contender();
  auto lock = this->lock_for(c);
  LockGuard guard = lock->acquire_guard();
  ASSERT_TRUE(guard);
  EXPECT_FALSE(lock->release());  // nothing of this thread's to give back
  EXPECT_TRUE(guard.grant().held());
  EXPECT_FALSE(lock->try_acquire_guard_for(100ms));  // queues behind the first, times out
  EXPECT_EQ(this->lock_nodes().size(), 1u);          // and leaves nothing behind
  EXPECT_TRUE(guard.unlock());
  EXPECT_TRUE(this->free_now());
}

TYPED_TEST(LockGuardTest, AStoppedGuardAcquireIsEmptyAndLeavesNothing) {
  auto held = this->lock_for(this->contender());
  ASSERT_TRUE(held->try_acquire());
  auto& w = this->contender();
  auto waiting = this->lock_for(w);
  std::stop_source stop;
  std::promise<bool> owned;
  std::jthread waiter([&] { owned.set_value(bool(waiting->acquire_guard(stop.get_token()))); });
  ASSERT_TRUE(this->wait_queue_length(2));
  stop.request_stop();
  EXPECT_FALSE(owned.get_future().get());
  EXPECT_TRUE(this->no_ephemerals_of(w));
  EXPECT_TRUE(held->release());
}

// The lock object may go first; the guard still gives its grant back.
TYPED_TEST(LockGuardTest, AGuardOutlivesItsLockObject) {
  auto& c = this->contender();
  LockGuard guard;
  {
    auto lock = this->lock_for(c);
    guard = lock->acquire_guard();
  }
  ASSERT_TRUE(guard);
  EXPECT_TRUE(guard.grant().held());
  EXPECT_FALSE(this->free_now());
  EXPECT_TRUE(guard.unlock());
  EXPECT_TRUE(this->free_now());
}

// And the Client too: its session took the node; the guard only marks the
// grant released.
TYPED_TEST(LockGuardTest, AGuardOutlivesItsClient) {
  auto& c = this->contender();
  LockGuard guard;
  {
    auto lock = this->lock_for(c);
    guard = lock->acquire_guard();
  }
  ASSERT_TRUE(guard);
  const Grant grant = guard.grant();
  c.client.reset();
  EXPECT_TRUE(this->free_now());  // the closed session's node went with it
  EXPECT_TRUE(guard.unlock());
  EXPECT_TRUE(grant.released() || grant.lost());
}

class ReadWriteGuardTest : public LockUnitTest<InterProcessMutex> {};

TEST_F(ReadWriteGuardTest, AWriteGuardExcludesReadersUntilAnotherThreadGivesItBack) {
  auto& c = contender();
  InterProcessReadWriteLock lock(*c.client, kDir);
  LockGuard writing = lock.write_lock().acquire_guard();
  ASSERT_TRUE(writing);
  InterProcessReadWriteLock other(*contender().client, kDir);
  EXPECT_FALSE(other.read_lock().try_acquire_for(100ms));
  std::jthread([w = std::move(writing)]() mutable { EXPECT_TRUE(w.unlock()); }).join();
  EXPECT_TRUE(other.read_lock().try_acquire_for(kWait));
  // Readers share, guards or not.
  LockGuard reading = lock.read_lock().try_acquire_guard_for(kWait);
  EXPECT_TRUE(reading);
  EXPECT_TRUE(other.read_lock().release());
}

}  // namespace
}  // namespace zkr
