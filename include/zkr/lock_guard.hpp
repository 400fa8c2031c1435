// zkr/lock_guard.hpp: a grant owned by an object rather than by a thread.
//
// InterProcessMutex is reentrant per thread, and its release() gives back the
// calling thread's hold. Work that moves between threads (a coroutine resumed
// on another thread of a pool, a task handed to a worker) cannot keep that
// rule. A LockGuard is the other way to own a grant: the guard owns it,
// whatever thread or coroutine has the guard; moving the guard moves the
// grant; destroying it, or unlock(), gives the grant back, from any thread.
// For a coroutine, owning means holding the guard in its frame: it owns the
// lock across suspensions and resumptions on any thread until the guard goes.
//
// A guard's grant is one of its own: not reentrant and not the calling
// thread's. is_owned_by_current_thread() and is_acquired_in_this_process()
// do not count it, release() of the lock does not touch it, and a read/write
// lock's downgrade does not count it. A thread that holds a lock through
// acquire() and asks for a guard on the same lock queues behind itself, and
// waits until its deadline. The guard may outlive the lock object (and the
// Client: the grant then went with its session). Guards come from
// InterProcessMutex, NonReentrantMutex and the read/write lock's
// sides; a semaphore's SemaphoreLease is already one of its kind.
//
//   zkr::InterProcessMutex mutex(client, "/app/locks/order-42");
//   zkr::LockGuard held = mutex.try_acquire_guard_for(5s);
//   if (!held) return;                                   // not acquired
//   pool.post([held = std::move(held)] {                 // another thread
//     store.write(order, held.grant().fencing_token());
//   });                                                  // released when the task ends
//
// One guard is not for two threads at once (like std::unique_ptr); the grant
// it hands out is.
#pragma once

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <type_traits>
#include <utility>

#include "zkr/deadline.hpp"
#include "zkr/error.hpp"

namespace zkr {

class Client;
class Grant;
namespace detail {
struct GrantState;
class ClientLifeline;
}  // namespace detail

class LockGuard {
 public:
  LockGuard() noexcept;  // owns nothing
  ~LockGuard();          // unlock()
  LockGuard(LockGuard&& other) noexcept;
  // Gives back what this guard owned, then takes other's grant.
  LockGuard& operator=(LockGuard&& other) noexcept;
  LockGuard(const LockGuard&) = delete;
  LockGuard& operator=(const LockGuard&) = delete;

  // Owns a grant not yet given back. The grant may have been lost since:
  // grant().lost() says so.
  explicit operator bool() const noexcept { return state_ != nullptr; }
  // The grant's grant; std::logic_error if the guard owns none.
  Grant grant() const;
  // Gives the grant back as InterProcessMutex::release() does (the delete is
  // sent, not awaited), from whatever thread. False if the guard owned none.
  // Never throws. (std::unique_lock's meaning: unlock() gives the lock back.
  // There is no release() that lets go of a grant without giving it back: a
  // grant no guard owns would leave its node queued until the session ends.)
  bool unlock() noexcept;

  // For the locks: a grant of `client`'s, given back through it while it lives.
  LockGuard(std::shared_ptr<detail::GrantState> state,
            std::shared_ptr<detail::ClientLifeline> lifeline, Client& client) noexcept;

 private:
  std::shared_ptr<detail::GrantState> state_;
  std::shared_ptr<detail::ClientLifeline> lifeline_;
  Client* client_ = nullptr;
};

namespace detail {

// What an asynchronous acquire calls back with: the guard, or the error.
using GuardHandler = std::function<void(std::exception_ptr, LockGuard)>;

// Any callable taking (std::exception_ptr, LockGuard), move-only ones too
// (Asio's handlers), as a GuardHandler. It is called once.
template <class Handler>
GuardHandler guard_handler(Handler&& handler) {
  auto held = std::make_shared<std::decay_t<Handler>>(std::forward<Handler>(handler));
  return [held](std::exception_ptr error, LockGuard guard) {
    (*held)(std::move(error), std::move(guard));
  };
}

// The guard forms of a lock, written once. The lock gives them
// `LockGuard take_guard(std::optional<steady_clock::time_point>,
// std::stop_token)` (befriending this base) and `path()`.
template <class Lock>
class GuardForms {
 public:
  // Waits as long as it takes. Empty only if `stop` was stopped; throws
  // KeeperError when the lock cannot be had, as acquire() does.
  [[nodiscard]] LockGuard acquire_guard(std::stop_token stop = {}) {
    auto guard = self().take_guard(std::nullopt, stop);
    if (!guard && !stop.stop_requested())
      throw KeeperError(Errc::operation_timeout, self().path(), "acquire gave up");
    return guard;
  }
  // Empty if the deadline (or a stop) came first. A negative timeout is no
  // wait at all; one too long for the clock (up to milliseconds::max()) has
  // no deadline (zkr/deadline.hpp).
  [[nodiscard]] LockGuard try_acquire_guard_for(std::chrono::milliseconds timeout,
                                                std::stop_token stop = {}) {
    return self().take_guard(zkr::deadline_after(timeout), stop);
  }
  [[nodiscard]] LockGuard try_acquire_guard_until(std::chrono::steady_clock::time_point deadline,
                                                  std::stop_token stop = {}) {
    return self().take_guard(deadline, stop);
  }

  // The guard, with no thread waiting for it: queues and returns at once.
  // on_done(error, guard) is called exactly once:
  //   - granted: guard owns the grant, error is null;
  //   - the deadline (none if nullopt) or a stop came first: both empty,
  //     and our node is deleted as by a timed acquire;
  //   - what acquire_guard() would throw: error holds it, guard is empty.
  // It runs on a thread of the Client's (the session's event thread, or the
  // timer thread of its acquires), or on this one before the call returns
  // when the outcome is known at once; it must not block (post the work
  // elsewhere, as zkr/asio.hpp does). A stop leaves the queue at once,
  // whatever stage the acquire is in. The lock object may be destroyed
  // before on_done runs; its Client must not be (~Client ends the acquire
  // with `closing`, as it does a blocking one). No thread is parked per
  // acquire: thousands may queue on a Client at once.
  //
  //   mutex.async_acquire_guard(std::chrono::steady_clock::now() + 5s, {},
  //       [](std::exception_ptr error, zkr::LockGuard held) { ... });
  template <class Handler>
  void async_acquire_guard(std::optional<std::chrono::steady_clock::time_point> deadline,
                           std::stop_token stop, Handler&& on_done) {
    self().take_guard_async(deadline, std::move(stop),
                            guard_handler(std::forward<Handler>(on_done)));
  }

 private:
  Lock& self() { return static_cast<Lock&>(*this); }
};

}  // namespace detail
}  // namespace zkr
