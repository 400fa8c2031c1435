// ChildProcess, the helper that runs and reaps the lock stress test's workers:
// exit statuses, a deadline that passes, and a kill.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
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

TEST(ChildProcess, AMissingProgramCannotBeSpawned) {
  EXPECT_THROW(ChildProcess({"/nonexistent/zkr/program"}), std::system_error);
}

}  // namespace
}  // namespace zkr::test
