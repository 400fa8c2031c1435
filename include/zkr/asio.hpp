// zkr/asio.hpp: a lock's guard with any Boost.Asio completion token.
//
// The one zkr header that includes Boost (1.81 or later: it needs Asio's
// per-operation cancellation); the others include only the standard
// library, so a user who does not include this one needs no Boost at all.
//
// zkr::asio::async_acquire_guard(lock, [deadline,] token) is the lock's
// async_acquire_guard() (zkr/lock_guard.hpp) as an Asio operation, for the
// two mutexes, InterProcessSemaphoreMutex and the read/write lock's sides;
// zkr::asio::async_acquire(semaphore, n, deadline, token) is a semaphore's n
// leases (InterProcessSemaphoreV2::async_acquire) the same way, and
// zkr::asio::async_acquire_guards(multi_lock, deadline, token) a MultiLock's
// guards (MultiLock::async_acquire_guards), and
// zkr::asio::async_await_leadership(latch, deadline, token) a LeaderLatch's
// leadership, completing with (std::exception_ptr, bool). The others complete with
// (std::exception_ptr, zkr::LockGuard) on the handler's associated executor:
//   - granted: a guard that owns the grant;
//   - the deadline, or a cancellation, came first: an empty guard;
//   - a failure: the exception, as the blocking forms would throw it.
// Any token works: use_awaitable (co_await yields the guard, or throws),
// use_future, deferred, a plain callback. Per-operation cancellation (a
// bound cancellation slot, or awaitable operators racing a timer) stops the
// acquire at whatever stage it is in: its node is deleted and nothing is
// left behind. No thread is parked per waiting acquire.
//
//   boost::asio::awaitable<void> handle(zkr::InterProcessMutex& mutex) {
//     zkr::LockGuard held = co_await zkr::asio::async_acquire_guard(
//         mutex, std::chrono::steady_clock::now() + 5s, boost::asio::use_awaitable);
//     if (!held) co_return;                 // not within 5 s
//     co_await write_order(held.grant().fencing_token());
//   }                                       // released when `held` goes
#pragma once

#include <boost/version.hpp>
#if BOOST_VERSION < 108100
#error "zkr/asio.hpp needs Boost 1.81 or later (per-operation cancellation)"
#endif

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <stop_token>
#include <utility>
#include <vector>

#include "zkr/leader_latch.hpp"
#include "zkr/lock_guard.hpp"
#include "zkr/multi_lock.hpp"
#include "zkr/semaphore.hpp"

namespace zkr::asio {

namespace detail {

// Starts an acquire (start(stop_token, done)), and hands its outcome,
// (std::exception_ptr, Result), to the handler's executor.
// A stop_source with a state of its own, made out of line: inlined into an
// initiation, GCC 12 at -O1 under ASan warns that stop_source's constructor
// reads the object it is constructing (-Wmaybe-uninitialized, a false
// positive in libstdc++'s <stop_token>), which -Werror makes an error in the
// caller's build. One call per cancellable operation, beside the allocation
// the state needs anyway.
[[gnu::noinline]] inline std::stop_source new_stop_source() { return std::stop_source(); }

template <class Result, class Start>
struct InitiateWithStop {
  Start start;

  template <class Handler>
  void operator()(Handler&& handler) const {
    namespace net = boost::asio;
    // Made only when the handler can be cancelled: a stop_source allocates
    // its state, and each waiting operation holds it. Copies share it.
    std::stop_source stop(std::nostopstate);
    // Asio calls the slot's handler on the operation's executor; a stop
    // may come from any thread, so that is all it has to do.
    auto slot = net::get_associated_cancellation_slot(handler);
    if (slot.is_connected()) {
      stop = new_stop_source();
      slot.assign([stop](net::cancellation_type type) mutable {
        if (type != net::cancellation_type::none) stop.request_stop();
      });
    }
    // Keeps the handler's executor running until it is called.
    auto work = net::make_work_guard(net::get_associated_executor(handler));
    start(stop.get_token(), [handler = std::forward<Handler>(handler), work = std::move(work)](
                                std::exception_ptr error, Result result) mutable {
      auto executor = work.get_executor();
      net::post(executor, [handler = std::move(handler), error = std::move(error),
                           result = std::move(result)]() mutable {
        // On the executor, where the slot is used: done with it.
        auto used = net::get_associated_cancellation_slot(handler);
        if (used.is_connected()) used.clear();
        std::move(handler)(std::move(error), std::move(result));
      });
      work.reset();
    });
  }
};

template <class Result, class Start>
InitiateWithStop<Result, Start> initiate_with_stop(Start start) {
  return {std::move(start)};
}

}  // namespace detail

// The guard of `lock` (InterProcessMutex, NonReentrantMutex,
// InterProcessSemaphoreMutex, or a side of InterProcessReadWriteLock), waiting no later than `deadline`
// (std::nullopt: as long as it takes). The lock object may be destroyed
// before the operation completes; its Client may not.
template <class Lock, class CompletionToken>
auto async_acquire_guard(Lock& lock, std::optional<std::chrono::steady_clock::time_point> deadline,
                         CompletionToken&& token) {
  return boost::asio::async_initiate<CompletionToken, void(std::exception_ptr, LockGuard)>(
      detail::initiate_with_stop<LockGuard>([&lock, deadline](std::stop_token stop, auto done) {
        lock.async_acquire_guard(deadline, std::move(stop), std::move(done));
      }),
      token);
}

// The same without a deadline: only a grant, an error or a cancellation ends it.
template <class Lock, class CompletionToken>
auto async_acquire_guard(Lock& lock, CompletionToken&& token) {
  return async_acquire_guard(lock, std::nullopt, std::forward<CompletionToken>(token));
}

// n leases of `semaphore` (InterProcessSemaphoreV2::async_acquire), all or
// none, waiting no later than `deadline` (std::nullopt: as long as it
// takes). Completes with (std::exception_ptr, std::vector<SemaphoreLease>):
// all n leases; none if the deadline or a cancellation came first (those
// granted meanwhile are given back); or the exception. The semaphore object
// may be destroyed before the operation completes; its Client may not.
template <class CompletionToken>
auto async_acquire(InterProcessSemaphoreV2& semaphore, int n,
                   std::optional<std::chrono::steady_clock::time_point> deadline,
                   CompletionToken&& token) {
  using Leases = std::vector<SemaphoreLease>;
  return boost::asio::async_initiate<CompletionToken, void(std::exception_ptr, Leases)>(
      detail::initiate_with_stop<Leases>(
          [&semaphore, n, deadline](std::stop_token stop, auto done) {
            semaphore.async_acquire(n, deadline, std::move(stop), std::move(done));
          }),
      token);
}

// Every path's guard of `multi` (MultiLock::async_acquire_guards), all or
// none, waiting no later than `deadline` (std::nullopt: as long as it
// takes). Completes with (std::exception_ptr, std::vector<LockGuard>), as
// async_acquire does with leases. The MultiLock may be destroyed before the
// operation completes; its Client may not.
template <class CompletionToken>
auto async_acquire_guards(MultiLock& multi,
                          std::optional<std::chrono::steady_clock::time_point> deadline,
                          CompletionToken&& token) {
  using Guards = std::vector<LockGuard>;
  return boost::asio::async_initiate<CompletionToken, void(std::exception_ptr, Guards)>(
      detail::initiate_with_stop<Guards>([&multi, deadline](std::stop_token stop, auto done) {
        multi.async_acquire_guards(deadline, std::move(stop), std::move(done));
      }),
      token);
}

// Leadership of `latch` (LeaderLatch::async_await_leadership), waiting no
// later than `deadline` (std::nullopt: as long as it takes). Completes with
// (std::exception_ptr, bool): true when this participant leads; false if the
// deadline, a cancellation or close() came first (our node deleted); or the
// exception. The latch may be destroyed before the operation completes (that
// closes it); its Client may not.
template <class CompletionToken>
auto async_await_leadership(LeaderLatch& latch,
                            std::optional<std::chrono::steady_clock::time_point> deadline,
                            CompletionToken&& token) {
  return boost::asio::async_initiate<CompletionToken, void(std::exception_ptr, bool)>(
      detail::initiate_with_stop<bool>([&latch, deadline](std::stop_token stop, auto done) {
        latch.async_await_leadership(deadline, std::move(stop), std::move(done));
      }),
      token);
}

}  // namespace zkr::asio
