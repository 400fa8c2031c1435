// W9 among the benchmarks' workloads (benchmarks/options.hpp): named on the
// command line, in the default run, and sized so that --quick stays a few
// seconds while a full run times enough failovers for a p99.
#include <gtest/gtest.h>

#include "options.hpp"

namespace zkr::bench {
namespace {

const std::string kConnect = "127.0.0.1:2181";

TEST(BenchW9Options, W9IsAWorkloadOfItsOwnAndOfTheDefaultRun) {
  const Options picked = parse_options({"--connect", kConnect, "--workloads", "w9,W1"});
  EXPECT_EQ(picked.workloads, (std::vector<std::string>{"W1", "W9"}));  // canonical order
  const Options all = parse_options({"--connect", kConnect});
  EXPECT_TRUE(all.wants("W9"));
  EXPECT_THROW((void)parse_options({"--connect", kConnect, "--workloads", "W99"}), UsageError);
}

TEST(BenchW9Options, QuickRunsAFewRoundsAndAFullRunEnoughForAP99) {
  Options options = parse_options({"--connect", kConnect, "--quick"});
  const Plan quick = make_plan(options);
  EXPECT_EQ(quick.w9_participants, 3u);
  EXPECT_LE(quick.w9_rounds, 10u);
  EXPECT_LE(quick.w9_duration, std::chrono::milliseconds(3000));
  EXPECT_LE(quick.w9_kill_rounds, 2u);  // each round waits out a session timeout
  options.quick = false;
  const Plan full = make_plan(options);
  EXPECT_GE(full.w9_rounds, 100u);
  EXPECT_GT(full.w9_kill_rounds, quick.w9_kill_rounds);
  // The killed leader's session: short enough for a round of seconds, and
  // within what the servers allow (ZooKeeper's minimum is two ticks).
  EXPECT_GE(full.w9_session_timeout, std::chrono::milliseconds(1000));
  EXPECT_LE(full.w9_session_timeout, std::chrono::milliseconds(5000));
}

}  // namespace
}  // namespace zkr::bench
