// W8's per-key check (benchmarks/w8_ledger.hpp): it must count two holders
// at once and a fencing token that does not rise, and time the hand-off from
// the previous release.
#include <gtest/gtest.h>

#include "w8_ledger.hpp"

namespace zkr::bench {
namespace {

TEST(BenchW8Ledger, HoldsInTurnWithRisingTokensAreClean) {
  KeyLedger key;
  (void)key.granted(10, 1'000'000);
  key.releasing(2'000'000);
  EXPECT_DOUBLE_EQ(key.granted(11, 5'000'000), 3.0);  // 3 ms after the release
  key.releasing(6'000'000);
  (void)key.granted(40, 6'500'000);
  key.releasing(7'000'000);
  EXPECT_EQ(key.violations(), 0u);
}

TEST(BenchW8Ledger, ASecondHolderBeforeTheReleaseIsAViolation) {
  KeyLedger key;
  (void)key.granted(10, 1);
  (void)key.granted(11, 2);  // the first never said releasing()
  EXPECT_EQ(key.violations(), 1u);
}

TEST(BenchW8Ledger, ATokenThatDoesNotRiseIsAViolation) {
  KeyLedger key;
  (void)key.granted(10, 1);
  key.releasing(2);
  (void)key.granted(10, 3);  // the same token again
  key.releasing(4);
  (void)key.granted(9, 5);  // an older one
  EXPECT_EQ(key.violations(), 2u);
}

}  // namespace
}  // namespace zkr::bench
