// The worker every Client thread is (the timer thread that async acquires
// wait on among them): calls run at their time, in order, on its thread; a
// cancelled one never runs and lets go of what it holds at once;
// destruction drops the rest, and late cancels are harmless; posted calls
// run in order after those due; a draining stop runs what is due and
// nothing later.
#include "timer_thread.hpp"

#include <gtest/gtest.h>

#include <atomic>
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

// Posted calls run in the order posted, after a timed call already due, and
// before one due later.
TEST(WorkerThread, PostedCallsRunInOrderAfterThoseDue) {
  WorkerThread worker;
  std::promise<void> gate;
  auto opened = gate.get_future().share();
  std::mutex mutex;
  std::vector<int> order;  // guarded by mutex
  const auto add = [&](int n) {
    std::lock_guard lock(mutex);
    order.push_back(n);
  };
  std::promise<void> done;
  worker.post([opened] { opened.wait(); });  // holds the thread while we queue
  const auto now = Clock::now();
  worker.at(now, [&] { add(1); });
  worker.at(now + 10min, [&] { add(99); });
  for (int i = 2; i <= 5; ++i) ASSERT_TRUE(worker.post([&, i] { add(i); }));
  ASSERT_TRUE(worker.post([&] { done.set_value(); }));
  gate.set_value();
  ASSERT_EQ(done.get_future().wait_for(5s), std::future_status::ready);
  std::lock_guard lock(mutex);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4, 5}));
}

// stop(Drain::due) runs every call posted (and timed ones due), drops one
// due later and refuses posts from then on; stop(Drain::none) runs nothing
// more. Stopped from a call on the thread itself, so that the queue is
// known before the stop: the thread then ends on its own.
TEST(WorkerThread, ADrainingStopRunsWhatIsDueAndNothingLater) {
  for (const auto drain : {WorkerThread::Drain::due, WorkerThread::Drain::none}) {
    WorkerThread worker;
    std::atomic<int> ran{0};
    std::promise<void> stopped, drained;
    auto later = std::make_shared<int>(0);
    const std::weak_ptr<int> later_held = later;
    std::promise<void> gate;  // holds the thread until everything is queued
    worker.post([opened = gate.get_future().share()] { opened.wait(); });
    worker.post([&] {
      worker.stop(drain);
      EXPECT_FALSE(worker.post([&] { ran += 10; }));
      stopped.set_value();
    });
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(worker.post([&] { ++ran; }));
    ASSERT_TRUE(worker.post([&] { drained.set_value(); }));
    worker.at(Clock::now() + 10min, [later = std::move(later), &ran] { ran += 100; });
    later.reset();
    gate.set_value();
    ASSERT_EQ(stopped.get_future().wait_for(5s), std::future_status::ready);
    EXPECT_TRUE(later_held.expired()) << "the call due later was kept";
    if (drain == WorkerThread::Drain::due) {
      ASSERT_EQ(drained.get_future().wait_for(5s), std::future_status::ready);
      EXPECT_EQ(ran.load(), 3);
    } else {
      EXPECT_EQ(ran.load(), 0);  // dropped by the stop, before it returned
    }
    EXPECT_FALSE(worker.post([&] { ++ran; }));
  }
}

}  // namespace
}  // namespace zkr::detail
