// The event-driven wait of coroutines (wakeup.hpp): a wake before the wait
// is kept, a wake from another thread resumes the waiter there, a deadline
// ends a wait on the timer thread, and a deadline of an earlier wait never
// ends a later one.
#include "wakeup.hpp"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "task.hpp"

namespace zkr::detail {
namespace {

using namespace std::chrono_literals;
using Clock = Wakeup::Clock;

struct Outcome {
  bool woken;
  std::thread::id on;
};

Task<Outcome> wait_once(Wakeup& w, std::optional<Clock::time_point> deadline) {
  const bool woken = co_await w.until(deadline);
  co_return Outcome{woken, std::this_thread::get_id()};
}

std::future<Outcome> start(Task<Outcome> task) {
  auto done = std::make_shared<std::promise<Outcome>>();
  auto result = done->get_future();
  spawn(std::move(task), [done](std::exception_ptr error, std::optional<Outcome> out) {
    if (error) done->set_exception(error);
    else done->set_value(*out);
  });
  return result;
}

TEST(Wakeup, AWakeBeforeTheWaitIsKeptAndTheWaitDoesNotSuspend) {
  TimerThread timers;
  auto w = Wakeup::make(timers);
  w->wake();
  w->wake();  // not counted: one wait takes both
  auto first = start(wait_once(*w, Clock::now() + 1h));
  ASSERT_EQ(first.wait_for(0s), std::future_status::ready);
  const auto out = first.get();
  EXPECT_TRUE(out.woken);
  EXPECT_EQ(out.on, std::this_thread::get_id());
  auto second = start(wait_once(*w, Clock::now() + 50ms));
  EXPECT_FALSE(second.get().woken);  // the two wakes made one
}

TEST(Wakeup, AWakeFromAnotherThreadResumesTheWaiterThere) {
  TimerThread timers;
  auto w = Wakeup::make(timers);
  auto waited = start(wait_once(*w, std::nullopt));
  EXPECT_EQ(waited.wait_for(100ms), std::future_status::timeout);  // nothing ends it but a wake
  std::thread waker([&] { w->wake(); });
  const auto waker_id = waker.get_id();
  waker.join();
  ASSERT_EQ(waited.wait_for(10s), std::future_status::ready);
  const auto out = waited.get();
  EXPECT_TRUE(out.woken);
  EXPECT_EQ(out.on, waker_id);
}

TEST(Wakeup, ADeadlineEndsTheWaitNotBeforeItsTime) {
  TimerThread timers;
  auto w = Wakeup::make(timers);
  const auto deadline = Clock::now() + 50ms;
  auto waited = start(wait_once(*w, deadline));
  ASSERT_EQ(waited.wait_for(10s), std::future_status::ready);
  EXPECT_GE(Clock::now(), deadline);
  const auto out = waited.get();
  EXPECT_FALSE(out.woken);
  EXPECT_NE(out.on, std::this_thread::get_id());
}

TEST(Wakeup, AnEarlierWaitsDeadlineNeverEndsALaterWait) {
  TimerThread timers;
  auto w = Wakeup::make(timers);
  auto body = [&]() -> Task<Outcome> {
    // Woken at once, its 50 ms deadline still pending: the next wait,
    // without one, must outlast it.
    (void)co_await w->until(Clock::now() + 50ms);
    co_return co_await wait_once(*w, std::nullopt);
  };
  auto waited = start(body());
  w->wake();
  EXPECT_EQ(waited.wait_for(300ms), std::future_status::timeout);
  w->wake();
  ASSERT_EQ(waited.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(waited.get().woken);
}

}  // namespace
}  // namespace zkr::detail
