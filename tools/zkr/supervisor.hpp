// tools/zkr/supervisor.hpp: watching the command `zkr lock` runs, until it
// exits.
//
// While it runs: signals sent to zkr by another process (kill, a service
// manager, a job scheduler) are passed on to it; signals the kernel made for
// the terminal (^C, ^\, a hang-up) are not, because the command is in zkr's
// process group and has had them already. A signal sent to the whole group
// with kill(-pgid) reaches the command twice: the price of keeping it in the
// terminal's foreground group, where it can read the terminal.
//
// When `lost()` turns true (woken through the inbox), the command gets
// SIGTERM, and SIGKILL if it is still running `kill_after` later. Only the
// command's own process is signalled: a command that starts others should
// pass the signal on (in a shell script, `exec` the last command).
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
  int wait_status = 0;
  bool terminated_for_loss = false;  // lost() was seen while it ran
  bool killed = false;               // it outlived kill_after and got SIGKILL
};

// `on_loss` runs once, when lost() is first seen true, before the SIGTERM.
SupervisionResult supervise(pid_t pid, SignalInbox& inbox, const std::function<bool()>& lost,
                            const std::function<void()>& on_loss,
                            std::chrono::milliseconds kill_after, spdlog::logger& log);

}  // namespace zkr::cli
