// The leader latch rules (check_leader_latch) on hand-written servers'
// records and participants' records: one leader at a time, epochs that never
// go down, no write after the leader's node ended, and a refused write only
// after the term said lost. No server.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "checker.hpp"

namespace zkr::chaos {
namespace {

constexpr std::int64_t kMs = 1'000'000;

const std::string kLatch = std::string(kLatchRoot) + "/l0";
const std::string kWrites = std::string(kLeaderWriteRoot) + "/l0";

std::string latch_name(int seq) {
  return "_c_guid" + std::to_string(seq) + "-latch-000000000" + std::to_string(seq);
}

// Latch node `seq` alive from zxid `from` to `to` (0: to the end).
NodeLife latch_life(int seq, std::int64_t from, std::int64_t to) {
  NodeLife life;
  life.path = kLatch + "/" + latch_name(seq);
  life.czxid = from;
  life.created = from * kMs;
  life.owner = 0x7000 + seq;
  if (to != 0) {
    life.dzxid = to;
    life.deleted = to * kMs;
    life.end = "session_closed";
  }
  return life;
}

// A write of the leader of latch node `seq`, carrying `epoch`, applied at `zxid`.
NodeLife leader_write(int seq, std::int64_t epoch, std::int64_t zxid) {
  NodeLife life;
  life.path = kWrites + "/" + latch_name(seq) + "-e" + std::to_string(epoch) + "-w" +
              std::to_string(1'000'000'000 + zxid);
  life.czxid = zxid;
  life.created = zxid * kMs;
  return life;
}

CheckResult judge(const std::vector<NodeLife>& lives, std::vector<Event> events = {}) {
  RunInput input;
  input.lives = lives;
  input.has_server_record = true;
  input.workers.emplace_back("worker-0-0.log", std::move(events));
  CheckResult result;
  check_leader_latch(input, result);
  return result;
}

Event event(std::string name, std::map<std::string, std::string> fields) {
  Event e;
  e.at = 1;
  e.name = std::move(name);
  e.fields = std::move(fields);
  return e;
}

TEST(ChaosLatch, OneLeaderAtATimeWithAFailoverPasses) {
  // Node 1 leads 10..20 and writes at 11 and 15; node 2 joins at 12, leads
  // from 20 and writes at 21 and 25.
  const auto r = judge({latch_life(1, 10, 20), latch_life(2, 12, 0), leader_write(1, 10, 11),
                        leader_write(1, 10, 15), leader_write(2, 12, 21), leader_write(2, 12, 25)});
  EXPECT_EQ(r.violation_count(), 0) << (r.examples.empty() ? "" : r.examples.front());
  EXPECT_TRUE(r.problems.empty());
  EXPECT_EQ(r.latch_record_writes, 4);
  EXPECT_EQ(r.latch_failovers, 1);
}

TEST(ChaosLatch, AWriteWhileAnEarlierNodeLivesIsTwoLeaders) {
  // Node 2 writes at 15 while node 1, before it in the queue, still lives.
  const auto r = judge({latch_life(1, 10, 20), latch_life(2, 12, 0), leader_write(1, 10, 11),
                        leader_write(2, 12, 15)});
  EXPECT_EQ(r.violations.count("two_leaders"), 1u);
  EXPECT_EQ(r.violation_count(), 1);
}

TEST(ChaosLatch, AWriteAfterTheLeadersNodeEndedIsCaught) {
  // Node 1's session closed at 20; a write of its leader was applied at 22.
  const auto r = judge({latch_life(1, 10, 20), leader_write(1, 10, 22)});
  EXPECT_EQ(r.violations.count("leader_write_after_loss"), 1u);
  EXPECT_EQ(r.violation_count(), 1);
}

TEST(ChaosLatch, AnEpochThatGoesDownIsCaught) {
  // Node 3 leads first (epoch 14), node 2 (epoch 12) after it: both first at
  // their writes, but the epoch of the later write is the smaller.
  auto node3 = latch_life(3, 14, 20);
  node3.path = kLatch + "/" + latch_name(1);  // first in the queue by its name
  auto write3 = leader_write(1, 14, 16);
  const auto r = judge({node3, latch_life(2, 12, 0), write3, leader_write(2, 12, 21)});
  EXPECT_EQ(r.violations.count("epoch_order"), 1u);
  EXPECT_EQ(r.violations.count("two_leaders"), 0u);
}

TEST(ChaosLatch, AnEpochThatIsNotTheNodesCzxidIsCaught) {
  const auto r = judge({latch_life(1, 10, 0), leader_write(1, 9, 11)});
  EXPECT_EQ(r.violations.count("wrong_epoch"), 1u);
}

TEST(ChaosLatch, AWriteNamingNoLatchNodeIsAProblemOfTheRun) {
  const auto r = judge({latch_life(1, 10, 0), leader_write(2, 12, 13)});
  EXPECT_FALSE(r.problems.empty());
}

TEST(ChaosLatch, ARefusedWriteBeforeTheLostSignalIsASilentLoss) {
  const auto r = judge({}, {event("lterm", {{"term", "1.0.L.3"}, {"epoch", "10"}}),
                            event("lwrite", {{"term", "1.0.L.3"},
                                             {"n", "2"},
                                             {"result", "rejected"},
                                             {"lost", "0"},
                                             {"late", "0"}})});
  EXPECT_EQ(r.violations.count("leader_silent_loss"), 1u);
  EXPECT_EQ(r.latch_terms, 1);
  EXPECT_EQ(r.latch_writes_refused, 1);
}

TEST(ChaosLatch, ARefusedWriteAfterTheLostSignalPasses) {
  const auto r = judge(
      {}, {event("lterm", {{"term", "1.0.L.3"}, {"epoch", "10"}}),
           event("lwrite",
                 {{"term", "1.0.L.3"}, {"n", "1"}, {"result", "ok"}, {"lost", "0"}, {"late", "0"}}),
           event("llost", {{"term", "1.0.L.3"}, {"reason", "session_lost"}}),
           event("lwrite", {{"term", "1.0.L.3"},
                            {"n", "2"},
                            {"result", "rejected"},
                            {"lost", "1"},
                            {"late", "1"}})});
  EXPECT_EQ(r.violation_count(), 0);
  EXPECT_EQ(r.latch_writes_ok, 1);
  EXPECT_EQ(r.latch_late_writes, 1);
  EXPECT_EQ(r.latch_late_refused, 1);
  EXPECT_EQ(r.latch_lost_notices, 1);
}

TEST(ChaosLatch, ADeletedLeaderNodeCountsAsAHitOnlyIfItWasATerms) {
  RunInput input;
  Event term = event("lterm", {{"term", "1.0.L.3"}, {"epoch", "10"}, {"node", kLatch + "/n1"}});
  input.workers.emplace_back("worker-1-0.log", std::vector<Event>{term});
  input.nemesis.push_back(event("fault", {{"kind", "delete_leader_node"},
                                          {"effective", "1"},
                                          {"detail", "path=" + kLatch + "/n1,pid=7,via=direct"}}));
  input.nemesis.push_back(event("fault", {{"kind", "delete_leader_node"},
                                          {"effective", "1"},
                                          {"detail", "path=" + kLatch + "/n2,pid=8,via=direct"}}));
  CheckResult result;
  check_leader_latch(input, result);
  EXPECT_EQ(result.latch_leader_hits, 1);
}

TEST(ChaosLatch, ARunWhoseLeadershipNeverMovedProvesNothing) {
  CheckResult r;
  r.late_rejected = 1;
  auto problems = bite_problems(r, {});
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("ever led"), std::string::npos);
  r.latch_terms = 3;
  problems = bite_problems(r, {});
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("no failover"), std::string::npos);
  r.latch_failovers = 1;
  EXPECT_TRUE(bite_problems(r, {}).empty());
}

}  // namespace
}  // namespace zkr::chaos
