// Relative timeouts saturate: a timeout too long for the clock (up to
// duration::max()) waits as long as it takes instead of giving up at once,
// in every timed form; short and negative ones behave as before.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <future>
#include <limits>
#include <string>
#include <vector>

#include "lock_fixture.hpp"
#include "zkr/deadline.hpp"
#include "zkr/lock_guard.hpp"
#include "zkr/multi_lock.hpp"
#include "zkr/read_write_lock.hpp"
#include "zkr/semaphore.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::steady_clock;
using std::chrono::years;

const auto kEnd = steady_clock::time_point::max();
const auto kThousandYears = std::chrono::duration_cast<milliseconds>(years(1000));

// ---- The helper itself, at a fixed "now".

TEST(DeadlineAfter, ShortTimeoutsAreExactAndNonPositiveOnesAreNow) {
  const steady_clock::time_point now(std::chrono::nanoseconds(123'456'789'000));
  EXPECT_EQ(detail::deadline_after(5ms, now), now + 5ms);
  EXPECT_EQ(detail::deadline_after(1500us, now), now + 1500us);
  EXPECT_EQ(detail::deadline_after(hours(24 * 365 * 200), now), now + hours(24 * 365 * 200));
  EXPECT_EQ(detail::deadline_after(std::chrono::duration<double>(0.25), now), now + 250ms);
  EXPECT_EQ(detail::deadline_after(0ms, now), now);
  EXPECT_EQ(detail::deadline_after(-5ms, now), now);
  EXPECT_EQ(detail::deadline_after(milliseconds::min(), now), now);
  EXPECT_EQ(detail::deadline_after(hours::min(), now), now);
  EXPECT_EQ(detail::deadline_after(
                std::chrono::duration<double>(std::numeric_limits<double>::quiet_NaN()), now),
            now);
}

TEST(DeadlineAfter, TimeoutsTooLongForTheClockHaveNoDeadline) {
  const steady_clock::time_point now(std::chrono::nanoseconds(123'456'789'000));
  EXPECT_EQ(detail::deadline_after(milliseconds::max(), now), kEnd);
  EXPECT_EQ(detail::deadline_after(hours::max(), now), kEnd);
  EXPECT_EQ(detail::deadline_after(years(1000), now), kEnd);
  EXPECT_EQ(detail::deadline_after(kThousandYears, now), kEnd);
  EXPECT_EQ(detail::deadline_after(std::chrono::nanoseconds::max(), now), kEnd);
  EXPECT_EQ(detail::deadline_after(std::chrono::duration<double>::max(), now), kEnd);
  EXPECT_EQ(detail::deadline_after(std::chrono::duration<std::uint64_t>::max(), now), kEnd);
  // From late in the clock's range, a shorter timeout saturates too.
  const auto late = kEnd - hours(1);
  EXPECT_EQ(detail::deadline_after(hours(2), late), kEnd);
  EXPECT_EQ(detail::deadline_after(30min, late), late + 30min);
  // And against the real clock.
  EXPECT_EQ(deadline_after(milliseconds::max()), kEnd);
  EXPECT_GE(deadline_after(10ms), steady_clock::now());
}

TEST(DeadlineAfter, LaterBySaturatesAtTheEnd) {
  const steady_clock::time_point t(1s);
  EXPECT_EQ(detail::later_by(t, 2s), t + 2s);
  EXPECT_EQ(detail::later_by(t, -2s), t);
  EXPECT_EQ(detail::later_by(kEnd, 2s), kEnd);
  EXPECT_EQ(detail::later_by(kEnd - 1s, 2s), kEnd);
}

TEST(DeadlineAt, AnyClockAnyDurationNeverWraps) {
  const auto before = steady_clock::now();
  EXPECT_EQ(deadline_at(kEnd), kEnd);
  EXPECT_EQ(deadline_at(std::chrono::time_point<steady_clock, hours>::max()), kEnd);
  // system_clock's end is some 230 years away: far, but within reach.
  EXPECT_GT(deadline_at(std::chrono::system_clock::time_point::max()), before + years(200));
  EXPECT_EQ(deadline_at(std::chrono::time_point<std::chrono::system_clock, hours>::max()), kEnd);
  // Past: now, not the past time (and no wrap to the far future).
  const auto past = deadline_at(steady_clock::time_point::min());
  const auto system_past = deadline_at(std::chrono::system_clock::time_point::min());
  const auto after = steady_clock::now();
  EXPECT_GE(past, before);
  EXPECT_LE(past, after);
  EXPECT_GE(system_past, before);
  EXPECT_LE(system_past, after);
  const auto soon = deadline_at(std::chrono::system_clock::now() + 1h);
  EXPECT_GT(soon, before + 59min);
  EXPECT_LT(soon, steady_clock::now() + 61min);
  const auto exact = steady_clock::now() + 5s;
  EXPECT_EQ(deadline_at(exact), exact);
}

// ---- Every timed form, on a lock another holder has: it waits, and gets it
// when the holder lets go, rather than returning "not acquired" at once.

class TimeoutSaturationTest : public LockUnitTest<InterProcessMutex> {
 protected:
  // Holds kDir's mutex, runs `waiter` on another thread, waits until it has
  // queued, lets go, and returns what the waiter returned. A waiter that got
  // the lock gives it back through `release`, on its own thread (a mutex is
  // the holding thread's).
  bool waits_for_the_holder(const std::function<bool()>& waiter,
                            const std::function<void()>& release) {
    auto holder = lock_for(contender());
    EXPECT_TRUE(holder->try_acquire_for(kWait));
    auto got = std::async(std::launch::async, [&] {
      const bool granted = waiter();
      if (granted) release();
      return granted;
    });
    EXPECT_TRUE(wait_queue_length(2)) << "the waiter never queued";
    holder->release();
    EXPECT_EQ(got.wait_for(kWait), std::future_status::ready);
    return got.get();
  }
};

TEST_F(TimeoutSaturationTest, TryAcquireForWaitsAtMaxAndAtAThousandYears) {
  auto& c = contender();
  auto mutex = lock_for(c);
  for (const auto timeout : {milliseconds::max(), kThousandYears}) {
    SCOPED_TRACE(timeout.count());
    EXPECT_TRUE(waits_for_the_holder([&] { return mutex->try_acquire_for(timeout); },
                                     [&] { mutex->release(); }));
  }
  NonReentrantMutex semaphore_mutex(*c.client, kDir);
  EXPECT_TRUE(
      waits_for_the_holder([&] { return semaphore_mutex.try_acquire_for(milliseconds::max()); },
                           [&] { semaphore_mutex.release(); }));
}

TEST_F(TimeoutSaturationTest, TryLockForAndUntilWaitAtHugeValues) {
  auto mutex = lock_for(contender());
  const std::vector<std::function<bool()>> forms{
      [&] { return mutex->try_lock_for(hours::max()); },
      [&] { return mutex->try_lock_for(years(1000)); },
      [&] { return mutex->try_lock_for(milliseconds::max()); },
      [&] { return mutex->try_lock_for(std::chrono::duration<double>::max()); },
      [&] { return mutex->try_lock_until(kEnd); },
      [&] { return mutex->try_lock_until(std::chrono::system_clock::time_point::max()); },
      [&] { return mutex->try_lock_until(std::chrono::time_point<steady_clock, hours>::max()); },
  };
  for (std::size_t i = 0; i < forms.size(); ++i) {
    SCOPED_TRACE("form " + std::to_string(i));
    EXPECT_TRUE(waits_for_the_holder(forms[i], [&] { mutex->unlock(); }));
  }
}

TEST_F(TimeoutSaturationTest, GuardFormWaitsAtMax) {
  auto mutex = lock_for(contender());
  LockGuard guard;
  EXPECT_TRUE(waits_for_the_holder(
      [&] {
        guard = mutex->try_acquire_guard_for(milliseconds::max());
        return static_cast<bool>(guard);
      },
      [] {}));
  EXPECT_TRUE(guard.unlock());
}

TEST_F(TimeoutSaturationTest, ReadWriteSidesAndMultiLockWaitAtMax) {
  auto& c = contender();
  // The read/write lock on a path of its own, held by another writer.
  const std::string rw_path = "/locks/rw";
  InterProcessReadWriteLock holder(*contender().client, rw_path);
  InterProcessReadWriteLock rw(*c.client, rw_path);
  for (const bool write : {true, false}) {
    SCOPED_TRACE(write ? "write" : "read");
    ASSERT_TRUE(holder.write_lock().try_acquire());
    auto got = std::async(std::launch::async, [&] {
      auto& side = write ? rw.write_lock() : rw.read_lock();
      const bool granted =
          write ? side.try_lock_for(hours::max()) : side.try_lock_shared_for(milliseconds::max());
      return granted && side.release();  // the holding thread's to give back
    });
    ASSERT_TRUE(test::wait_children(
        raw(), rw_path, [](const auto& names) { return names.size() == 2; }, kWait));
    holder.write_lock().release();
    ASSERT_EQ(got.wait_for(kWait), std::future_status::ready);
    EXPECT_TRUE(got.get());
  }
  MultiLock both(*c.client, {"/locks/other", kDir});
  EXPECT_TRUE(waits_for_the_holder([&] { return both.try_acquire_for(milliseconds::max()); },
                                   [&] { both.release(); }));
}

TEST_F(TimeoutSaturationTest, SemaphoreTryAcquireWaitsAtMaxAndAtAThousandYears) {
  const std::string leases = kDir + "/leases";
  auto& a = contender();
  auto& b = contender();
  InterProcessSemaphoreV2 holder(*a.client, kDir, SemaphoreLimit::fixed(1));
  InterProcessSemaphoreV2 waiter(*b.client, kDir, SemaphoreLimit::fixed(1));
  for (const auto timeout : {milliseconds::max(), kThousandYears}) {
    SCOPED_TRACE(timeout.count());
    auto held = holder.try_acquire_for(1, kWait);
    ASSERT_EQ(held.size(), 1u);
    auto got = std::async(std::launch::async, [&] { return waiter.try_acquire_for(1, timeout); });
    // The waiter's lease node beside the holder's: it is waiting for a lease.
    ASSERT_TRUE(test::wait_children(
        raw(), leases, [](const auto& names) { return names.size() == 2; }, kWait));
    held.clear();  // gives the lease back
    ASSERT_EQ(got.wait_for(kWait), std::future_status::ready);
    EXPECT_EQ(got.get().size(), 1u);
  }
}

// A reply that comes later is waited for, however long the timeout.
TEST(AwaitReply, WaitsAtMaxForAReplyThatComesLater) {
  for (const auto timeout : {milliseconds::max(), kThousandYears}) {
    SCOPED_TRACE(timeout.count());
    std::promise<Result<int>> promise;
    auto waiting = std::async(std::launch::async, [&, future = promise.get_future()]() mutable {
      return await_reply(std::move(future), timeout, "/x");
    });
    // A waiter that gave up at once would be done long before this.
    EXPECT_EQ(waiting.wait_for(200ms), std::future_status::timeout);
    promise.set_value(Result<int>(7));
    ASSERT_EQ(waiting.wait_for(kWait), std::future_status::ready);
    const auto reply = waiting.get();
    ASSERT_TRUE(reply.ok()) << errc_name(reply.error());
    EXPECT_EQ(reply.value(), 7);
  }
}

// ---- Short timeouts are as before.

TEST_F(TimeoutSaturationTest, ShortAndNegativeTimeoutsAreUnchanged) {
  auto holder = lock_for(contender());
  ASSERT_TRUE(holder->try_acquire());
  auto mutex = lock_for(contender());
  auto start = steady_clock::now();
  EXPECT_FALSE(mutex->try_acquire_for(100ms));
  EXPECT_GE(steady_clock::now() - start, 100ms);
  start = steady_clock::now();
  EXPECT_FALSE(mutex->try_lock_for(std::chrono::duration<double>(0.1)));
  EXPECT_GE(steady_clock::now() - start, 100ms);
  EXPECT_FALSE(mutex->try_acquire_for(-5ms));
  EXPECT_FALSE(mutex->try_lock_for(hours::min()));
  EXPECT_FALSE(mutex->try_lock_until(steady_clock::time_point::min()));
  EXPECT_FALSE(static_cast<bool>(mutex->try_acquire_guard_for(50ms)));
  EXPECT_EQ(queue().size(), 1u);  // the refused ones left nothing
  holder->release();
  EXPECT_TRUE(mutex->try_acquire_for(0ms));  // one attempt, free: granted
  mutex->release();
}

}  // namespace
}  // namespace zkr
