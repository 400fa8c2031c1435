// tools/zkr/supervisor.hpp: watching the command `zkr lock` runs, and
// everything it starts, until all of it is gone.
//
// The command leads a process group of its own (command.hpp), and zkr is the
// child subreaper of its process tree: a process of the group whose parent
// exits is handed to zkr, which reaps it when it exits. Supervision ends only
// when the command's own process has exited and no process is left in its
// group (background jobs included), so the lock is never released while
// anything of the command runs.
//
// While it runs, the signals zkr handles (SIGINT, SIGTERM, ...) are passed on
// to the whole group, whether another process sent them or the terminal did:
// the command is not in zkr's process group, so the terminal's ^C reaches
// zkr alone.
//
// When `lost()` turns true (woken through the inbox), the group gets SIGTERM,
// and SIGKILL if anything of it is still there `kill_after` later.
//
// SIGTSTP (a terminal's ^Z) is not passed on: zkr stops the whole group
// (SIGSTOP, which the command cannot ignore), then itself, and when continued
// lets the group go on once its grant is proved again (grant_watch.hpp). The
// group must not run while zkr cannot watch its lock.
//
// Outside the terminal's foreground group, a command that reads the terminal
// gets SIGTTIN and stops for good, still holding the lock. zkr says so on
// stderr, and from then on follows every signal it sends with SIGCONT, since
// a stopped process acts on no other signal but SIGKILL; but never while the
// grant is unproved, when the group must stay stopped.
//
// When the lock is lost, the group is woken (SIGCONT) to act on the SIGTERM
// even if it is stopped for want of a proof, as long as the session cannot
// have expired yet; past that point (zkr was stopped or starved for a whole
// session timeout) the next holder may be running, and the group gets SIGKILL
// at once.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>

#include "signal_inbox.hpp"

namespace spdlog {
class logger;
}

namespace zkr::cli {

struct SupervisionResult {
  int exit_code = 0;                 // of the command's own process, as a shell reports it
  bool terminated_for_loss = false;  // lost() was seen while the group ran
  bool killed = false;               // the group outlived kill_after and got SIGKILL
};

// What zkr knows of its grant while the group runs (grant_watch.hpp).
struct GrantHooks {
  std::function<bool()> may_run;            // the group may run now
  std::function<bool()> may_end_gently;     // lost: may the group still act on SIGTERM?
  std::function<void()> stop_with_command;  // ^Z: stop group and zkr; returns once continued
};

// `pgid` is the command's pid and group. `on_loss` runs once, when lost() is
// first seen true, before the SIGTERM. Throws std::system_error if waiting
// fails: the group may then still run.
SupervisionResult supervise(pid_t pgid, SignalInbox& inbox, const std::function<bool()>& lost,
                            const std::function<void()>& on_loss, const GrantHooks& grant,
                            std::chrono::milliseconds kill_after, spdlog::logger& log);

}  // namespace zkr::cli
