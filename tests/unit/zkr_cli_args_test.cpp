// The zkr verbs' command line (tools/zkr/args.*): an option given with an
// empty value is refused by name, among zkr's own options only; the words
// of the command that `zkr lock PATH CMD...` runs are the command's.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "args.hpp"

namespace zkr::cli {
namespace {

const std::vector<OptionSpec> kSpecs{
    {"connect", 0, true, "HOSTS", "the ensemble"},
    {"connect-timeout", 0, true, "D", "connect within D"},
    {"status-file", 0, true, "PATH", "write the outcome here"},
    {"verbose", 'v', false, "", "log more"},
};

std::string refusal(const std::vector<std::string>& args, std::size_t until = 1) {
  try {
    (void)parse_args(args, kSpecs, until);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(ZkrCliArgs, AnEmptyValueIsNoValueNotTheNextWord) {
  EXPECT_EQ(refusal({"/a", "--connect-timeout=", "--connect", "h:1", "--", "true"}),
            "--connect-timeout needs a value (D)");
  EXPECT_EQ(refusal({"/a", "--status-file=", "--", "true"}), "--status-file needs a value (PATH)");
  EXPECT_EQ(refusal({"/a", "--status-file", "--", "true"}), "--status-file needs a value (PATH)");
  EXPECT_EQ(refusal({"--connect="}, kAllOptions), "--connect needs a value (HOSTS)");
}

TEST(ZkrCliArgs, TheCommandsOwnWordsAreNotOurOptions) {
  // After PATH, the first word that is no option starts the command, whose
  // words reach it as they are, empty values included.
  const auto parsed =
      parse_args({"/a", "--connect", "h:1", "curl", "--connect-timeout=", "-v"}, kSpecs, 1);
  EXPECT_EQ(parsed.value("connect"), "h:1");
  EXPECT_FALSE(parsed.has("connect-timeout"));
  EXPECT_FALSE(parsed.has("verbose"));
  EXPECT_EQ(parsed.operands(),
            (std::vector<std::string>{"/a", "curl", "--connect-timeout=", "-v"}));
  // And after "--", whatever they are.
  const auto ended = parse_args({"/a", "--", "sh", "--status-file="}, kSpecs, 1);
  EXPECT_FALSE(ended.has("status-file"));
  EXPECT_EQ(ended.operands(), (std::vector<std::string>{"/a", "sh", "--status-file="}));
}

TEST(ZkrCliArgs, AValueGivenWithEqualsOrAfterIsTaken) {
  const auto parsed =
      parse_args({"/a", "--connect=h:1", "--status-file", "s", "--", "true"}, kSpecs, 1);
  EXPECT_EQ(parsed.value("connect"), "h:1");
  EXPECT_EQ(parsed.value("status-file"), "s");
  EXPECT_EQ(parsed.operands(), (std::vector<std::string>{"/a", "true"}));
}

}  // namespace
}  // namespace zkr::cli
