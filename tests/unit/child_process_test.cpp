// ChildProcess, the helper that runs and reaps the lock stress test's workers:
// exit statuses, a deadline that passes, and a kill.
#include <gtest/gtest.h>

#include <signal.h>

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

#include "support/child_process.hpp"

namespace zkr::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr auto kWait = 10s;  // a healthy run takes milliseconds

TEST(ChildProcess, ReportsTheExitStatus) {
  ChildProcess ok({"/bin/sh", "-c", "exit 0"});
  const auto status = ok.wait_until(Clock::now() + kWait);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(describe_wait_status(*status), "exit 0");

  ChildProcess failed({"/bin/sh", "-c", "exit 3"});
  const auto failure = failed.wait_until(Clock::now() + kWait);
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(describe_wait_status(*failure), "exit 3");
}

TEST(ChildProcess, ADeadlineThatPassesLeavesItRunningUntilKilled) {
  ChildProcess slow({"/bin/sh", "-c", "exec sleep 60"});
  EXPECT_FALSE(slow.wait_until(Clock::now() + 50ms).has_value());
  slow.kill();
  const auto status = slow.wait_until(Clock::now() + kWait);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(describe_wait_status(*status), "killed by signal " + std::to_string(SIGKILL));
}

TEST(ChildProcess, TheDestructorKillsAndReaps) {
  // Returns promptly rather than waiting a minute for the child.
  const auto start = Clock::now();
  { ChildProcess slow({"/bin/sh", "-c", "exec sleep 60"}); }
  EXPECT_LT(Clock::now() - start, kWait);
}

// What a failed worker said is what its test quotes: stderr alone goes to the
// file, emptied first, and stdout stays the test's.
TEST(ChildProcess, StderrGoesToTheFileGiven) {
  std::string dir = (std::filesystem::temp_directory_path() / "zkr-child-XXXXXX").string();
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const auto file = std::filesystem::path(dir) / "stderr";
  std::ofstream(file) << "left from before\n";
  {
    ChildProcess child({"/bin/sh", "-c", "echo said >&2; echo not-this; exit 1"}, file.string());
    const auto status = child.wait_until(Clock::now() + kWait);
    ASSERT_TRUE(status.has_value());
    EXPECT_EQ(describe_wait_status(*status), "exit 1");
  }
  std::stringstream text;
  text << std::ifstream(file).rdbuf();
  EXPECT_EQ(text.str(), "said\n");
  std::filesystem::remove_all(dir);
}

TEST(ChildProcess, AnUnwritableStderrFileIsRefused) {
  // posix_spawn reports the failed open as its own failure.
  EXPECT_THROW(ChildProcess({"/bin/sh", "-c", "exit 0"}, "/nonexistent/zkr/dir/stderr"),
               std::system_error);
}

TEST(ChildProcess, AMissingProgramCannotBeSpawned) {
  EXPECT_THROW(ChildProcess({"/nonexistent/zkr/program"}), std::system_error);
}

}  // namespace
}  // namespace zkr::test
