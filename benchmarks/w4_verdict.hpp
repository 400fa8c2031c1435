// W4's target, "cycle latency flat as the root fills", as a pure function of
// the measured points, so that it can be tested (tests/unit/bench_w4_verdict_test.cpp).
//
// The baseline is the smallest N above 0 that was measured, not N = 0: with
// no other keys a hashed root has no buckets, and every cycle at N = 0 pays
// for making its bucket, so N = 0 is slow and any later N looked flat against
// it by construction. From the smallest N on, the buckets exist (N = 1,000
// keys over hashed_for(1M)'s 128 buckets leave none empty), and the
// comparison measures what growth costs.
#pragma once

#include <cstdint>
#include <vector>

#include "report.hpp"

namespace zkr::bench {

struct W4Point {
  std::uint64_t n = 0;
  double p50_ms = 0;          // cycles under the root with N other keys
  double control_p50_ms = 0;  // cycles under an empty root, in the same seconds
};

inline constexpr double kW4FlatnessTarget = 1.25;

// The verdict for one layout (name: "hashed", "flat"). meaningful: the sizes
// are the full run's. Not met, and said why, without two points above N = 0.
Verdict w4_flatness_verdict(const std::string& layout, const std::vector<W4Point>& points,
                            bool meaningful);

}  // namespace zkr::bench
