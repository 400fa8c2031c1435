// zkr/multi_lock.hpp: several locks taken as one.
//
// The paths are taken in one canonical (sorted) order, whatever order the
// caller gave, so MultiLocks over {A, B} and {B, A} cannot deadlock; one
// deadline covers them all; and a failure part way gives back everything
// already taken. Each path is an InterProcessMutex, so the thread that
// acquired releases. All leases of a granted set belong to one session: if
// the session ends while the set is being taken (the earlier locks' nodes go
// with it), everything is given back and taken again, within the deadline.
// An error gives everything back too and is thrown as it came: one path held
// by another lock protocol (Errc::foreign_lock_protocol, see zkr/lock.hpp)
// refuses the whole set.
//
//   zkr::MultiLock both(client, {"/locks/train/7", "/locks/yard/north"});
//   if (both.try_acquire_for(5s)) {
//     auto result = zkr::guarded_write(*client.keeper(), both.grants(), ops);
//     both.release();
//   }
//
// The guard forms give the set as LockGuards (zkr/lock_guard.hpp), one per
// path, owned by whoever holds them rather than by the calling thread, and
// the async form takes them with no thread waiting (zkr/asio.hpp has it for
// Asio): the same order, deadline, all-or-none and one-session rules.
//
//   auto held = both.try_acquire_guards_for(5s);
//   if (held.empty()) return;                  // not within 5 s
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <type_traits>
#include <vector>

#include "zkr/lock.hpp"
#include "zkr/lock_guard.hpp"

namespace zkr {

class MultiLock : public detail::StandardLockable<MultiLock> {
 public:
  // Throws std::invalid_argument for an empty list or a bad path; duplicates
  // are taken once.
  MultiLock(Client& client, std::vector<std::string> paths, LockOptions options = {});
  ~MultiLock();  // releases what it still holds; never throws
  MultiLock(const MultiLock&) = delete;
  MultiLock& operator=(const MultiLock&) = delete;

  // acquire() and try_acquire*() take every path or none (see above).

  // Releases every lock, last taken first. False if the calling thread holds none.
  bool release() noexcept;

  bool is_acquired_in_this_process() const;
  // Every path's guard, in paths() order, or none (an empty vector) if
  // `stop` was stopped first; throws KeeperError as acquire() does.
  [[nodiscard]] std::vector<LockGuard> acquire_guards(std::stop_token stop = {});
  // Every path's guard, or none if the deadline (or a stop) came first.
  [[nodiscard]] std::vector<LockGuard> try_acquire_guards_for(std::chrono::milliseconds timeout,
                                                              std::stop_token stop = {});
  // The guards with no thread waiting: queues and returns at once.
  // on_done(error, guards) is called exactly once, with every guard, or
  // none (the deadline, none if nullopt, or a stop came first; or `error`
  // says what acquire() would have thrown). It runs on a thread of the
  // Client's, or on this one when the outcome is known at once, and must not
  // block. The MultiLock may be destroyed before on_done runs; its Client
  // must not.
  template <class Handler>
  void async_acquire_guards(std::optional<std::chrono::steady_clock::time_point> deadline,
                            std::stop_token stop, Handler&& on_done) {
    auto held = std::make_shared<std::decay_t<Handler>>(std::forward<Handler>(on_done));
    start_guards(deadline, std::move(stop),
                 [held](std::exception_ptr error, std::vector<LockGuard> guards) {
                   (*held)(std::move(error), std::move(guards));
                 });
  }

  // In canonical order.
  const std::vector<std::string>& paths() const noexcept;
  // The calling thread's leases, in paths() order; throws std::logic_error if
  // it does not hold them.
  std::vector<Grant> grants() const;

 private:
  friend class detail::StandardLockable<MultiLock>;
  enum class Outcome { held, timed_out, grant_lost };
  // Without a deadline: true, or throws (acquire()'s check never fails).
  bool take(std::optional<std::chrono::steady_clock::time_point> deadline, std::stop_token stop);
  Outcome take_once(std::optional<std::chrono::steady_clock::time_point> deadline,
                    const std::stop_token& stop);
  bool all_current(std::size_t n) const;  // the first n leases: not lost, this session
  using GuardsHandler = std::function<void(std::exception_ptr, std::vector<LockGuard>)>;
  void start_guards(std::optional<std::chrono::steady_clock::time_point> deadline,
                    std::stop_token stop, GuardsHandler on_done);
  // What errors about the whole set name, as take's own do.
  const std::string& path() const noexcept { return paths_.front(); }

  Client& client_;
  std::vector<std::string> paths_;
  // In paths_ order; shared with async acquires, which may outlive us.
  std::vector<std::shared_ptr<InterProcessMutex>> locks_;
};

}  // namespace zkr
