// tests/chaos/chaos_options.hpp: the command line of zkr-chaos, read with
// CLI11 as zkr's is.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "nemesis.hpp"

namespace zkr::chaos {

struct Options {
  int seconds = 75;
  std::uint64_t seed = 0;
  bool seed_given = false;
  int workers = 4;
  int threads = 2;
  int keys = 3;
  int supervisors = 2;  // `zkr lock` runs on one key of their own
  std::chrono::milliseconds session_timeout{4000};
  std::vector<std::string> faults = kFaultKinds;
  std::string out;
  bool keep = false;
  std::string broken = "none";
  std::vector<std::string> expect_violations;  // rules a broken run must be caught by
  std::string check_dir;  // --check: only run the checker on a finished run's records
};

// Throws std::invalid_argument for bad usage (and with the usage line for
// --help). Without the zkr tool (have_zkr false) there are no supervisors.
Options parse_options(int argc, char** argv, bool have_zkr);

}  // namespace zkr::chaos
