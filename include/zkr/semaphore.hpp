// zkr/semaphore.hpp: a distributed counting semaphore with leases, and a
// semaphore mutex, both on Apache Curator's InterProcessSemaphoreV2 layout.
//
//   zkr::InterProcessSemaphoreV2 pool(client, "/app/pools/gpu", zkr::SemaphoreLimit::fixed(4));
//   auto leases = pool.try_acquire_for(2, 5s);      // two of the four, or none
//   if (!leases.empty()) {
//     run_on_two_gpus(leases[0].grant().fencing_token());
//   }                                            // released when they go out of scope
//
// The layout is Curator's, so that Java services using Curator's
// InterProcessSemaphoreV2 or InterProcessSemaphoreMutex and C++ services
// using these classes share one bound on one path (tested against Curator
// 5.4): under the path, "locks" holds an internal mutex (a lock queue, as
// InterProcessMutex's) and "leases" one protected ephemeral sequential node
// per lease, `_c_<guid>-lease-<sequence>`. A contender takes the internal
// mutex, creates its lease node, and waits, still holding the mutex, until
// the lease nodes number at most the limit; then it lets the mutex go. So
// contenders are served one at a time, first come, first served, and never
// more leases exist than the limit allowed when each was granted.
//
// The limit is fixed, or read from a znode that Curator's SharedCount keeps
// (a 4-byte big-endian integer), at every grant: lowering it makes later
// contenders wait until enough leases are given back; holders keep theirs.
// Every process on one path must use the same limit (Curator's rule too).
//
// Cost. A grant is three writes (the internal mutex's node, created and
// deleted, and the lease node) and a release a fourth; InterProcessMutex's
// grant is one and its release another. So for mutual exclusion on a path
// of its own, use InterProcessMutex or NonReentrantMutex
// (zkr/lock.hpp): they are faster. Use InterProcessSemaphoreMutex only on a path
// that Java's InterProcessSemaphoreMutex also guards, and this semaphore when
// up to N may hold at once.
//
// No silent mix (see zkr/lock.hpp): mutex or read/write lock nodes directly
// under the path make every acquire throw KeeperError(foreign_lock_protocol)
// naming them; our mutexes and read/write locks refuse a path with "locks"
// or "leases" children likewise.
//
// What it leaves: "locks" is a lock directory, removed as zkr/lock.hpp's
// are; "leases" and the path itself are created as container nodes, which
// the server removes once empty (at its next container check, a minute by
// default). (Removing "leases" ourselves would pin it with a probe child,
// and every child there counts as a lease.)
//
// A lease says lost (Grant::lost) when its node is deleted by someone
// else, its session ends, or, under SuspendedPolicy::lost, the link drops.
// A lease is released by its owner, from any thread, or when destroyed.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "zkr/client.hpp"
#include "zkr/lock.hpp"
#include "zkr/lock_guard.hpp"

namespace zkr {

// How many leases a semaphore allows.
class SemaphoreLimit {
 public:
  // At least 1 (std::invalid_argument otherwise).
  static SemaphoreLimit fixed(std::int32_t max_leases);
  // The value of a Curator SharedCount at `path`: 4 bytes, big-endian. A
  // missing node, another length or a value below 1 makes acquires throw
  // KeeperError(bad_arguments) naming the node.
  static SemaphoreLimit shared_count(std::string path);

  std::optional<std::int32_t> fixed_value() const noexcept { return fixed_; }
  const std::string& count_path() const noexcept { return count_path_; }

 private:
  std::optional<std::int32_t> fixed_;
  std::string count_path_;
};

class SemaphoreLease;

namespace detail {
struct SemaphoreCore;
// What an asynchronous semaphore acquire calls back with: the leases, or the error.
using LeasesHandler = std::function<void(std::exception_ptr, std::vector<SemaphoreLease>)>;
}  // namespace detail

// One lease: owns its node, gives it back on release() or destruction, from
// any thread. Movable, not copyable.
class SemaphoreLease {
 public:
  SemaphoreLease(SemaphoreLease&& other) noexcept;
  SemaphoreLease& operator=(SemaphoreLease&& other) noexcept;
  SemaphoreLease(const SemaphoreLease&) = delete;
  SemaphoreLease& operator=(const SemaphoreLease&) = delete;
  ~SemaphoreLease();

  // The node, its czxid as fencing token, the lost signal (see Grant).
  // Lease nodes are made one at a time under the semaphore's internal lock,
  // each after the previous lease was granted: a lease's token is larger
  // than every lease's granted before it on this path.
  const Grant& grant() const noexcept { return grant_; }
  // Sends the delete of the node and returns (as InterProcessMutex::release
  // does). False if already released. Never throws.
  bool release() noexcept;

  SemaphoreLease(std::shared_ptr<detail::SemaphoreCore> core,
                 std::shared_ptr<detail::GrantState> state);

 private:
  std::shared_ptr<detail::SemaphoreCore> core_;
  std::shared_ptr<detail::GrantState> state_;
  Grant grant_;
  bool held_ = true;
};

class InterProcessSemaphoreV2 {
 public:
  // Throws std::invalid_argument for a bad path (as InterProcessMutex, with
  // kMaxSemaphorePathLength) or bad options.
  InterProcessSemaphoreV2(Client& client, std::string path, SemaphoreLimit limit,
                          LockOptions options = {});
  ~InterProcessSemaphoreV2();
  InterProcessSemaphoreV2(const InterProcessSemaphoreV2&) = delete;
  InterProcessSemaphoreV2& operator=(const InterProcessSemaphoreV2&) = delete;

  // n leases (n >= 1, else std::invalid_argument), waiting as long as it
  // takes; throws KeeperError when they cannot be had.
  std::vector<SemaphoreLease> acquire(int n = 1);
  // n leases, or none (an empty vector) if `stop` is stopped first; a stop
  // works as for the locks (zkr/acquire_forms.hpp).
  std::vector<SemaphoreLease> acquire(int n, std::stop_token stop);
  // n leases, or none (an empty vector) if the deadline (or a stop) comes
  // first: the leases granted meanwhile are given back.
  std::vector<SemaphoreLease> try_acquire_for(int n, std::chrono::milliseconds timeout,
                                              std::stop_token stop = {});
  std::vector<SemaphoreLease> try_acquire_until(int n,
                                                std::chrono::steady_clock::time_point deadline,
                                                std::stop_token stop = {});

  // n leases with no thread waiting for them: queues and returns at once
  // (std::invalid_argument for a bad n, before anything is sent).
  // on_done(error, leases) is called exactly once:
  //   - granted: all n leases, error null;
  //   - the deadline (none if nullopt) or a stop came first: no leases, and
  //     those granted meanwhile are given back;
  //   - what acquire() would throw: error holds it, no leases.
  // It runs on a thread of the Client's, or on this one before the call
  // returns when the outcome is known at once, and must not block (as
  // LockGuard's async_acquire_guard; zkr/asio.hpp has the Asio form). The
  // semaphore object may be destroyed before on_done runs; its Client must not.
  template <class Handler>
  void async_acquire(int n, std::optional<std::chrono::steady_clock::time_point> deadline,
                     std::stop_token stop, Handler&& on_done) {
    auto held = std::make_shared<std::decay_t<Handler>>(std::forward<Handler>(on_done));
    start_acquire(n, deadline, std::move(stop),
                  [held](std::exception_ptr error, std::vector<SemaphoreLease> leases) {
                    (*held)(std::move(error), std::move(leases));
                  });
  }

  // The lease nodes, in sequence order.
  std::vector<std::string> participant_nodes() const;
  const std::string& path() const noexcept;

 private:
  friend class InterProcessSemaphoreMutex;
  void start_acquire(int n, std::optional<std::chrono::steady_clock::time_point> deadline,
                     std::stop_token stop, detail::LeasesHandler on_done);
  void check_count(int n) const;

  std::shared_ptr<detail::SemaphoreCore> core_;
};

// Curator's InterProcessSemaphoreMutex on the wire: a semaphore of one lease,
// not reentrant, released by any thread. For a path Java's
// InterProcessSemaphoreMutex guards too; elsewhere NonReentrantMutex
// (zkr/lock.hpp) does the same with a third of the writes.
//
// Threads may share one object, as with NonReentrantMutex: a grant
// never overwrites another. If a hold is lost without a release and another
// thread is granted next, both grants stay until released, and release()
// gives back the oldest first (the lost one, which deletes nothing), so the
// thread whose hold was lost cannot release the new holder's. grant() is the
// newest grant's.
//
// Its guard forms (zkr/lock_guard.hpp) give a LockGuard owning one grant of
// its own, outside the shared grants above, as the locks' guards do.
class InterProcessSemaphoreMutex : public detail::StandardLockable<InterProcessSemaphoreMutex>,
                                   public detail::GuardForms<InterProcessSemaphoreMutex> {
 public:
  InterProcessSemaphoreMutex(Client& client, std::string path, LockOptions options = {});
  ~InterProcessSemaphoreMutex();  // releases a grant still held

  // False (nothing changes) if not held.
  bool release() noexcept;
  bool is_acquired_in_this_process() const;
  // The newest grant; std::logic_error if not held.
  Grant grant() const;
  const std::string& path() const noexcept { return semaphore_.path(); }

 private:
  friend class detail::StandardLockable<InterProcessSemaphoreMutex>;
  friend class detail::GuardForms<InterProcessSemaphoreMutex>;
  bool take(std::optional<std::chrono::steady_clock::time_point> deadline, std::stop_token stop);
  LockGuard take_guard(std::optional<std::chrono::steady_clock::time_point> deadline,
                       std::stop_token stop);
  void take_guard_async(std::optional<std::chrono::steady_clock::time_point> deadline,
                        std::stop_token stop, detail::GuardHandler on_done);

  InterProcessSemaphoreV2 semaphore_;
  mutable std::mutex mutex_;
  std::deque<SemaphoreLease> grants_;  // guarded by mutex_: oldest first
};

}  // namespace zkr
