// The bench's judgement summed over rounds (benchmarks/critical_section.hpp):
// W6 and W7 run several rounds when Curator's runs beside ours, and a figure
// the report takes from the sum must survive it, not read 0.
#include <gtest/gtest.h>

#include "critical_section.hpp"

namespace zkr::bench {
namespace {

exclusion::HolderInterval hold(std::int64_t thread, std::int64_t enter, std::int64_t exit,
                               std::int64_t token, const std::string& kind) {
  return {1, thread, enter, exit, token, kind};
}

TEST(BenchJudgement, RoundsKeepTheMostReadersAtOnce) {
  // Round one: three readers together, then a writer. Round two: two together.
  Judgement sum = judge({hold(0, 10, 20, 1, "read"), hold(1, 11, 21, 2, "read"),
                         hold(2, 12, 22, 3, "read"), hold(3, 30, 40, 4, "write")},
                        1);
  sum.add(judge({hold(0, 100, 110, 5, "read"), hold(1, 101, 111, 6, "read")}, 0));
  EXPECT_EQ(sum.report.most_shared_at_once, 3u);
  EXPECT_EQ(sum.report.shared_intervals, 5u);
  EXPECT_EQ(sum.violations(), 0u);
}

TEST(BenchJudgement, ALaterRoundWithMoreReadersRaisesTheMost) {
  Judgement sum = judge({hold(0, 10, 20, 1, "read")}, 0);
  sum.add(judge({hold(0, 100, 110, 5, "read"), hold(1, 101, 111, 6, "read")}, 0));
  EXPECT_EQ(sum.report.most_shared_at_once, 2u);
}

}  // namespace
}  // namespace zkr::bench
