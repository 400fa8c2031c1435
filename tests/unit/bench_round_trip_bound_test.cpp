// The bound W1's +1 ms verdict prints (benchmarks/round_trip_bound.hpp).
#include <gtest/gtest.h>

#include "round_trip_bound.hpp"

namespace zkr::bench {
namespace {

TEST(BenchRoundTripBound, TheFloorsGrowthGivesTheRoundTripAndOurZeroCycleTheServersCost) {
  // The full run of ec2e273: floor 1.91 -> 5.48 ms at +1 ms, ours 1.40 ms at 0.
  const auto bound = one_round_trip_bound(1.91, 5.48, 1.40);
  ASSERT_TRUE(bound);
  EXPECT_NEAR(bound->round_trip_ms, 1.19, 1e-9);
  EXPECT_NEAR(bound->best_cycle_ms, 2.59, 1e-9);
  EXPECT_NEAR(bound->ratio, 5.48 / 2.59, 1e-9);
}

TEST(BenchRoundTripBound, ARoundTripLongAgainstTheServersCostApproachesThree) {
  const auto bound = one_round_trip_bound(1.0, 1.0 + 3 * 100.0, 1.0);
  ASSERT_TRUE(bound);
  EXPECT_GT(bound->ratio, 2.95);
  EXPECT_LT(bound->ratio, 3.0);
}

TEST(BenchRoundTripBound, NoBoundFromFiguresThatCannotGiveOne) {
  EXPECT_FALSE(one_round_trip_bound(2.0, 2.0, 1.0));  // the floor did not grow
  EXPECT_FALSE(one_round_trip_bound(2.0, 1.5, 1.0));  // nor shrink into a bound
  EXPECT_FALSE(one_round_trip_bound(0.0, 5.0, 1.0));  // no 0 ms floor
  EXPECT_FALSE(one_round_trip_bound(2.0, 5.0, 0.0));  // no 0 ms cycle of ours
}

}  // namespace
}  // namespace zkr::bench
