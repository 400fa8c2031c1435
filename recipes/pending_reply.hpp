// A request's reply for a coroutine (task.hpp) that sends several requests
// back to back and then waits for each in turn, none past a deadline: the
// event-driven counterpart of a std::future and await_reply().
//
//   PendingReply<Result<Children>> listed;
//   keeper->async_children(dir, {}, listed.handler());
//   ...                                    // send more, or do other work
//   auto result = co_await listed.until(timers, deadline, Result<Children>(Errc::operation_timeout, dir));
//
// The reply may come on any thread, before or after the wait begins; the
// waiter resumes on the thread that ends its wait (the reply's, or the timer
// thread's). A reply that comes after the deadline is dropped, as a future's
// is when nobody waits for it any more. Awaited at most once.
#pragma once

#include <coroutine>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "timer_thread.hpp"

namespace zkr::detail {

template <class R>
class PendingReply {
 public:
  PendingReply() : state_(std::make_shared<State>()) {}

  // What the request is sent with. Kept by the request, it keeps only the
  // reply's slot alive, not the waiter.
  std::function<void(R)> handler() const {
    return [state = state_](R r) { state->settle(std::move(r)); };
  }

  // co_await until(timers, t, on_timeout): the reply, or on_timeout once t
  // has come without one.
  auto until(TimerThread& timers, TimerThread::Clock::time_point deadline, R on_timeout) {
    struct Awaiter {
      std::shared_ptr<State> state;
      TimerThread& timers;
      TimerThread::Clock::time_point deadline;
      R on_timeout;
      bool await_ready() {
        std::lock_guard lock(state->mutex);
        return state->result.has_value();
      }
      bool await_suspend(std::coroutine_handle<> waiting) {
        // Everything from here on goes through a local copy: once the
        // handle is published, another thread may resume the coroutine and
        // end this awaiter's life before we return.
        const auto s = state;
        auto timer = timers.at(
            deadline, [weak = std::weak_ptr<State>(s), timeout = std::move(on_timeout)]() mutable {
              if (const auto alive = weak.lock()) alive->settle(std::move(timeout));
            });
        std::unique_lock lock(s->mutex);
        if (s->result) {  // came meanwhile: go on without suspending
          lock.unlock();
          timer.cancel();
          return false;
        }
        s->waiting = waiting;
        s->timer = std::move(timer);
        return true;
      }
      R await_resume() { return std::move(*state->result); }
    };
    return Awaiter{state_, timers, deadline, std::move(on_timeout)};
  }

 private:
  struct State {
    std::mutex mutex;
    std::optional<R> result;          // guarded by mutex: the first of reply and timeout
    std::coroutine_handle<> waiting;  // guarded by mutex
    TimerThread::Timer timer;         // guarded by mutex

    void settle(R r) {
      std::unique_lock lock(mutex);
      if (result) return;  // the deadline came first: a late reply is dropped
      result.emplace(std::move(r));
      const auto resume = std::exchange(waiting, {});
      auto spent = std::exchange(timer, {});
      lock.unlock();
      spent.cancel();
      if (resume) resume.resume();
    }
  };
  std::shared_ptr<State> state_;
};

}  // namespace zkr::detail
