// `zkr counter` run as a user runs it: the value printed, the node it writes
// (Curator's 8-byte long, or 4-byte int with --int32), and the exit codes of
// a usage error, a conflict and a node that is not a counter.
#include <gtest/gtest.h>

#include <string>

#include "counter_write.hpp"
#include "integration/zkr_cli_support.hpp"

namespace zkr {
namespace {

using test::cli::run_zkr;
using test::cli::TempDir;
using test::cli::ZkrCliTest;

TEST(ZkrCounterUsage, HelpAndUsageErrors) {
  TempDir dir;
  const auto help = run_zkr(dir, {"counter", "--help"});
  EXPECT_EQ(help.code, 0) << help.err;
  EXPECT_NE(help.out.find("Usage: zkr counter PATH"), std::string::npos) << help.out;
  for (const char* code : {"64", "65", "69", "80", "81"})
    EXPECT_NE(help.out.find(code), std::string::npos) << "exit code " << code << " undocumented";
  EXPECT_NE(run_zkr(dir, {"--help"}).out.find("counter"), std::string::npos);
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"counter"},
                                              {"counter", "/a", "/b"},
                                              {"counter", "/a", "--add", "x"},
                                              {"counter", "/a", "--add", "1", "--set", "2"},
                                              {"counter", "/a", "--cas", "1"},
                                              {"counter", "/a", "--int32", "--set", "2147483648"},
                                              {"counter", "a"},
                                              {"counter", "/"}}) {
    const auto ran = run_zkr(dir, bad);
    EXPECT_EQ(ran.code, 64) << bad.back() << ": " << ran.err;
    EXPECT_TRUE(ran.out.empty()) << ran.out;
  }
}

class ZkrCounterTest : public ZkrCliTest {
 protected:
  std::string data_of(const std::string& path) {
    keeper().sync(path);
    return keeper().get(path).data;
  }
};

TEST_F(ZkrCounterTest, AddSetAndCasOnAnEightByteLong) {
  TempDir dir;
  const std::string path = root_ + "/deploys/count";
  auto ran = run_zkr(dir, {"counter", path});
  EXPECT_EQ(ran.code, 0) << ran.err;
  EXPECT_EQ(ran.out, "0\n") << "a missing counter reads 0";
  EXPECT_FALSE(keeper().exists(path)) << "a read made the node";
  ran = run_zkr(dir, {"counter", path, "--add", "5"});
  EXPECT_EQ(ran.code, 0) << ran.err;
  EXPECT_EQ(ran.out, "5\n");
  EXPECT_EQ(data_of(path), detail::encode_int64(5));
  ran = run_zkr(dir, {"counter", path, "--add", "-7"});
  EXPECT_EQ(ran.out, "-2\n") << ran.err;
  ran = run_zkr(dir, {"counter", path, "--set", "40"});
  EXPECT_EQ(ran.out, "40\n") << ran.err;
  ran = run_zkr(dir, {"counter", path, "--cas", "40", "41"});
  EXPECT_EQ(ran.code, 0) << ran.err;
  EXPECT_EQ(ran.out, "41\n");
  ran = run_zkr(dir, {"counter", path, "--cas", "40", "50"});
  EXPECT_EQ(ran.code, 80) << ran.err;
  EXPECT_EQ(ran.out, "41\n") << "a conflict prints the value found";
  EXPECT_NE(ran.err.find("does not hold 40"), std::string::npos) << ran.err;
  EXPECT_EQ(data_of(path), detail::encode_int64(41));
  ran = run_zkr(dir, {"counter", path, "--get"});
  EXPECT_EQ(ran.out, "41\n");
}

TEST_F(ZkrCounterTest, Int32IsSharedCountsFourBytes) {
  TempDir dir;
  const std::string path = root_ + "/generation";
  auto ran = run_zkr(dir, {"counter", path, "--int32", "--add", "3"});
  EXPECT_EQ(ran.code, 0) << ran.err;
  EXPECT_EQ(ran.out, "3\n");
  EXPECT_EQ(data_of(path), detail::encode_int32(3));
  ran = run_zkr(dir, {"counter", path, "--int32", "--cas", "3", "-9"});
  EXPECT_EQ(ran.out, "-9\n") << ran.err;
  ran = run_zkr(dir, {"counter", path, "--int32", "--cas", "3", "4"});
  EXPECT_EQ(ran.code, 80);
  EXPECT_EQ(ran.out, "-9\n");
  ran = run_zkr(dir, {"counter", path, "--int32", "--set", "2147483647"});
  EXPECT_EQ(ran.out, "2147483647\n") << ran.err;
  ran = run_zkr(dir, {"counter", path, "--int32", "--add", "1"});  // Java's int wraps
  EXPECT_EQ(ran.out, "-2147483648\n") << ran.err;
  // The same node read as a long is the wrong size: refused, untouched.
  ran = run_zkr(dir, {"counter", path, "--add", "1"});
  EXPECT_EQ(ran.code, 65) << ran.err;
  EXPECT_NE(ran.err.find(path), std::string::npos) << ran.err;
  EXPECT_NE(ran.err.find("4 bytes"), std::string::npos) << ran.err;
  EXPECT_EQ(data_of(path), detail::encode_int32(-2147483648));
}

}  // namespace
}  // namespace zkr
