// Session events on their way from a keeper's event thread to the Client's
// session thread (src/session_thread.hpp).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>

#include "zkr/keeper.hpp"

namespace zkr::detail {

// Session events on their way from keeper threads to the session thread. The
// keeper's callback holds it by shared_ptr: a caller may keep a keeper (and
// its event thread) alive after the Client is gone. Once closed it drops
// every event.
class SessionInbox {
 public:
  struct Event {
    std::uint64_t epoch = 0;  // of the session that reported it
    SessionState state = SessionState::connecting;
    // Not a session state: the watch on the namespace node fired (state unused).
    bool namespace_changed = false;
  };
  enum class Wake { event, deadline, closed };

  void push(std::uint64_t epoch, SessionState state) { push_event({epoch, state, false}); }
  void push_namespace_changed(std::uint64_t epoch) {
    push_event({epoch, SessionState::connecting, true});
  }

  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    cv_.notify_all();
  }

  void push_event(Event e) {
    {
      std::lock_guard lock(mutex_);
      if (closed_) return;
      events_.push_back(e);
    }
    cv_.notify_one();
  }

  // Waits for the next event, until `deadline` if there is one.
  Wake wait(std::optional<std::chrono::steady_clock::time_point> deadline, Event& out) {
    std::unique_lock lock(mutex_);
    const auto ready = [&] { return closed_ || !events_.empty(); };
    if (deadline) {
      if (!cv_.wait_until(lock, *deadline, ready)) return Wake::deadline;
    } else {
      cv_.wait(lock, ready);
    }
    if (closed_) return Wake::closed;
    out = events_.front();
    events_.pop_front();
    return Wake::event;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Event> events_;  // guarded by mutex_
  bool closed_ = false;       // guarded by mutex_
};

}  // namespace zkr::detail
