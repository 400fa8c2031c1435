// tools/zkr/group_guard.hpp: a process that kills the command's process group
// if zkr dies before it is done with it.
//
// zkr can die of what it cannot handle: SIGKILL, a signal it does not pass on
// (ALRM, PIPE, XCPU...), a crash. The command's own process has SIGKILL as
// its parent-death signal (command.hpp), but that is not inherited across
// fork: its children and background jobs would run on, unsupervised, while
// zkr's session expires and the next waiter is granted the lock.
//
// So zkr forks a guard: a small process in a process group of its own (a
// signal to zkr's group spares it), ignoring every signal it can, that blocks
// reading a socket only zkr holds the other end of. When zkr dies, however it
// dies, the kernel closes that end; the read returns end of file and the guard
// SIGKILLs the command's group. When zkr is done with the group (it is empty),
// it disarms the guard with one byte: the guard exits without signalling,
// since the group id may by then name another group.
//
//   GroupGuard guard(pgid);   // before the command execs: no window without it
//   ...                       // supervise until the group is empty
//   guard.disarm();
#pragma once

#include <sys/types.h>

namespace zkr::cli {

class GroupGuard {
 public:
  // Forks the guard for process group `pgid`. Throws std::system_error.
  explicit GroupGuard(pid_t pgid);
  // Disarms it (see disarm()).
  ~GroupGuard();
  GroupGuard(const GroupGuard&) = delete;
  GroupGuard& operator=(const GroupGuard&) = delete;

  // Tells the guard to exit without signalling, and reaps it. Call it only
  // once the group is empty, or when it must live on. Idempotent; never throws.
  void disarm() noexcept;

 private:
  pid_t pid_ = -1;
  int socket_ = -1;  // zkr's end
};

}  // namespace zkr::cli
