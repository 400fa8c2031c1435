// The floor: the least a ZooKeeper lock can cost. One session of the bare C
// client runs the minimal lock protocol with synchronous calls (create an
// ephemeral sequential node, list the directory, delete the node) on a parent
// that already exists. Every zkr figure is also shown as a ratio to it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "stats.hpp"

namespace zkr::bench {

class Floor {
 public:
  // Connects (std::runtime_error after 15 s) and creates root (a container,
  // which the server reaps once empty) and root/floor.
  Floor(const std::string& connect, const std::string& root);
  // Removes root/floor and closes the session.
  ~Floor();
  Floor(const Floor&) = delete;
  Floor& operator=(const Floor&) = delete;

  // Runs cycles for `duration` or max_cycles, whichever comes first, adding
  // each cycle's time to samples; returns how many. Throws std::runtime_error.
  std::uint64_t cycle_for(std::chrono::milliseconds duration, std::uint64_t max_cycles, Samples& samples);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace zkr::bench
