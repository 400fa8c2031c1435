// tools/zkr/command.hpp: starting the command `zkr lock` runs, and turning
// its end into an exit code the way shells do.
//
//   auto started = spawn_command({"make", "deploy"}, {"ZKR_FENCING_TOKEN=42"}, mask);
//   if (!started.pid) return exit_code_for_spawn_error(started.error);
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace zkr::cli {

struct Spawned {
  std::optional<pid_t> pid;  // set if the command runs
  int error = 0;             // errno from the spawn otherwise
};

// Runs argv (argv[0] searched in $PATH unless it has a '/') with zkr's
// environment plus `extra_env` ("NAME=value", replacing a variable of the
// same name), zkr's stdin, stdout and stderr, and the signal mask `mask`.
// The command stays in zkr's process group, so it keeps the terminal.
Spawned spawn_command(const std::vector<std::string>& argv,
                      const std::vector<std::string>& extra_env, const sigset_t& mask);

// 127 for "not found", 126 for any other reason it could not be run.
int exit_code_for_spawn_error(int error);

// The code a shell reports for a wait status: the exit status, or 128+S
// for a command killed by signal S.
int exit_code_of(int wait_status);

}  // namespace zkr::cli
