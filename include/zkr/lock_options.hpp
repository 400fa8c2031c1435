// zkr/lock_options.hpp: what every lock and semaphore is configured with
// (LockOptions), and the limits of its path and of reentrancy. Its own
// header, so that the queue engine under the recipes depends on these and
// not on the classes built on it (zkr/lock.hpp).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "zkr/path.hpp"
#include "zkr/types.hpp"

namespace zkr {

// The longest name each lock puts below its path, and so the longest path
// each takes: it leaves room for the name, so that every node a lock creates
// can also be read and deleted. The sequence is ten digits, eleven once the
// server's counter has gone negative.
//   InterProcess(Semaphore)Mutex  "/_c_<guid>-lock-<sequence>"          57
//   InterProcessReadWriteLock     "/_c_<guid>-__READ__<sequence>"       60
//   the semaphores of semaphore.hpp "/leases/_c_<guid>-lease-<sequence>" 65
inline constexpr std::size_t kMaxLockNodeSuffix = 57;
inline constexpr std::size_t kMaxLockPathLength = kMaxPathLength - kMaxLockNodeSuffix;
inline constexpr std::size_t kMaxReadWriteNodeSuffix = 60;
inline constexpr std::size_t kMaxReadWriteLockPathLength = kMaxPathLength - kMaxReadWriteNodeSuffix;
inline constexpr std::size_t kMaxSemaphoreNodeSuffix = 65;
inline constexpr std::size_t kMaxSemaphorePathLength = kMaxPathLength - kMaxSemaphoreNodeSuffix;

// How many times one thread may hold one InterProcessMutex at once. Real
// nesting is a few levels deep, and no call stack nests a million; a count
// this high means acquires without releases, a bug better reported early
// than left to grow toward overflow.
inline constexpr std::uint32_t kMaxReentrantHolds = 1'000'000;

namespace detail {
class LayoutGate;
}  // namespace detail

enum class SuspendedPolicy {
  lost,    // Curator's standard policy: a suspended link already means lost
  ignore,  // Curator's session policy: only a lost session means lost
};

// The longest LockOptions::holder_id.
inline constexpr std::size_t kMaxHolderIdLength = 1024;

struct LockOptions {
  // Written into the lock node, for operators: one line of printable text, at
  // most kMaxHolderIdLength bytes (else the lock's constructor throws
  // std::invalid_argument). Unset: "host=..;pid=..;thread=..".
  std::string holder_id;
  // The ACL of the lock directories, their missing parents and the lock nodes
  // this lock creates. Unset: world:anyone with every permission, whatever the
  // Client's default ACL (creator-only when it has auth): every contender, of
  // any identity (Curator processes too), must be able to create its node in
  // the directory, read the node before it, and remove the directory once
  // empty. Nothing in a lock node is trusted, so a foreign write there can
  // only make a holder see revocation_requested().
  std::optional<AclList> acl;
  SuspendedPolicy suspended_policy = SuspendedPolicy::lost;
  // A waiter whose session is lost re-enters the queue in the new session if
  // the Client's retry policy allows; false: the acquire fails at once.
  bool requeue_after_session_loss = true;
  // Remove the lock directory once it is idle, so that keys locked once leave
  // no znode behind: when no acquire of this Client has used it for
  // directory_grace, at once when the last lock object on it is destroyed,
  // and at once when the Client closes. Only an empty directory carrying
  // kLockDirectoryMark (one this library made) is removed, proven empty at
  // the moment of the delete. Until then the Client knows it exists and does
  // not create it again: an uncontended acquire and release is then two
  // writes, the lock node's create and delete. False: keep it; for a
  // directory you made yourself, with an ACL of your own, say.
  bool remove_directory_on_release = true;
  // How long a directory stays after its last use while a lock object on it
  // lives (see above). Not negative (std::invalid_argument).
  std::chrono::milliseconds directory_grace{1000};
  // Queue beside kazoo's (Python) locks on this path instead of refusing them:
  // kazoo's "__lock__" and "__rlock__" nodes become contenders in our one
  // queue, ordered by sequence as kazoo orders them (a read/write lock takes
  // "__lock__" as a writer and "__rlock__" as a reader; a mutex both as
  // contenders). Safe only if every kazoo lock on the path waits for ours,
  // which its nodes cannot show: a mutex's kazoo side must be made with
  // Lock(client, path, extra_lock_patterns=["-lock-"]), a read/write lock's
  // with WriteLock(..., extra_lock_patterns=["__READ__", "__WRIT__"]) and
  // ReadLock(..., extra_lock_patterns=["__WRIT__"]). False: a lock that finds
  // kazoo's nodes throws KeeperError(foreign_lock_protocol). Semaphores
  // ignore it: they never share a path with kazoo.
  bool share_with_kazoo = false;
  /// Set by LockFactory for its locks, never by hand: the check of the
  /// root's layout record that every acquire waits for (zkr/lock_factory.hpp).
  std::shared_ptr<detail::LayoutGate> layout_gate;
};

}  // namespace zkr
