// W1 at added latency: the most any lock whose cycle makes one round trip can
// show against the floor, from figures of the same run. A pure function, so
// that it can be tested (tests/unit/bench_round_trip_bound_test.cpp).
//
// A cycle cannot be shorter than one round trip plus what the servers spend
// on it, which is what our cycle costs with no latency added (its quorum
// write and a loopback trip). The floor's cycle makes three round trips, so
// its growth over its own 0 ms cycle, divided by three, is the round trip
// the delay proxies really add (their own cost included).
#pragma once

#include <optional>

namespace zkr::bench {

struct RoundTripBound {
  double round_trip_ms = 0;  // one added round trip, as the floor measured it
  double best_cycle_ms = 0;  // our 0 ms cycle plus that round trip
  double ratio = 0;          // the floor's cycle over best_cycle_ms
};

// All p50s of W1 cycles, in ms. nullopt when the figures cannot bound
// anything: a floor that did not grow with the latency, or a missing cycle.
std::optional<RoundTripBound> one_round_trip_bound(double floor_at_zero_ms, double floor_ms,
                                                   double ours_at_zero_ms);

}  // namespace zkr::bench
