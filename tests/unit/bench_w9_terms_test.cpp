// W9's election check (benchmarks/w9_terms.hpp): it must time each failover
// from the previous leader's close, give no failover for the first term, and
// count two leaders at once and an epoch that does not rise.
#include <gtest/gtest.h>

#include "w9_terms.hpp"

namespace zkr::bench {
namespace {

TEST(BenchW9Terms, TheFirstTermHasNoFailoverAndTheNextIsTimedFromTheClose) {
  TermLedger terms;
  EXPECT_FALSE(terms.started(100, 1'000'000).has_value());
  terms.closing(2'000'000);
  const auto failover = terms.started(105, 6'500'000);
  ASSERT_TRUE(failover.has_value());
  EXPECT_DOUBLE_EQ(*failover, 4.5);  // 4.5 ms after the close() call
  terms.closing(7'000'000);
  const auto next = terms.started(110, 7'250'000);
  ASSERT_TRUE(next.has_value());
  EXPECT_DOUBLE_EQ(*next, 0.25);
  EXPECT_EQ(terms.terms(), 3u);
  EXPECT_EQ(terms.violations(), 0u);
}

TEST(BenchW9Terms, ASecondLeaderBeforeTheCloseIsAViolation) {
  TermLedger terms;
  (void)terms.started(100, 1);
  (void)terms.started(101, 2);  // the first never said closing()
  EXPECT_EQ(terms.violations(), 1u);
}

TEST(BenchW9Terms, AnEpochThatDoesNotRiseIsAViolation) {
  TermLedger terms;
  (void)terms.started(100, 1);
  terms.closing(2);
  (void)terms.started(100, 3);  // the same node's czxid again
  terms.closing(4);
  (void)terms.started(90, 5);  // an older node
  EXPECT_EQ(terms.violations(), 2u);
}

}  // namespace
}  // namespace zkr::bench
