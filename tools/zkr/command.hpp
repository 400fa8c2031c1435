// tools/zkr/command.hpp: starting the command `zkr lock` runs, in a process
// group of its own, and turning its end into an exit code the way shells do.
//
//   auto started = spawn_command({"make", "deploy"}, {"ZKR_FENCING_TOKEN=42"}, mask,
//                                [&](pid_t pgid) { guard.emplace(pgid); });
//   if (!started.pid) return exit_code_for_spawn_error(started.error);
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace zkr::cli {

struct Spawned {
  std::optional<pid_t> pid;  // set if the command runs: also its process group's id
  int error = 0;             // errno from the spawn otherwise
};

// Runs argv (argv[0] searched in $PATH unless it has a '/') with zkr's
// environment plus `extra_env` ("NAME=value", replacing a variable of the
// same name), and the signal mask `mask`. The command:
//   - leads a new process group, so that zkr can signal it and everything it
//     starts at once, and tell when all of it is gone;
//   - gets SIGKILL when zkr dies (its parent-death signal);
//   - has zkr's stdin, stdout and stderr and no other descriptor of zkr's
//     (its ZooKeeper socket, the C client's pipes).
// `before_exec(pgid)` runs in zkr after the group exists and before the
// command execs, so nothing of the command runs before it returns; if it
// throws, the command is not run (and reaped) and the exception propagates.
Spawned spawn_command(const std::vector<std::string>& argv,
                      const std::vector<std::string>& extra_env, const sigset_t& mask,
                      const std::function<void(pid_t pgid)>& before_exec);

// 127 for "not found", 126 for any other reason it could not be run.
int exit_code_for_spawn_error(int error);

// The code a shell reports for a child's end as waitid() tells it: the exit
// status, or 128+S for a child killed by signal S.
int exit_code_of(const siginfo_t& info);

}  // namespace zkr::cli
