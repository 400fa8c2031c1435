// The report that ends every chaos run: the figures a reader wants first
// (acquisitions, faults by kind, violations, orphans, longest stall), then the
// examples of anything that went wrong.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checker.hpp"

namespace zkr::chaos {

struct RunInfo {
  std::uint64_t seed = 0;
  int fault_seconds = 0;
  int workers = 0;
  int threads = 0;
  std::int64_t session_timeout_ms = 0;
  std::string broken;  // "none" for a real run
  std::string dir;
  double wall_seconds = 0;
  std::vector<std::string> run_problems;  // from the runner: workers, healing...
};

std::string format_report(const RunInfo& info, const CheckResult& result);

}  // namespace zkr::chaos
