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
//     auto result = zkr::guarded_write(*client.keeper(), both.leases(), ops);
//     both.release();
//   }
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zkr/lock.hpp"

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
  // In canonical order.
  const std::vector<std::string>& paths() const noexcept;
  // The calling thread's leases, in paths() order; throws std::logic_error if
  // it does not hold them.
  std::vector<LockLease> leases() const;

 private:
  friend class detail::StandardLockable<MultiLock>;
  enum class Outcome { held, timed_out, lease_lost };
  // Without a deadline: true, or throws (acquire()'s check never fails).
  bool take(std::optional<std::chrono::steady_clock::time_point> deadline, std::stop_token stop);
  Outcome take_once(std::optional<std::chrono::steady_clock::time_point> deadline,
                    const std::stop_token& stop);
  bool all_current(std::size_t n) const;  // the first n leases: not lost, this session
  // What errors about the whole set name, as take's own do.
  const std::string& path() const noexcept { return paths_.front(); }

  Client& client_;
  std::vector<std::string> paths_;
  std::vector<std::unique_ptr<InterProcessMutex>> locks_;  // in paths_ order
};

}  // namespace zkr
