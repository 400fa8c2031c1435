// Progress of long steps, on stderr, at most one line every few seconds so
// that a log of a full run stays readable.
#pragma once

#include <cstdint>
#include <string>

#include "stats.hpp"

namespace zkr::bench {

class Progress {
 public:
  // total 0: unknown.
  Progress(std::string what, std::uint64_t total);
  // Says how far along we are, if the last line is old enough. Thread-safe
  // enough for one caller at a time (each Progress has one owner).
  void update(std::uint64_t done);

 private:
  std::string what_;
  std::uint64_t total_;
  Clock::time_point start_;
  Clock::time_point last_;
};

}  // namespace zkr::bench
