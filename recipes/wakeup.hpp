// Where a coroutine (task.hpp) waits for "something happened" from other
// threads, or for a time to come: the event-driven counterpart of a
// condition variable with wait_until.
//
//   auto wakeup = Wakeup::make(timers);
//   // any thread:  wakeup->wake();
//   // the waiter:  if (!co_await wakeup->until(deadline)) { /* deadline came */ }
//
// The waiter runs on the thread that ends its wait (the waker's, or the
// timer thread's): wake only where that is safe, holding no lock the waiter
// may take. The TimerThread must outlive every wait with a deadline.
//
// One waiter at a time. Wakes are not counted: several before a wait make one,
// and a wake with nobody waiting is kept for the next wait, which then does
// not suspend. So a waiter that looks at its queues after every wait misses
// nothing.
#pragma once

#include <coroutine>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "timer_thread.hpp"

namespace zkr::detail {

class Wakeup : public std::enable_shared_from_this<Wakeup> {
 public:
  using Clock = TimerThread::Clock;

  // Shared, so that a timer or a waker that fires late finds it alive.
  static std::shared_ptr<Wakeup> make(TimerThread& timers) {
    return std::shared_ptr<Wakeup>(new Wakeup(timers));
  }

  // From any thread; resumes the waiter on this thread if one waits.
  void wake() {
    std::unique_lock lock(mutex_);
    if (!waiting_) {
      pending_ = true;
      return;
    }
    resume(lock, true);
  }

  // co_await until(t): true when woken (or a wake was pending), false when t
  // came first; without t, only a wake ends the wait.
  auto until(std::optional<Clock::time_point> deadline) {
    struct Awaiter {
      Wakeup& w;
      std::optional<Clock::time_point> deadline;
      bool await_ready() { return w.take_pending(); }
      bool await_suspend(std::coroutine_handle<> h) { return w.start_wait(h, deadline); }
      bool await_resume() { return w.take_result(); }
    };
    return Awaiter{*this, deadline};
  }

 protected:
  // For a class that is its own Wakeup (made shared, as make() does).
  explicit Wakeup(TimerThread& timers) : timers_(timers) {}

 private:
  bool take_pending() {
    std::lock_guard lock(mutex_);
    if (!pending_) return false;
    pending_ = false;
    result_ = true;
    return true;
  }

  bool start_wait(std::coroutine_handle<> h, std::optional<Clock::time_point> deadline) {
    std::lock_guard lock(mutex_);
    if (pending_) {  // woken between await_ready and now
      pending_ = false;
      result_ = true;
      return false;
    }
    waiting_ = h;
    const auto wait = ++waits_;
    if (deadline)
      timer_ = timers_.at(*deadline, [weak = weak_from_this(), wait] {
        if (const auto self = weak.lock()) self->time_up(wait);
      });
    return true;
  }

  // A timer of an earlier wait, fired late, must not end this one.
  void time_up(std::uint64_t wait) {
    std::unique_lock lock(mutex_);
    if (waiting_ && wait == waits_) resume(lock, false);
  }

  void resume(std::unique_lock<std::mutex>& lock, bool woken) {
    const auto h = std::exchange(waiting_, {});
    auto timer = std::exchange(timer_, {});
    result_ = woken;
    lock.unlock();
    timer.cancel();
    h.resume();
  }

  bool take_result() {
    std::lock_guard lock(mutex_);
    return result_;
  }

  TimerThread& timers_;
  std::mutex mutex_;
  std::coroutine_handle<> waiting_;  // guarded by mutex_
  TimerThread::Timer timer_;         // guarded by mutex_
  std::uint64_t waits_ = 0;          // guarded by mutex_
  bool pending_ = false;             // guarded by mutex_
  bool result_ = false;              // guarded by mutex_
};

}  // namespace zkr::detail
