// The benchmarks' command line (benchmarks/options.hpp): what it refuses, and
// in whose words.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "options.hpp"

namespace zkr::bench {
namespace {

const std::string kConnect = "127.0.0.1:2181";

std::string refusal(const std::vector<std::string>& args) {
  try {
    (void)parse_options(args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(BenchOptions, AnEmptyValueIsRefusedAndTheNextWordKeepsItsMeaning) {
  // CLI11 alone would take "--quick" for the root, and "--connect" for the
  // directory, and lose that option.
  EXPECT_EQ(refusal({"--connect", kConnect, "--root=", "--quick"}), "--root needs a value");
  EXPECT_EQ(refusal({"--out=", "--connect", kConnect}), "--out needs a value");
  EXPECT_EQ(refusal({"--connect=", kConnect}), "--connect needs a value");
  // A flag with "=" is no empty value: it is a value given to a flag.
  EXPECT_EQ(refusal({"--connect", kConnect, "--quick="}), "--quick takes no value");
  // Unknown options keep their own message.
  EXPECT_EQ(refusal({"--connect", kConnect, "--nope="}), "unknown option '--nope=' (see --help)");
  const Options good = parse_options({"--connect", kConnect, "--root=/zkr-bench", "--quick"});
  EXPECT_EQ(good.root, "/zkr-bench");
  EXPECT_TRUE(good.quick);
}

// What keeps `zkr bench --quick` (and bench_test, which runs it) quick is the
// sizes it picks, not the machine: they are checked here rather than timed.
TEST(BenchOptions, QuickPicksSmallSizesForEveryWorkload) {
  using std::chrono::milliseconds;
  const Plan quick = make_plan(parse_options({"--connect", kConnect, "--quick"}));
  const Plan full = make_plan(parse_options({"--connect", kConnect}));
  // The time-bound parts, each and in all: W1 (and the floor's), W2, W4's
  // longest cycle set per N, W5 per N, W9, W10.
  const std::vector<milliseconds> bounds{quick.w1_duration,     quick.w2_duration,
                                         quick.w4_max_duration, quick.w5_duration,
                                         quick.w9_duration,     quick.w10_duration};
  milliseconds all{0};
  for (const auto bound : bounds) {
    EXPECT_LE(bound, milliseconds(5000));
    all += bound;
  }
  EXPECT_LE(all, milliseconds(20000));
  // The count-bound parts: a thousand requests or so each.
  EXPECT_LE(quick.w3_keys.back(), 1000u);
  EXPECT_LE(quick.w4_keys.back(), 1000u);
  EXPECT_LE(quick.w5_waiters.back(), 10u);
  EXPECT_LE(quick.w8_keys * quick.w8_waiters_per_key, 200u);
  EXPECT_LE(quick.w10_changes, 100u);
  EXPECT_LE(quick.w10_cache_rounds, 2u);
  EXPECT_EQ(quick.rtts_ms, std::vector<double>{0});
  // And a full run is no quick one.
  EXPECT_GT(full.w1_duration, quick.w1_duration);
  EXPECT_GT(full.w3_keys.back(), quick.w3_keys.back());
  EXPECT_GT(full.w8_keys * full.w8_waiters_per_key, quick.w8_keys * quick.w8_waiters_per_key);
}

}  // namespace
}  // namespace zkr::bench
