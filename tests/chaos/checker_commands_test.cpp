// The rule command_outside_lock and the hits of pause_supervisor, on
// hand-written servers' records: ticks of a `zkr lock` command must land
// while its lock node lives and is first in its queue. No server.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "checker.hpp"
#include "checker_test_time.hpp"

namespace zkr::chaos {
namespace {

const std::string kDir = std::string(kSupervisedLockRoot) + "/z0";

std::string lock_node(int seq) {
  return kDir + "/_c_guid" + std::to_string(seq) + "-lock-000000000" + std::to_string(seq);
}

// A lock node alive from zxid `from` to `to` (0: to the end).
NodeLife lock_life(int seq, std::int64_t from, std::int64_t to, const char* end = "delete") {
  NodeLife life;
  life.path = lock_node(seq);
  life.czxid = from;
  life.created = from * kMs;
  life.owner = 0x7000 + seq;
  if (to != 0) {
    life.dzxid = to;
    life.deleted = to * kMs;
    life.end = end;
  }
  return life;
}

// A tick of the command that holds lock node `seq`, landed at `zxid`.
NodeLife tick(int seq, std::int64_t zxid) {
  NodeLife life;
  const auto node = lock_node(seq);
  life.path = std::string(kTickRoot) + "/z0/" + node.substr(node.rfind('/') + 1) + "-t" +
              std::to_string(1000 + zxid);
  life.czxid = zxid;
  life.created = zxid * kMs;
  return life;
}

CheckResult judge_commands(const std::vector<NodeLife>& lives) {
  CheckResult result;
  check_supervised_commands(lives, result);
  return result;
}

TEST(ChaosCommands, TicksWhileTheHolderIsFirstPass) {
  // Node 1 holds 10..20, node 2 waits from 12 and holds 20..30.
  const auto r = judge_commands({lock_life(1, 10, 20), lock_life(2, 12, 30), tick(1, 11),
                                 tick(1, 19), tick(2, 21), tick(2, 29)});
  EXPECT_EQ(r.violation_count(), 0) << (r.examples.empty() ? "" : r.examples.front());
  EXPECT_EQ(r.supervised_ticks, 4);
  EXPECT_EQ(r.supervised_holds, 2);
  EXPECT_TRUE(r.problems.empty());
}

TEST(ChaosCommands, ATickAfterItsLockNodeEndedIsAViolation) {
  // Node 1's session closed at 20 while its zkr was stopped; its command
  // ticked on at 22, beside node 2's.
  const auto r = judge_commands({lock_life(1, 10, 20, "session_closed"), lock_life(2, 12, 30),
                                 tick(1, 11), tick(1, 22), tick(2, 21)});
  ASSERT_EQ(r.violations.count("command_outside_lock"), 1u);
  EXPECT_EQ(r.violations.at("command_outside_lock"), 1);
  EXPECT_NE(r.examples.front().find("session_closed"), std::string::npos) << r.examples.front();
}

TEST(ChaosCommands, ATickWhileANodeBeforeItsLivesIsAViolation) {
  // Node 2's command ticked at 15, while node 1 (first in line) still lived.
  const auto r =
      judge_commands({lock_life(1, 10, 20), lock_life(2, 12, 30), tick(2, 15), tick(2, 25)});
  ASSERT_EQ(r.violations.count("command_outside_lock"), 1u);
  EXPECT_EQ(r.violations.at("command_outside_lock"), 1);
  EXPECT_NE(r.examples.front().find("before its lock node"), std::string::npos)
      << r.examples.front();
}

TEST(ChaosCommands, ATickOfALockNodeTheRecordNeverHadIsAProblem) {
  const auto r = judge_commands({lock_life(1, 10, 20), tick(2, 15)});
  EXPECT_EQ(r.violation_count(), 0);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_NE(r.problems.front().find("names no lock node"), std::string::npos);
}

TEST(ChaosCommands, APauseOfASupervisorHitsWhileItsNodeLives) {
  RunInput in;
  in.has_server_record = true;
  in.lives = {lock_life(1, 10, 20)};
  const auto cut = [](std::int64_t at) {
    return parse_event(std::to_string(at * kMs) +
                       " cut pid=9 why=pause_supervisor from=" + std::to_string(at * kMs) +
                       " to=" + std::to_string(at * kMs) + " node=" + lock_node(1));
  };
  in.nemesis = {cut(15), cut(25)};  // the second came after the node was gone
  const auto r = check(in);
  ASSERT_EQ(r.holder_hits.count("pause_supervisor"), 1u);
  EXPECT_EQ(r.holder_hits.at("pause_supervisor"), 1);
}

}  // namespace
}  // namespace zkr::chaos
