// The leader latch rules (check_leader_latch) on hand-written servers'
// records and participants' records: one leader at a time, epochs that never
// go down, no write after the leader's node ended, a refused write only
// after the term said lost, and a term that hears of its node's end in time.
// No server.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "checker.hpp"
#include "checker_test_time.hpp"

namespace zkr::chaos {
namespace {

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

CheckResult judge_latch(const std::vector<NodeLife>& lives, std::vector<Event> events = {},
                        const Pauses& pauses = {}) {
  RunInput input;
  input.lives = lives;
  input.has_server_record = true;
  input.workers.emplace_back("worker-0-0.log", std::move(events));
  CheckResult result;
  check_leader_latch(input, pauses, result);
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
  const auto r =
      judge_latch({latch_life(1, 10, 20), latch_life(2, 12, 0), leader_write(1, 10, 11),
                   leader_write(1, 10, 15), leader_write(2, 12, 21), leader_write(2, 12, 25)});
  EXPECT_EQ(r.violation_count(), 0) << (r.examples.empty() ? "" : r.examples.front());
  EXPECT_TRUE(r.problems.empty());
  EXPECT_EQ(r.latch_record_writes, 4);
  EXPECT_EQ(r.latch_failovers, 1);
}

TEST(ChaosLatch, AWriteWhileAnEarlierNodeLivesIsTwoLeaders) {
  // Node 2 writes at 15 while node 1, before it in the queue, still lives.
  const auto r = judge_latch({latch_life(1, 10, 20), latch_life(2, 12, 0), leader_write(1, 10, 11),
                              leader_write(2, 12, 15)});
  EXPECT_EQ(r.violations.count("two_leaders"), 1u);
  EXPECT_EQ(r.violation_count(), 1);
}

TEST(ChaosLatch, AWriteAfterTheLeadersNodeEndedIsCaught) {
  // Node 1's session closed at 20; a write of its leader was applied at 22.
  const auto r = judge_latch({latch_life(1, 10, 20), leader_write(1, 10, 22)});
  EXPECT_EQ(r.violations.count("leader_write_after_loss"), 1u);
  EXPECT_EQ(r.violation_count(), 1);
}

TEST(ChaosLatch, AnEpochThatGoesDownIsCaught) {
  // Node 3 leads first (epoch 14), node 2 (epoch 12) after it: both first at
  // their writes, but the epoch of the later write is the smaller.
  auto node3 = latch_life(3, 14, 20);
  node3.path = kLatch + "/" + latch_name(1);  // first in the queue by its name
  auto write3 = leader_write(1, 14, 16);
  const auto r = judge_latch({node3, latch_life(2, 12, 0), write3, leader_write(2, 12, 21)});
  EXPECT_EQ(r.violations.count("epoch_order"), 1u);
  EXPECT_EQ(r.violations.count("two_leaders"), 0u);
}

TEST(ChaosLatch, AnEpochThatIsNotTheNodesCzxidIsCaught) {
  const auto r = judge_latch({latch_life(1, 10, 0), leader_write(1, 9, 11)});
  EXPECT_EQ(r.violations.count("wrong_epoch"), 1u);
}

TEST(ChaosLatch, AWriteNamingNoLatchNodeIsAProblemOfTheRun) {
  const auto r = judge_latch({latch_life(1, 10, 0), leader_write(2, 12, 13)});
  EXPECT_FALSE(r.problems.empty());
}

TEST(ChaosLatch, ARefusedWriteBeforeTheLostSignalIsASilentLoss) {
  const auto r = judge_latch({}, {event("lterm", {{"term", "1.0.L.3"}, {"epoch", "10"}}),
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
  const auto r = judge_latch(
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
  check_leader_latch(input, {}, result);
  EXPECT_EQ(result.latch_leader_hits, 1);
}

// The lost-notice rule's scene: process 42's term of latch node 1 begins at
// 1 s; the node ends (deleted by another client) at 2 s. `records` follow.
constexpr std::int64_t kSecond = 1'000'000'000;
constexpr std::int64_t kNodeEnd = 2 * kSecond;

CheckResult judge_notice(std::vector<Event> records, const Pauses& pauses = {}) {
  NodeLife node = latch_life(1, 10, 20);
  node.deleted = kNodeEnd;
  node.end = "delete";
  Event start = event("start", {{"pid", "42"}});
  Event term = event("lterm", {{"term", "1.0.L.3"}, {"epoch", "10"}, {"node", node.path}});
  term.at = kSecond;
  records.insert(records.begin(), {start, term});
  return judge_latch({node}, std::move(records), pauses);
}

Event at_ns(std::int64_t ns, Event e) {
  e.at = ns;
  return e;
}

TEST(ChaosLatch, ATermThatHearsOfItsNodesEndWithinTheGracePasses) {
  const auto lost = at_ns(kNodeEnd + kSecond, event("llost", {{"term", "1.0.L.3"}}));
  const auto end = at_ns(kNodeEnd + 9 * kSecond, event("lend", {{"term", "1.0.L.3"}}));
  EXPECT_EQ(judge_notice({lost, end}).violation_count(), 0);
  // Closing counts as hearing: close() may wait long for its delete.
  const auto close = at_ns(kNodeEnd + kSecond, event("lclose", {{"term", "1.0.L.3"}}));
  EXPECT_EQ(judge_notice({close, end}).violation_count(), 0);
}

TEST(ChaosLatch, ATermThatNeverHearsOfItsNodesEndViolates) {
  // Its process went on recording (a lock worker's records) for 5 s.
  const auto later = at_ns(kNodeEnd + 5 * kSecond, event("acq", {{"op", "1.0.1.1"}}));
  const auto r = judge_notice({later});
  EXPECT_EQ(r.violations.count("leader_lost_unnoticed"), 1u);
  ASSERT_FALSE(r.examples.empty());
  EXPECT_NE(r.examples[0].find("never said lost"), std::string::npos) << r.examples[0];
}

TEST(ChaosLatch, ATermThatHearsOnlyAfterTheGraceViolates) {
  const auto grace = std::chrono::nanoseconds(kLostNoticeGrace).count();
  const auto lost = at_ns(kNodeEnd + grace + kSecond, event("llost", {{"term", "1.0.L.3"}}));
  const auto r = judge_notice({lost});
  EXPECT_EQ(r.violations.count("leader_lost_unnoticed"), 1u);
  // The same, but its process was stopped for 2 s of that time: it ran less than the grace.
  const Pauses pauses{{42, {{kNodeEnd + kSecond / 2, kNodeEnd + 5 * kSecond / 2}}}};
  EXPECT_EQ(judge_notice({lost}, pauses).violation_count(), 0);
  // A stop of another process does not count.
  const Pauses other{{43, {{kNodeEnd + kSecond / 2, kNodeEnd + 5 * kSecond / 2}}}};
  EXPECT_EQ(judge_notice({lost}, other).violations.count("leader_lost_unnoticed"), 1u);
}

TEST(ChaosLatch, AKilledLeaderOwesNoNoticeAfterItsLastRecord) {
  // Killed half a second after its node ended (the kill ends the session
  // that ends the node, in a real run): it ran too little to be judged.
  const auto last = at_ns(kNodeEnd + kSecond / 2, event("lwrite", {{"term", "1.0.L.3"}}));
  EXPECT_EQ(judge_notice({last}).violations.count("leader_lost_unnoticed"), 0u);
}

TEST(ChaosLatch, ARunWhoseLeadershipNeverMovedProvesNothing) {
  CheckResult r;
  r.late_rejected = 1;
  r.counter_ops = 1;
  r.member_views_converged = 1;
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
