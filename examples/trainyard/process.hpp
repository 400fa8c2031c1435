// Child processes of the train yard's orchestrator: the workers (this binary
// again) and scripts/ensemble, for --chaos.
//
//   const pid_t pid = trainyard::spawn({"/proc/self/exe", "--worker", "0", ...});
//   const int code = trainyard::wait_exit(pid);
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace trainyard {

// Runs args[0] (looked up on PATH unless it has a '/') with no signal
// blocked, its stdout sent to our stderr; returns its pid. Throws
// std::runtime_error if it cannot be started.
pid_t spawn(const std::vector<std::string>& args);

// Waits for pid to end: its exit code, 128 + signal if killed, -1 on error.
int wait_exit(pid_t pid);

// Asks scripts/ensemble (the path `script`) which server leads: "1", "2", ...;
// "" if it cannot tell.
std::string ensemble_leader(const std::string& script);

}  // namespace trainyard
