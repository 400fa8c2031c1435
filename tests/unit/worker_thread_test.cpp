// The timer thread that async acquires wait on: calls run at their time, in
// order, on the timer thread; a cancelled one never runs and lets go of what
// it holds at once; destruction drops the rest, and late cancels are harmless.
#include "timer_thread.hpp"

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <vector>

namespace zkr::detail {
namespace {

using namespace std::chrono_literals;
using Clock = TimerThread::Clock;

TEST(TimerThread, RunsCallsInTimeOrderNotBeforeTheirTimeOnItsOwnThread) {
  TimerThread timers;
  const auto start = Clock::now();
  std::mutex mutex;
  std::vector<int> order;  // guarded by mutex
  std::vector<Clock::time_point> ran_at;
  std::promise<std::thread::id> last;
  timers.at(start + 60ms, [&] {
    std::lock_guard lock(mutex);
    order.push_back(3);
    ran_at.push_back(Clock::now());
    last.set_value(std::this_thread::get_id());
  });
  timers.at(start + 20ms, [&] {
    std::lock_guard lock(mutex);
    order.push_back(1);
    ran_at.push_back(Clock::now());
  });
  timers.at(start + 40ms, [&] {
    std::lock_guard lock(mutex);
    order.push_back(2);
    ran_at.push_back(Clock::now());
  });
  auto done = last.get_future();
  ASSERT_EQ(done.wait_for(10s), std::future_status::ready);
  EXPECT_NE(done.get(), std::this_thread::get_id());
  std::lock_guard lock(mutex);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_GE(ran_at[0], start + 20ms);
  EXPECT_GE(ran_at[1], start + 40ms);
  EXPECT_GE(ran_at[2], start + 60ms);
}

TEST(TimerThread, ACancelledCallNeverRunsAndLetsGoOfWhatItHeldAtOnce) {
  TimerThread timers;
  auto held = std::make_shared<int>(7);
  std::weak_ptr<int> watch = held;
  std::atomic<bool> ran{false};
  auto timer = timers.at(Clock::now() + 50ms, [&ran, held = std::move(held)] { ran = true; });
  timer.cancel();
  EXPECT_TRUE(watch.expired());
  // A call due after it runs, so the cancelled one had its chance.
  std::promise<void> later;
  timers.at(Clock::now() + 100ms, [&] { later.set_value(); });
  ASSERT_EQ(later.get_future().wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(ran);
  timer.cancel();  // twice: nothing
  TimerThread::Timer none;
  none.cancel();
}

// The thread waits for the earliest call's time; cancelling that call frees
// the queue's node that held the time while the thread waits on it. The wait
// must not read it again on waking (AddressSanitizer reports such a read as a
// heap use after free; without it, a garbage deadline goes unnoticed). Each
// round parks the thread on a far call, cancels it, then wakes the thread
// with a call due at once, which must run at once.
TEST(TimerThread, CancellingTheCallItWaitsForWhileItWaitsIsSafe) {
  TimerThread timers;
  for (int round = 0; round < 200; ++round) {
    std::promise<void> parked;
    // This runs first; afterwards the thread goes back to wait for `far`.
    timers.at(Clock::now(), [&] { parked.set_value(); });
    auto far = timers.at(Clock::now() + 1h, [] { ADD_FAILURE() << "a cancelled call ran"; });
    ASSERT_EQ(parked.get_future().wait_for(10s), std::future_status::ready);
    far.cancel();
    std::promise<void> woken;
    timers.at(Clock::now(), [&] { woken.set_value(); });
    ASSERT_EQ(woken.get_future().wait_for(10s), std::future_status::ready) << "round " << round;
  }
}

TEST(TimerThread, ACallMayScheduleTheNext) {
  TimerThread timers;
  std::promise<int> out;
  std::function<void(int)> step = [&](int n) {
    if (n == 10) return out.set_value(n);
    timers.at(Clock::now(), [&, n] { step(n + 1); });
  };
  timers.at(Clock::now(), [&] { step(1); });
  auto result = out.get_future();
  ASSERT_EQ(result.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(result.get(), 10);
}

TEST(TimerThread, DestructionDropsPendingCallsAndLateCancelsAreHarmless) {
  auto held = std::make_shared<int>(1);
  std::weak_ptr<int> watch = held;
  std::atomic<bool> ran{false};
  TimerThread::Timer timer;
  {
    TimerThread timers;
    timer = timers.at(Clock::now() + 1h, [&ran, held = std::move(held)] { ran = true; });
  }
  EXPECT_TRUE(watch.expired());
  EXPECT_FALSE(ran);
  timer.cancel();
}

}  // namespace
}  // namespace zkr::detail
