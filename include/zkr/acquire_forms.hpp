// zkr/acquire_forms.hpp: the acquire forms every lock shares, written once,
// and the C++ Lockable and TimedLockable names over them.
//
// A lock derives from detail::StandardLockable<Lock>, befriends it, and gives
// it two members: `bool take(std::optional<steady_clock::time_point>,
// std::stop_token)`, its one way in, and `path()`, which acquire()'s error
// names. take(nullopt, ...) is no deadline at all, not a deadline of
// time_point::max(): a timed acquire gives up waiting for a connection at its
// deadline, acquire() leaves that to the retry policy. So every form means the
// same on every lock, and a new form is added here, once.
//
//   zkr::InterProcessMutex mutex(client, "/locks/a");   // any lock here
//   mutex.acquire();                                    // or throws
//   if (mutex.try_acquire_for(5s)) ...                  // or false at 5 s
//   std::scoped_lock hold(mutex);                       // through lock()
//   if (!mutex.acquire(stop_token)) return;             // false once stopped
//
// Cancelling: every form also takes a std::stop_token. A stop leaves the
// queue at once: the call returns false, our queue node is deleted (by the
// Client in the background if the link is down), and whoever is next gets
// the lock. The wait for our turn, or for a connection, ends the moment the
// stop comes; a round trip under way (our create, a listing) or a retry's
// backoff is finished first, each bounded as always. A stop that comes with the grant gives
// the lock on rather than take it; one after the grant changes nothing. A
// token already stopped sends nothing.
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>
#include <stop_token>

#include "zkr/deadline.hpp"
#include "zkr/error.hpp"

namespace zkr::detail {

template <class Lock>
class StandardLockable {
 public:
  // Waits as long as it takes; throws KeeperError if the lock cannot be had
  // (lost session and no requeue, retries exhausted, bad ACL...).
  void acquire() {
    if (!self().take(std::nullopt, {}))
      throw KeeperError(Errc::operation_timeout, self().path(), "acquire gave up");
  }
  // Waits until granted (true) or stopped (false); throws as acquire() does.
  [[nodiscard]] bool acquire(std::stop_token stop) {
    if (self().take(std::nullopt, stop)) return true;
    if (stop.stop_requested()) return false;
    throw KeeperError(Errc::operation_timeout, self().path(), "acquire gave up");
  }
  // One attempt, with no wait: false if someone else holds or waits first.
  [[nodiscard]] bool try_acquire() { return self().take(std::chrono::steady_clock::now(), {}); }
  // A negative timeout is no wait at all, as for try_acquire(); one too long
  // for the clock (up to milliseconds::max()) has no deadline (zkr/deadline.hpp).
  [[nodiscard]] bool try_acquire_for(std::chrono::milliseconds timeout, std::stop_token stop = {}) {
    return self().take(zkr::deadline_after(timeout), stop);
  }
  [[nodiscard]] bool try_acquire_until(std::chrono::steady_clock::time_point deadline,
                                       std::stop_token stop = {}) {
    return self().take(deadline, stop);
  }

  void lock() { acquire(); }
  bool try_lock() { return try_acquire(); }
  // Any duration, up to duration::max(), and a time point of any clock:
  // saturating as try_acquire_for() (zkr/deadline.hpp).
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& d) {
    return self().take(zkr::deadline_after(d), {});
  }
  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& t) {
    return self().take(zkr::deadline_at(t), {});
  }
  void unlock() { (void)self().release(); }

 private:
  Lock& self() { return static_cast<Lock&>(*this); }
};

}  // namespace zkr::detail
