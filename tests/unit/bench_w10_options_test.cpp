// W10 among the benchmarks' workloads (benchmarks/options.hpp): named on the
// command line, in the default run, with 8 sessions on one counter, and sized
// so that --quick stays a few seconds while a full run times enough adds for
// a p99.
#include <gtest/gtest.h>

#include "options.hpp"

namespace zkr::bench {
namespace {

const std::string kConnect = "127.0.0.1:2181";

TEST(BenchW10Options, W10IsAWorkloadOfItsOwnAndOfTheDefaultRun) {
  const Options picked = parse_options({"--connect", kConnect, "--workloads", "w10,W9,W1"});
  EXPECT_EQ(picked.workloads, (std::vector<std::string>{"W1", "W9", "W10"}));  // canonical order
  EXPECT_TRUE(picked.wants("W10"));
  const Options all = parse_options({"--connect", kConnect});
  EXPECT_TRUE(all.wants("W10"));
  const Options w1 = parse_options({"--connect", kConnect, "--workloads", "W1"});
  EXPECT_FALSE(w1.wants("W10"));
}

TEST(BenchW10Options, EightSessionsQuickFewAddsFullEnoughForAP99) {
  Options options = parse_options({"--connect", kConnect, "--quick"});
  const Plan quick = make_plan(options);
  EXPECT_EQ(quick.w10_workers, 8u);
  EXPECT_LE(quick.w10_adds_per_worker * quick.w10_workers, 1000u);
  EXPECT_LE(quick.w10_duration, std::chrono::milliseconds(3000));
  options.quick = false;
  const Plan full = make_plan(options);
  EXPECT_EQ(full.w10_workers, 8u);
  EXPECT_GE(full.w10_adds_per_worker * full.w10_workers, 10000u);  // 100 beyond the p99
  EXPECT_GT(full.w10_duration, quick.w10_duration);
  // Both sides get the same policy; enough retries that 8 contenders rarely
  // run out of them.
  EXPECT_GE(full.w10_retries, 50u);
  EXPECT_EQ(full.w10_retries, quick.w10_retries);
}

}  // namespace
}  // namespace zkr::bench
