// The benchmarks' command line (benchmarks/options.hpp): what it refuses, and
// in whose words.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace zkr::bench
