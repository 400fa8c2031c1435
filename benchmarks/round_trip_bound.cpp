#include "round_trip_bound.hpp"

namespace zkr::bench {

std::optional<RoundTripBound> one_round_trip_bound(double floor_at_zero_ms, double floor_ms,
                                                   double ours_at_zero_ms) {
  if (floor_at_zero_ms <= 0 || ours_at_zero_ms <= 0 || floor_ms <= floor_at_zero_ms)
    return std::nullopt;
  RoundTripBound bound;
  bound.round_trip_ms = (floor_ms - floor_at_zero_ms) / 3;
  bound.best_cycle_ms = ours_at_zero_ms + bound.round_trip_ms;
  bound.ratio = floor_ms / bound.best_cycle_ms;
  return bound;
}

}  // namespace zkr::bench
