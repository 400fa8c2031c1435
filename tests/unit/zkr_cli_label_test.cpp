// The zkr tool's pure pieces that `zkr lock` and `zkr elect` share: the
// check of a label written into a queue node (--holder, --id), and the
// --status-file line with a verb's own field (zkr elect's epoch).
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "args.hpp"
#include "status_file.hpp"

namespace zkr::cli {
namespace {

std::string refusal(const std::string& text) {
  try {
    check_label(text, "--id", "ID");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(ZkrCliLabel, PrintableTextUpToTheLimitIsTaken) {
  for (const std::string& ok : {std::string("host=a;pid=1"), std::string("ünïcödé ✓"),
                                std::string(kMaxLabelBytes, 'x'), std::string("a b")})
    EXPECT_EQ(refusal(ok), "") << ok;
}

TEST(ZkrCliLabel, EmptyTooLongOrControlCharactersAreRefusedNamingTheOption) {
  EXPECT_EQ(refusal(""), "--id needs a non-empty ID");
  EXPECT_EQ(refusal(std::string(kMaxLabelBytes + 1, 'x')),
            "--id: ID is 1025 bytes long, more than 1024");
  EXPECT_EQ(refusal("a\nb"),
            "--id: ID has a control character (0x0a) at byte 1; use printable text");
  EXPECT_EQ(refusal(std::string("ab\0", 3)),
            "--id: ID has a control character (0x00) at byte 2; use printable text");
  EXPECT_EQ(refusal("x\x7f"),
            "--id: ID has a control character (0x7f) at byte 1; use printable text");
  // A C1 control, as UTF-8 writes it (C2 85: NEL, a line break to some readers).
  EXPECT_EQ(refusal("ab\xc2\x85"),
            "--id: ID has a control character (0x85) at byte 2; use printable text");
  // C2 followed by a printable continuation byte is a letter, not a control.
  EXPECT_EQ(refusal("\xc2\xa9"), "");
}

class StatusFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = std::filesystem::temp_directory_path() / "zkr-status-XXXXXX";
    const int fd = ::mkstemp(templ.data());
    ASSERT_GE(fd, 0);
    ::close(fd);
    path_ = templ;
    std::ofstream(path_) << "left by an earlier run\n";
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::string contents() const {
    std::ifstream in(path_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::string path_;
};

TEST_F(StatusFileTest, EmptiedAtOnceThenOneLineWithTheAddedFieldsLast) {
  StatusFile status(path_);
  EXPECT_EQ(contents(), "") << "a line of an earlier run would pass for this one's";
  status.add("epoch", 4294967302);
  status.write("held_throughout", 0, 0);
  status.write("lock_lost", 79, 0);  // once only
  EXPECT_EQ(
      contents(),
      "{\"outcome\":\"held_throughout\",\"exit\":0,\"command_status\":0,\"epoch\":4294967302}\n");
}

TEST_F(StatusFileTest, WithoutAddedFieldsTheLineIsZkrLocksAsBefore) {
  StatusFile status(path_);
  status.write("timeout", 75, std::nullopt);
  EXPECT_EQ(contents(), "{\"outcome\":\"timeout\",\"exit\":75}\n");
}

}  // namespace
}  // namespace zkr::cli
