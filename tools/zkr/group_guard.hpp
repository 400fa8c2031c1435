// tools/zkr/group_guard.hpp: a process that keeps the command's process group
// from running when zkr can no longer vouch for the lock: when zkr dies, and
// when zkr is stopped or starved past the point where its session may expire.
//
// zkr can die of what it cannot handle: SIGKILL, a signal it does not pass on
// (ALRM, PIPE, XCPU...), a crash. The command's own process has SIGKILL as
// its parent-death signal (command.hpp), but that is not inherited across
// fork: its children and background jobs would run on, unsupervised, while
// zkr's session expires and the next waiter is granted the lock. And zkr can
// be stopped without dying: SIGSTOP (which no process can catch), a debugger,
// a host that swaps it out. Its session then expires on the servers while its
// command runs on.
//
// So zkr forks a guard: a small process in a process group of its own (a
// signal to zkr's group, a terminal's ^Z included, spares it), ignoring every
// signal it can. It listens on a socket only zkr holds the other end of:
//   - zkr sends it a proof of its grant every so often (the send time of a
//     read that showed our lock node owned by our session); the guard stops
//     the group (SIGSTOP) when the latest proof is too old, lets it go on
//     (SIGCONT) when a fresh one comes, and kills it (SIGKILL) when zkr has
//     been silent far past its session timeout (pause_rule.hpp says when,
//     and why that is safe);
//   - when zkr stops for ^Z it says so, and the group stays stopped until
//     zkr says it runs again;
//   - when zkr ends the group for a lost lock, it says so, and the guard no
//     longer stops it (it must act on SIGTERM);
//   - when zkr dies, however it dies, the kernel closes zkr's end: the guard
//     reads end of file and SIGKILLs the group;
//   - when zkr is done with the group (it is empty), it disarms the guard:
//     the guard exits without signalling, since the group id may by then
//     name another group.
//
// What it cannot do: a guard stopped together with zkr (SIGSTOP to both, or a
// host so starved that neither runs for half a session timeout) stops nothing.
//
//   GroupGuard guard(pgid, session_timeout, proven);  // before the command execs
//   guard.proved(sent);       // from the thread that proves the grant
//   guard.hold(); ...; guard.release();                // around zkr's own stop
//   guard.disarm();           // once the group is empty
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>

namespace zkr::cli {

class GroupGuard {
 public:
  // Forks the guard for process group `pgid`. `session_timeout`: the timeout
  // the server granted; `proven_ns`: the send time (boottime_ns()) of a read
  // that proved the grant. Throws std::system_error.
  GroupGuard(pid_t pgid, std::chrono::milliseconds session_timeout, std::int64_t proven_ns);
  // Disarms it (see disarm()).
  ~GroupGuard();
  GroupGuard(const GroupGuard&) = delete;
  GroupGuard& operator=(const GroupGuard&) = delete;

  // The grant was proved by a request sent at `sent_ns`. Any thread; never
  // blocks (a proof the guard has no room for is dropped: it only makes the
  // guard stop the group sooner).
  void proved(std::int64_t sent_ns) noexcept;
  // zkr has stopped the group and is about to stop itself: keep the group
  // stopped until release(). Blocks only while the guard's socket is full.
  void hold() noexcept;
  // zkr runs again: the group goes on if the latest proof allows.
  void release() noexcept;
  // zkr found the lock lost and is ending the group (SIGTERM, then SIGKILL):
  // stop it no more, kill it only when zkr has been silent for 2T.
  void terminating() noexcept;

  // Tells the guard to exit without signalling, and reaps it. Call it only
  // once the group is empty, or when it must live on. Idempotent; never throws.
  void disarm() noexcept;

 private:
  void send(char kind, std::int64_t value, int flags) noexcept;

  pid_t pid_ = -1;
  int socket_ = -1;  // zkr's end
};

}  // namespace zkr::cli
