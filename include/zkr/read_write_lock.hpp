// zkr/read_write_lock.hpp: a fair distributed read/write lock, wire-compatible
// with Apache Curator's InterProcessReadWriteLock.
//
// Readers share; a writer excludes everyone. Both kinds queue in one order,
// first come, first served: a waiting writer holds back the readers that came
// after it, so writers are not starved by a stream of readers.
//
//   zkr::InterProcessReadWriteLock rw(client, "/locks/catalog");
//   {
//     std::shared_lock read(rw.read_lock());     // many readers at once
//     ...
//   }
//   if (rw.write_lock().try_acquire_for(5s)) {   // alone
//     write_with(rw.write_lock().grant().fencing_token());
//     rw.write_lock().release();
//   }
//
// The nodes are Curator's: `_c_<guid>-__READ__<sequence>` and
// `_c_<guid>-__WRIT__<sequence>` in the lock path, ordered by sequence, so
// Curator's InterProcessReadWriteLock and this one exclude each other on one
// path (tested against Curator 5.4). A reader waits only for the writers
// before it and watches the last of them; a writer watches the node just
// before its own: a release wakes only whom it can let in.
//
// Each side is reentrant per thread like InterProcessMutex (N acquires by a
// thread need N releases; only the holding thread releases), and gives a
// Grant: fencing token, lost signal, guarded_write().
//
// Downgrade: a thread holding the write lock may take the read lock; it is
// granted at once. Release the write lock then, and the read stays held.
// If other writers had queued meanwhile, they are ahead of the new read
// node, and would be granted beside the read the moment the write node
// went: so the write node stays (its grant stays held, and a loss of it is a
// loss of the read) until the thread releases the read lock too. Curator's
// own downgrade has no such guard; do not rely on it from Java while writers
// queue. The downgraded read's fencing token is the write grant's, not its
// own node's (which is newer than those queued writers'): every writer
// granted after the read ends queued after the write node, so its token is
// larger than every token the downgrading thread held, as a fenced store
// needs.
// Upgrade: a thread holding the read lock that asks for the write lock would
// wait for itself for ever: every acquire form throws std::logic_error, and
// nothing is sent.
//
// No silent mix (see zkr/lock.hpp): a lock path holds one protocol. Mutex
// nodes (`..lock-<sequence>`: InterProcessMutex of either library, our
// NonReentrantMutex) or Curator's semaphore children ("locks",
// "leases") on this path make every acquire throw
// KeeperError(Errc::foreign_lock_protocol) naming the path and the nodes
// found; our node is deleted. Our mutexes refuse this lock's nodes the same
// way.
//
// Everything else (timeouts, errors, a Client closing, misuse, what release()
// returning means, the lock directory's removal once idle) is as for
// InterProcessMutex in zkr/lock.hpp.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zkr/client.hpp"
#include "zkr/lock.hpp"

namespace zkr {

class InterProcessReadWriteLock {
 public:
  // One side of the lock: read_lock() or write_lock(). Lockable and
  // TimedLockable (std::scoped_lock, std::unique_lock; std::shared_lock works
  // on read_lock() through lock_shared and friends).
  class Side : public detail::StandardLockable<Side>, public detail::GuardForms<Side> {
   public:
    Side(const Side&) = delete;
    Side& operator=(const Side&) = delete;

    // acquire() and try_acquire*() as InterProcessMutex's, but each throws
    // std::logic_error for an upgrade (the write side, by a thread that holds
    // the read side).

    // Releases one hold of the calling thread; false (and nothing changes)
    // if it holds none. Never throws, never waits for the server.
    bool release() noexcept;

    bool is_acquired_in_this_process() const;
    bool is_owned_by_current_thread() const;
    // The calling thread's grant; throws std::logic_error if it does not hold.
    Grant grant() const;

    // For std::shared_lock.
    void lock_shared() { acquire(); }
    bool try_lock_shared() { return try_acquire(); }
    template <class Rep, class Period>
    bool try_lock_shared_for(const std::chrono::duration<Rep, Period>& d) {
      return try_lock_for(d);
    }
    template <class Clock, class Duration>
    bool try_lock_shared_until(const std::chrono::time_point<Clock, Duration>& t) {
      return try_lock_until(t);
    }
    void unlock_shared() { (void)release(); }

   private:
    friend class InterProcessReadWriteLock;
    friend class detail::StandardLockable<Side>;
    friend class detail::GuardForms<Side>;
    LockGuard take_guard(std::optional<std::chrono::steady_clock::time_point> deadline,
                         std::stop_token stop);
    void take_guard_async(std::optional<std::chrono::steady_clock::time_point> deadline,
                          std::stop_token stop, detail::GuardHandler on_done);
    bool take(std::optional<std::chrono::steady_clock::time_point> deadline, std::stop_token stop);
    const std::string& path() const noexcept;  // what acquire()'s errors name

    struct Impl;
    Side(std::shared_ptr<Impl> shared, bool write);
    std::shared_ptr<Impl> shared_;
    bool write_;
  };

  // Throws std::invalid_argument for a bad path (as InterProcessMutex does,
  // with kMaxReadWriteLockPathLength) or bad options.
  InterProcessReadWriteLock(Client& client, std::string path, LockOptions options = {});
  ~InterProcessReadWriteLock();  // releases what this object still holds; never throws
  InterProcessReadWriteLock(const InterProcessReadWriteLock&) = delete;
  InterProcessReadWriteLock& operator=(const InterProcessReadWriteLock&) = delete;

  Side& read_lock() noexcept { return read_; }
  Side& write_lock() noexcept { return write_; }

  // Every contender's node, readers and writers, in queue order.
  std::vector<std::string> participant_nodes() const;
  const std::string& path() const noexcept;

 private:
  std::shared_ptr<Side::Impl> impl_;
  Side read_;
  Side write_;
};

}  // namespace zkr
