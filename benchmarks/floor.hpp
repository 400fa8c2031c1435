// The floor: the least a ZooKeeper lock can cost. One session of the bare C
// client runs the minimal lock protocol with synchronous calls (create an
// ephemeral sequential node, list the directory, delete the node) on a parent
// that already exists. Every zkr figure is also shown as a ratio to it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "stats.hpp"

namespace zkr::bench {

struct FloorResult {
  std::uint64_t cycles = 0;
  double seconds = 0;
  Samples cycle_ms;
};

// Cycles on root/floor for `duration` or max_cycles, whichever comes first.
// root is created as a container if missing (the server reaps it once empty);
// root/floor is created and removed here. Throws std::runtime_error.
FloorResult run_floor(const std::string& connect, const std::string& root,
                      std::chrono::milliseconds duration, std::uint64_t max_cycles);

}  // namespace zkr::bench
