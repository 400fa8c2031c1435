// AttemptInbox: what reaches a waiting lock attempt (attempt.hpp) from other
// threads, and the wakeup it waits on. Apart from the attempt because it is
// the one piece shared between threads: everything here is guarded by its
// mutex, while the attempt itself runs on one thread at a time.
#pragma once

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "lock_internals.hpp"
#include "timer_thread.hpp"
#include "wakeup.hpp"
#include "zkr/client.hpp"
#include "zkr/keeper.hpp"

namespace zkr::detail {

// What reaches a waiting attempt from other threads, and the wakeup it waits
// on. A watch event runs the attempt at once, on the keeper's event thread:
// the listing a hand-off is granted on is sent from there, with no thread
// switch. Connection states (from the Client's listener thread, where an
// acquire must not run), stops (from any thread, inside request_stop()) and
// session changes (from the Client's session thread) run it on the timer
// thread instead.
//
// It is its own Wakeup, one allocation rather than two: every waiter holds
// one.
class AttemptInbox : public Wakeup {
 public:
  explicit AttemptInbox(std::shared_ptr<TimerThread> timers)
      : Wakeup(*timers), timers_(std::move(timers)) {}

  void on_event(const WatchEvent& event) {
    {
      std::lock_guard lock(mutex_);
      events_.push_back(event);
    }
    wake();
  }
  void on_state(ConnectionState state) {
    {
      std::lock_guard lock(mutex_);
      states_.push_back(state);
    }
    wake_on_timer_thread();
  }
  // The caller's stop_token was stopped (from any thread).
  void on_stop() {
    {
      std::lock_guard lock(mutex_);
      stopped_ = true;
    }
    wake_on_timer_thread();
  }
  void wake_on_timer_thread() {
    (void)timers_->at(Clock::now(), [weak = weak_from_this()] {
      if (const auto wakeup = weak.lock()) wakeup->wake();
    });
  }

  bool stopped() {
    std::lock_guard lock(mutex_);
    return stopped_;
  }
  // co_await until(t): false if t came with nothing new (Wakeup::until).
  // Vectors, not deques: an empty vector holds no heap, and a parked
  // waiter's queues are empty (a deque allocates on construction, about
  // 1 KiB for the two, for every waiter).
  std::vector<WatchEvent> take_events() {
    std::lock_guard lock(mutex_);
    return std::exchange(events_, {});
  }
  std::vector<ConnectionState> take_states() {
    std::lock_guard lock(mutex_);
    return std::exchange(states_, {});
  }
  TimerThread& timers() { return *timers_; }

 private:
  const std::shared_ptr<TimerThread> timers_;
  std::mutex mutex_;
  std::vector<WatchEvent> events_;       // guarded by mutex_
  std::vector<ConnectionState> states_;  // guarded by mutex_
  bool stopped_ = false;                 // guarded by mutex_
};

}  // namespace zkr::detail
