// W4's flatness verdict (benchmarks/w4_verdict.hpp): it must be able to fail.
// It once compared against N = 0, where a hashed root has no buckets yet and
// every cycle pays for making one, so the largest N always looked flat.
#include <gtest/gtest.h>

#include "w4_verdict.hpp"

namespace zkr::bench {
namespace {

TEST(BenchW4Verdict, FlatLatencyMeetsTheTarget) {
  const auto v =
      w4_flatness_verdict("hashed", {{0, 4.0, 1.0}, {1000, 1.0, 1.0}, {1'000'000, 1.2, 1.0}}, true);
  EXPECT_TRUE(v.met) << v.detail;
  EXPECT_TRUE(v.meaningful);
  EXPECT_FALSE(v.check);
  EXPECT_NE(v.detail.find("1.20x"), std::string::npos) << v.detail;
}

TEST(BenchW4Verdict, GrowthIsAMissEvenWhenNZeroWasSlower) {
  // Against N = 0 (4.0 ms) the 1.5 ms at 1M would be 0.38x: "met". Against
  // the smallest N above 0 it is 1.5x.
  const auto v =
      w4_flatness_verdict("hashed", {{0, 4.0, 1.0}, {1000, 1.0, 1.0}, {1'000'000, 1.5, 1.0}}, true);
  EXPECT_FALSE(v.met) << v.detail;
  EXPECT_NE(v.detail.find("1.50x"), std::string::npos) << v.detail;
  EXPECT_NE(v.detail.find("N=1000"), std::string::npos) << v.detail;
}

TEST(BenchW4Verdict, TheBaselineIsTheSmallestNAboveZeroInAnyOrder) {
  const auto v = w4_flatness_verdict(
      "hashed", {{100000, 1.1, 1.0}, {1'000'000, 1.3, 1.0}, {1000, 1.0, 1.0}, {0, 9.0, 1.0}}, true);
  EXPECT_FALSE(v.met) << v.detail;  // 1.3 over 1.0
  EXPECT_NE(v.detail.find("1.30x"), std::string::npos) << v.detail;
}

TEST(BenchW4Verdict, WithoutTwoSizesAboveZeroThereIsNoVerdict) {
  const auto v = w4_flatness_verdict("hashed", {{0, 4.0, 1.0}, {1000, 1.0, 1.0}}, true);
  EXPECT_FALSE(v.met);
  EXPECT_FALSE(v.meaningful) << "a missing baseline must not pass as a met target";
}

TEST(BenchW4Verdict, QuickSizesAreShownNotJudged) {
  const auto v = w4_flatness_verdict("hashed", {{100, 1.0, 1.0}, {1000, 1.1, 1.0}}, false);
  EXPECT_TRUE(v.met);
  EXPECT_FALSE(v.meaningful);
}

TEST(BenchW4Verdict, TheControlRatioIsReported) {
  // Both the cycle and its control doubled: the machine, not N.
  const auto v = w4_flatness_verdict("hashed", {{1000, 1.0, 1.0}, {1'000'000, 2.0, 2.0}}, true);
  EXPECT_FALSE(v.met);
  EXPECT_NE(v.detail.find("control: 1.00x"), std::string::npos) << v.detail;
}

}  // namespace
}  // namespace zkr::bench
