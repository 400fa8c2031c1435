// The checker's rules on hand-written records: each rule must fire on the
// record of a violation and stay silent on a correct one. No server.
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "checker.hpp"
#include "checker_test_time.hpp"

namespace zkr::chaos {
namespace {

Event ev(std::int64_t at_ms, const std::string& line) {
  auto e = parse_event(std::to_string(at_ms * kMs) + " " + line);
  return e;
}

// A worker log: start, then the given events.
std::pair<std::string, std::vector<Event>> worker(int pid, std::vector<Event> events) {
  events.insert(events.begin(), ev(0, "start pid=" + std::to_string(pid) +
                                          " slot=0 gen=0 session_timeout_ms=4000"));
  return {"worker-" + std::to_string(pid) + ".log", events};
}

std::string deadline(std::int64_t at_ms) { return std::to_string(at_ms * kMs); }
std::string sent(std::int64_t at_ms) { return std::to_string(at_ms * kMs); }

// The lock node of op's grant on k0.
std::string node_of(const std::string& op) {
  return "/chaos/locks/k0/_c_" + op + "-lock-0000000001";
}

// One clean hold: acquire at `t`, enter at t+1, one accepted write, exit.
std::vector<Event> hold(const std::string& op, std::int64_t t, std::int64_t token,
                        std::int64_t value, const std::string& result = "ok") {
  return {
      ev(t, "acq op=" + op + " kind=mutex keys=k0 deadline=" + deadline(t + 1000)),
      ev(t + 1, "enter op=" + op + " tokens=k0:" + std::to_string(token) + " nodes=" + node_of(op)),
      ev(t + 3, "write op=" + op + " n=0 sent=" + sent(t + 2) + " result=" + result +
                    " err=ok values=k0:" + std::to_string(value) +
                    " tokens=k0:" + std::to_string(token) + " late=0"),
      ev(t + 4, "exit op=" + op)};
}

// The servers' record as a correct lock leaves it: each granted node made when
// its acquire began and deleted half a millisecond after its holder let go
// (a release's delete), or never if it did not. Tests change it where the
// servers saw otherwise.
std::vector<NodeLife> lives_of(
    const std::vector<std::pair<std::string, std::vector<Event>>>& workers) {
  std::vector<NodeLife> lives;
  std::map<std::string, std::int64_t> acquired;
  std::map<std::string, std::size_t> life_of_op;
  for (const auto& [source, events] : workers) {
    for (const auto& e : events) {
      const auto& op = e.get("op");
      if (e.name == "acq") acquired[op] = e.at;
      if (e.name == "enter") {
        std::size_t at = 0;
        const auto& nodes = e.get("nodes");
        while (at < nodes.size()) {
          const auto end = std::min(nodes.find(',', at), nodes.size());
          const auto node = nodes.substr(at, end - at);
          at = end + 1;
          NodeLife life;
          life.path = node;
          life.czxid = static_cast<std::int64_t>(lives.size()) + 100;
          life.created = acquired[op];
          life.owner = 0x5000 + static_cast<std::int64_t>(lives.size());
          life_of_op[op] = lives.size();
          lives.push_back(life);
        }
      }
      if (e.name == "exit" && life_of_op.count(op)) {
        auto& life = lives[life_of_op[op]];
        life.deleted = e.at + kMs / 2;
        life.dzxid = life.czxid + 1000;
        life.end = "delete";
        life.deleter = life.owner;
      }
    }
  }
  return lives;
}

RunInput run_input(std::vector<std::pair<std::string, std::vector<Event>>> workers,
                   std::int64_t counter, std::int64_t token) {
  RunInput in;
  in.lives = lives_of(workers);
  in.has_server_record = true;
  in.workers = std::move(workers);
  in.final_state.counters["k0"] = counter;
  in.final_state.tokens["k0"] = token;
  return in;
}

NodeLife& life_in(RunInput& in, const std::string& node) {
  for (auto& l : in.lives)
    if (l.path == node) return l;
  throw std::invalid_argument("no life of " + node);
}

// The node ended at `at_ms` by the close of its session (expiry, a kill).
void closed_at(RunInput& in, const std::string& node, std::int64_t at_ms) {
  auto& l = life_in(in, node);
  l.deleted = at_ms * kMs;
  l.end = "session_closed";
  l.deleter = l.owner;
}

std::vector<Event> concat(std::vector<Event> a, const std::vector<Event>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::string first_example(const CheckResult& r) {
  return r.examples.empty() ? "" : r.examples.front();
}

TEST(ChaosChecker, CleanRunPasses) {
  const auto r = check(run_input({worker(1, concat(hold("a", 10, 100, 1), hold("c", 30, 300, 3))),
                                  worker(2, hold("b", 20, 200, 2))},
                                 3, 300));
  EXPECT_TRUE(r.ok()) << first_example(r);
  EXPECT_EQ(r.acquisitions, 3);
  EXPECT_EQ(r.writes_accepted, 3);
  EXPECT_EQ(r.server_lives, 3);
}

TEST(ChaosChecker, OverlapIsAViolation) {
  // b is granted at 13 while a's node lives until 14.5.
  const auto r = check(
      run_input({worker(1, hold("a", 10, 100, 1)), worker(2, hold("b", 12, 200, 2))}, 2, 200));
  EXPECT_EQ(r.violations.count("overlap"), 1u);
}

TEST(ChaosChecker, AGrantLastsUntilItsNodeIsDeletedOnTheServers) {
  // a let go at 14, but its node was deleted on the servers only at 18 (its
  // release's delete failed and was retried, say): b, granted at 16, overlaps.
  auto in = run_input({worker(1, hold("a", 10, 100, 1)), worker(2, hold("b", 15, 200, 2))}, 2, 200);
  life_in(in, node_of("a")).deleted = 18 * kMs;
  EXPECT_EQ(check(in).violations.count("overlap"), 1u);
  life_in(in, node_of("a")).deleted = 15 * kMs;  // deleted before b's grant at 16: fine
  EXPECT_TRUE(check(in).ok()) << first_example(check(in));
}

TEST(ChaosChecker, SuspendedNoticeDoesNotEndTheGrant) {
  // a's client is suspended at 12, its node lives on until 14.5: b, granted
  // at 13, overlaps (the old checker made this legal).
  auto a = hold("a", 10, 100, 1);
  a.insert(a.begin() + 2, ev(12, "state s=suspended session=0"));
  const auto r = check(run_input({worker(1, a), worker(2, hold("b", 12, 200, 2))}, 2, 200));
  EXPECT_EQ(r.violations.count("overlap"), 1u) << first_example(r);
}

TEST(ChaosChecker, AKilledHolderHoldsUntilItsSessionIsClosed) {
  // a is killed at 12 mid-hold; its node goes with its session at 20.
  std::vector<Event> a{ev(10, "acq op=a kind=mutex keys=k0 deadline=" + deadline(1010)),
                       ev(11, "enter op=a tokens=k0:100 nodes=" + node_of("a"))};
  auto early = run_input({worker(1, a), worker(2, hold("b", 15, 200, 1))}, 1, 200);
  early.nemesis.push_back(ev(12, "cut pid=1 why=kill_worker from=" + sent(12) + " to=" + sent(12)));
  closed_at(early, node_of("a"), 20);
  const auto r = check(early);
  EXPECT_EQ(r.violations.count("overlap"), 1u) << first_example(r);  // b at 16, before the close
  EXPECT_EQ(r.holder_hits.at("kill_worker"), 1);
  auto late = run_input({worker(1, a), worker(2, hold("b", 20, 200, 1))}, 1, 200);
  late.nemesis = early.nemesis;
  closed_at(late, node_of("a"), 20);
  EXPECT_TRUE(check(late).ok()) << first_example(check(late));  // b at 21
}

TEST(ChaosChecker, AGrantWhoseNodeWasGoneBeforeTheWorkerHadItIsVoid) {
  // a's grant was on its way when its session was closed at 12; it reached a
  // at 13 (and its write was refused). b, granted at 12.5, is no overlap.
  auto a = hold("a", 10, 100, 1, "rejected");
  a[1].at = 13 * kMs;
  a[2] = ev(14, "write op=a n=0 sent=" + sent(13) +
                    " result=rejected err=no_node values=k0:1 tokens=k0:100 "
                    "late=0 lost=1");
  std::vector<Event> b{ev(12, "acq op=b kind=mutex keys=k0 deadline=" + deadline(1012)),
                       ev(12, "enter op=b tokens=k0:200 nodes=" + node_of("b")),
                       ev(30, "exit op=b")};
  b[1].at = 12 * kMs + kMs / 2;
  auto in = run_input({worker(1, a), worker(2, b)}, 0, 0);
  closed_at(in, node_of("a"), 12);
  const auto r = check(in);
  EXPECT_TRUE(r.ok()) << first_example(r);
  EXPECT_EQ(r.void_grants, 1);
}

TEST(ChaosChecker, AGrantOfANodeTheServersNeverHadIsAProblem) {
  auto in = run_input({worker(1, hold("a", 10, 100, 1))}, 1, 100);
  in.lives.clear();
  EXPECT_FALSE(check(in).ok());
  in.has_server_record = false;  // no record at all: the main rule cannot be judged
  EXPECT_FALSE(check(in).ok());
}

TEST(ChaosChecker, WriteSentAfterTheNodeWasDeletedMustNotApply) {
  // a's node was deleted on the servers at 11.5 (the nemesis); a's write,
  // sent at 12 after the stamp's millisecond, was applied: fencing failed.
  auto a = hold("a", 10, 100, 1);
  a[2].fields["sent"] = std::to_string(13 * kMs);
  auto in = run_input({worker(1, a)}, 1, 100);
  EXPECT_TRUE(check(in).ok());
  life_in(in, node_of("a")).deleted = 11 * kMs + kMs / 2;
  EXPECT_EQ(check(in).violations.count("late_write"), 1u);
}

TEST(ChaosChecker, ALateWriteIsJudgedByTheServersRecord) {
  // Made late on purpose (its Client had moved to a new session), applied:
  // the old session's node still lived on the servers, so the lock was
  // still this hold's. No violation, but counted.
  auto a = hold("a", 10, 100, 1);
  a[2].fields["late"] = "1";
  auto in = run_input({worker(1, a)}, 1, 100);
  auto r = check(in);
  EXPECT_TRUE(r.ok()) << first_example(r);
  EXPECT_EQ(r.late_writes, 1);
  EXPECT_EQ(r.late_applied, 1);
  // The node had gone with its session before the write was sent (12): fencing failed.
  closed_at(in, node_of("a"), 10);
  r = check(in);
  EXPECT_EQ(r.violations.count("late_write"), 1u);
}

TEST(ChaosChecker, RefusedWriteWithoutALostNoticeIsASilentLoss) {
  auto refused = [](const std::string& extra) {
    auto a = hold("a", 10, 100, 1, "rejected");
    a[2] = ev(13, "write op=a n=0 sent=" + sent(12) +
                      " result=rejected err=no_node values=k0:1 tokens=k0:100 " + extra);
    return a;
  };
  auto silent = run_input({worker(1, refused("late=0 lost=0"))}, 0, 0);
  EXPECT_EQ(check(silent).violations.count("silent_loss"), 1u);
  // The grant said lost by the reply: the loss was told.
  EXPECT_TRUE(check(run_input({worker(1, refused("late=0 lost=1"))}, 0, 0)).ok());
  // A lost record before the reply tells it as well.
  auto told = refused("late=0 lost=0");
  told.insert(told.begin() + 2, ev(12, "lost op=a key=k0 why=node_deleted"));
  EXPECT_TRUE(check(run_input({worker(1, told)}, 0, 0)).ok());
  // A late write is refused because the worker knew.
  EXPECT_TRUE(check(run_input({worker(1, refused("late=1 lost=0"))}, 0, 0)).ok());
}

TEST(ChaosChecker, FaultsAimedAtAHolderCountOnlyWhenTheyHitOne) {
  // pause_worker at 12 while a holds: a hit; at 20, after a let go: none.
  auto in = run_input({worker(1, hold("a", 10, 100, 1))}, 1, 100);
  in.nemesis.push_back(ev(1, "fault kind=pause_worker from=1 to=2 effective=1 detail=x"));
  in.nemesis.push_back(ev(12, "cut pid=1 why=pause_worker from=" + sent(12) + " to=" + sent(12)));
  in.nemesis.push_back(ev(20, "cut pid=1 why=pause_worker from=" + sent(20) + " to=" + sent(20)));
  auto r = check(in);
  EXPECT_EQ(r.holder_hits.at("pause_worker"), 1);
  // expire_session: the session's close deleted a granted node.
  auto expired = run_input({worker(1, hold("a", 10, 100, 1))}, 1, 100);
  closed_at(expired, node_of("a"), 14);
  expired.nemesis.push_back(ev(14, "cut pid=1 why=expire_session from=" + sent(13) +
                                       " to=" + sent(14) + " session=" + "5000"));
  EXPECT_EQ(check(expired).holder_hits.at("expire_session"), 1);
  // bite_problems: a kind injected that never hit, and no late write refused.
  r.holder_hits.clear();
  r.latch_terms = 2;  // the latch's own bite is the latch tests' (checker_latch_test.cpp)
  r.latch_failovers = 1;
  r.counter_ops = 1;             // and the counter's (checker_counter_test.cpp)
  r.member_views_converged = 1;  // and the members' (checker_member_test.cpp)
  const auto problems = bite_problems(r, {"pause_worker"});
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].find("never hit a lock holder"), std::string::npos);
  EXPECT_NE(problems[1].find("no late write"), std::string::npos);
  r.holder_hits["pause_worker"] = 1;
  r.late_rejected = 1;
  EXPECT_TRUE(bite_problems(r, {"pause_worker"}).empty());
}

TEST(ChaosChecker, DuplicateCounterValueIsALostUpdate) {
  const auto r = check(
      run_input({worker(1, hold("a", 10, 100, 1)), worker(2, hold("b", 20, 200, 1))}, 1, 200));
  EXPECT_GE(r.violations.count("lost_update"), 1u);
}

TEST(ChaosChecker, TokensMustGrow) {
  const auto r = check(
      run_input({worker(1, hold("a", 10, 300, 1)), worker(2, hold("b", 20, 200, 2))}, 2, 200));
  EXPECT_EQ(r.violations.count("token_order"), 1u);
}

TEST(ChaosChecker, UnknownWriteFillsAGapOnlyIfNeeded) {
  // b's outcome is unknown; the counter says it was applied (3 = a, b, c).
  auto ok = check(run_input({worker(1, concat(hold("a", 10, 100, 1), hold("c", 30, 300, 3))),
                             worker(2, hold("b", 20, 200, 2, "unknown"))},
                            3, 300));
  EXPECT_TRUE(ok.ok()) << (ok.examples.empty() ? "" : ok.examples.front());
  EXPECT_EQ(ok.unknown_applied, 1);
  // A counter value that no write explains.
  auto bad = check(run_input({worker(1, hold("a", 10, 100, 1))}, 2, 100));
  EXPECT_EQ(bad.violations.count("lost_update"), 1u);
}

TEST(ChaosChecker, WriteOfAKilledProcessIsUnknownNotMissing) {
  // b was killed after sending its write (no outcome on record), which the
  // server applied: the counter shows it, and that is no lost update.
  std::vector<Event> b{
      ev(20, "acq op=b kind=mutex keys=k0 deadline=" + deadline(1020)),
      ev(21, "enter op=b tokens=k0:200 nodes=" + node_of("b")),
      ev(22, "wsend op=b n=0 sent=" + sent(22) + " values=k0:2 tokens=k0:200 late=0")};
  auto in = run_input({worker(1, hold("a", 10, 100, 1)), worker(2, b)}, 2, 200);
  in.nemesis.push_back(ev(23, "cut pid=2 why=kill_worker from=" + sent(23) + " to=" + sent(23)));
  const auto r = check(in);
  EXPECT_TRUE(r.ok()) << (r.examples.empty() ? "" : r.examples.front());
  EXPECT_EQ(r.writes_unknown, 1);
  EXPECT_EQ(r.unknown_applied, 1);
}

TEST(ChaosChecker, UnknownMultiKeyWriteCountsOnce) {
  // One unknown write on two keys, applied: one write, two counters.
  std::vector<Event> a{
      ev(10, "acq op=a kind=multi keys=k0,k1 deadline=" + deadline(1010)),
      ev(11, "enter op=a tokens=k0:100,k1:101 nodes=" + node_of("a") +
                 ",/chaos/locks/k1/_c_a-lock-0000000001"),
      ev(13,
         "write op=a n=0 sent=" + sent(12) +
             " result=unknown err=connection_loss values=k0:1,k1:1 tokens=k0:100,k1:101 late=0"),
      ev(14, "exit op=a")};
  auto in = run_input({worker(1, a)}, 1, 100);
  in.final_state.counters["k1"] = 1;
  in.final_state.tokens["k1"] = 101;
  const auto r = check(in);
  EXPECT_TRUE(r.ok()) << (r.examples.empty() ? "" : r.examples.front());
  EXPECT_EQ(r.unknown_applied, 1);
}

TEST(ChaosChecker, FinalTokenMustBeTheLastWritersToken) {
  const auto r = check(run_input({worker(1, hold("a", 10, 100, 1))}, 1, 99));
  EXPECT_EQ(r.violations.count("final_token"), 1u);
}

TEST(ChaosChecker, AcquireMustReturnWithinDeadlinePlusSessionTimeout) {
  // deadline at 1010 ms, session timeout 4000 ms: entering at 6000 ms is late.
  std::vector<Event> events{ev(10, "acq op=a kind=mutex keys=k0 deadline=" + deadline(1010)),
                            ev(6000, "noacq op=a why=timeout")};
  const auto r = check(run_input({worker(1, events)}, 0, 0));
  EXPECT_EQ(r.violations.count("acquire_overrun"), 1u);
  // The same, but the process was stopped for 2 s meanwhile: in time.
  auto in = run_input({worker(1, events)}, 0, 0);
  in.nemesis.push_back(ev(3000, "paused pid=1 from=" + sent(1000) + " to=" + sent(3000)));
  EXPECT_EQ(check(in).violations.count("acquire_overrun"), 0u);
}

TEST(ChaosChecker, AcquireMayTakeAMomentToReturnAfterItsLastWait) {
  // The last wait ends at deadline + session timeout (5010 ms); returning
  // 50 ms later is scheduling, 150 ms later is an overrun.
  const auto returned_at = [](std::int64_t ms) {
    std::vector<Event> events{ev(10, "acq op=a kind=multi keys=k0,k1 deadline=" + deadline(1010)),
                              ev(ms, "noacq op=a why=timeout")};
    return check(run_input({worker(1, events)}, 0, 0)).violations.count("acquire_overrun");
  };
  EXPECT_EQ(returned_at(5060), 0u);
  EXPECT_EQ(returned_at(5160), 1u);
}

TEST(ChaosChecker, LateWriteAfterSessionLossMustNotApply) {
  auto a = hold("a", 10, 100, 1);
  a.insert(a.begin() + 2, ev(11, "lost op=a key=k0 why=session_lost"));
  // The write (sent at 12) was accepted although the session was lost at 11.
  const auto r = check(run_input({worker(1, a)}, 1, 100));
  EXPECT_EQ(r.violations.count("late_write"), 1u);
}

TEST(ChaosChecker, LeftoverLockNodeIsAnOrphan) {
  auto in = run_input({}, 0, 0);
  in.final_state.lock_root_nodes.push_back({"/chaos/locks/k0", 0});
  in.final_state.lock_root_nodes.push_back({"/chaos/locks/k0/_c_x-lock-0000000001", 0x42});
  in.final_state.live_sessions.insert(0x7);
  const auto r = check(in);
  ASSERT_EQ(r.orphans.size(), 1u);
  EXPECT_NE(r.orphans[0].find("-lock-"), std::string::npos);
}

TEST(ChaosChecker, HoldWithNoEndIsAProblem) {
  std::vector<Event> events{ev(10, "acq op=a kind=mutex keys=k0 deadline=" + deadline(1010)),
                            ev(11, "enter op=a tokens=k0:100 nodes=" + node_of("a"))};
  const auto r = check(run_input({worker(1, events)}, 0, 0));
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_NE(r.problems[0].find("never left"), std::string::npos);
}

// ---- The adversarial moves (another client's writes, deletes and creates)
// and worker behaviours.

// a holds k0 through node N from 11 to exit_at.
std::vector<Event> hold_of_node(const std::string& op, std::int64_t exit_at,
                                std::vector<Event> middle = {}) {
  std::vector<Event> out{ev(10, "acq op=" + op + " kind=mutex keys=k0 deadline=" + deadline(1010)),
                         ev(11, "enter op=" + op + " tokens=k0:100 nodes=" + node_of(op))};
  out.insert(out.end(), middle.begin(), middle.end());
  out.push_back(ev(exit_at, "exit op=" + op));
  return out;
}

// Another client deleted the node at `at_ms`.
void deleted_at(RunInput& in, const std::string& node, std::int64_t at_ms) {
  auto& l = life_in(in, node);
  l.deleted = at_ms * kMs;
  l.end = "delete";
  l.deleter = 0x99;
}

TEST(ChaosChecker, DeletedHolderNodeEndsThatHold) {
  // b is granted at 21, after the deletion at 15 and before a hears of it at
  // 25: legal, since the node is what the lock is.
  auto a = hold_of_node("a", 40, {ev(25, "lost op=a key=k0 why=node_deleted")});
  auto in = run_input({worker(1, a), worker(2, hold("b", 20, 200, 1))}, 1, 200);
  EXPECT_EQ(check(in).violations.count("overlap"), 1u);  // the node lived on until 40.5
  deleted_at(in, node_of("a"), 15);
  in.nemesis.push_back(ev(15, "cut pid=1 why=delete_holder_node from=" + sent(15) +
                                  " to=" + sent(15) + " node=" + node_of("a")));
  const auto r = check(in);
  EXPECT_TRUE(r.ok()) << first_example(r);
  EXPECT_EQ(r.holder_hits.at("delete_holder_node"), 1);
}

TEST(ChaosChecker, GrantMustSayLostOnceItsNodeIsGone) {
  const std::int64_t grace_ms = kLostNoticeGrace.count();
  // The node went at 15; a stayed past the grace and never heard.
  auto in = run_input({worker(1, hold_of_node("a", 16 + grace_ms))}, 0, 0);
  deleted_at(in, node_of("a"), 15);
  EXPECT_EQ(check(in).violations.count("lost_unnoticed"), 1u);
  // ...but it was stopped (SIGSTOP) for most of that time: it could not hear.
  auto paused = in;
  paused.nemesis.push_back(ev(20, "paused pid=1 from=" + sent(14) + " to=" + sent(14 + grace_ms)));
  EXPECT_TRUE(check(paused).ok()) << first_example(check(paused));
  // Told in time: fine.
  auto told = run_input(
      {worker(1, hold_of_node("a", 16 + grace_ms, {ev(20, "lost op=a key=k0 why=node_deleted")}))},
      0, 0);
  deleted_at(told, node_of("a"), 15);
  EXPECT_TRUE(check(told).ok());
  // Let go before the grace ran out: nothing to judge.
  auto early = run_input({worker(1, hold_of_node("a", 14 + grace_ms))}, 0, 0);
  deleted_at(early, node_of("a"), 15);
  EXPECT_TRUE(check(early).ok());
  // A refused guarded write says the node is gone just as well (the servers'
  // record, here, has it deleted only by the release).
  auto refused =
      run_input({worker(1, hold_of_node("a", 30 + grace_ms,
                                        {ev(20, "write op=a n=0 sent=" + sent(19) +
                                                    " result=rejected err=no_node values=k0:1 "
                                                    "tokens=k0:100 late=0 lost=0")}))},
                0, 0);
  EXPECT_EQ(check(refused).violations.count("lost_unnoticed"), 1u);
}

TEST(ChaosChecker, ReleaseRefusedAfterAGrantIsAViolation) {
  auto a = hold("a", 10, 100, 1);
  a.push_back(ev(15, "release op=a ok=0"));
  EXPECT_EQ(check(run_input({worker(1, a)}, 1, 100)).violations.count("release_refused"), 1u);
  a.back() = ev(15, "release op=a ok=1");
  EXPECT_TRUE(check(run_input({worker(1, a)}, 1, 100)).ok());
}

TEST(ChaosChecker, InvalidHolderTextMustBeRefused) {
  std::vector<Event> refused{ev(5, "holder op=a label=newline valid=0 bytes=6 outcome=threw")};
  auto r = check(run_input({worker(1, concat(refused, hold("a", 10, 100, 1)))}, 1, 100));
  EXPECT_TRUE(r.ok()) << (r.examples.empty() ? "" : r.examples.front());
  EXPECT_EQ(r.invalid_holders_tried, 1);
  EXPECT_EQ(r.invalid_holders_refused, 1);
  std::vector<Event> accepted{
      ev(5, "holder op=a label=len1025 valid=0 bytes=1025 outcome=accepted")};
  r = check(run_input({worker(1, concat(accepted, hold("a", 10, 100, 1)))}, 1, 100));
  EXPECT_EQ(r.violations.count("invalid_holder_accepted"), 1u);
  std::vector<Event> wrong{ev(5, "holder op=a label=ctl01 valid=0 bytes=3 outcome=other")};
  r = check(run_input({worker(1, concat(wrong, hold("a", 10, 100, 1)))}, 1, 100));
  EXPECT_EQ(r.violations.count("invalid_holder_accepted"), 1u);
}

TEST(ChaosChecker, ValidHolderTextMustBeAccepted) {
  std::vector<Event> refused{ev(5, "holder op=a label=x_held valid=1 bytes=6 outcome=refused")};
  const auto r = check(run_input({worker(1, refused)}, 0, 0));
  EXPECT_EQ(r.violations.count("valid_holder_refused"), 1u);
  EXPECT_EQ(r.acquires, 0);  // a holder record is no acquire
}

TEST(ChaosChecker, TwoThreadsOfOneSharedObjectAreSeparateHolders) {
  // Same process, same lock object: still two holders, who must not overlap.
  auto a = hold("a", 10, 100, 1);
  auto b = hold("b", 12, 200, 2);
  for (auto* list : {&a, &b}) (*list)[0].fields["kind"] = "shared_semaphore";
  const auto r = check(run_input({worker(1, concat(a, b))}, 2, 200));
  EXPECT_EQ(r.violations.count("overlap"), 1u);
  EXPECT_EQ(r.shared_holds, 2);
}

// ---- The read/write lock and the semaphore.

// A hold of `kind` (read, write, lease) on `key` through `node`: acquire at
// t, enter at t+1, exit at t+4; no write (readers and leases write no
// counter). A lease's acquire says the semaphore's limit.
std::vector<Event> shared_hold(const std::string& op, const std::string& kind,
                               const std::string& key, const std::string& node, std::int64_t t,
                               std::int64_t limit = 0) {
  return {ev(t, "acq op=" + op + " kind=" + kind + " keys=" + key + " deadline=" +
                    deadline(t + 1000) + (limit > 0 ? " limit=" + std::to_string(limit) : "")),
          ev(t + 1, "enter op=" + op + " tokens=" + key + ":" + std::to_string(100 + t) +
                        " nodes=" + node),
          ev(t + 4, "exit op=" + op)};
}

std::string rw_node(const std::string& op, const std::string& kind) {
  return "/chaos/locks/rw0/_c_" + op + (kind == "read" ? "-__READ__" : "-__WRIT__") + "0000000001";
}

std::vector<Event> rw_hold(const std::string& op, const std::string& kind, std::int64_t t) {
  return shared_hold(op, kind, "rw0", rw_node(op, kind), t);
}

std::vector<Event> lease_hold(const std::string& op, std::int64_t t, std::int64_t limit) {
  return shared_hold(op, "lease", "sem0", "/chaos/locks/sem0/leases/_c_" + op + "-lease-0000000001",
                     t, limit);
}

TEST(ChaosChecker, ReadersShareAReadWriteLock) {
  // a reads [11, 14.5], b reads from 13: readers share.
  const auto r = check(
      run_input({worker(1, rw_hold("a", "read", 10)), worker(2, rw_hold("b", "read", 12))}, 0, 0));
  EXPECT_TRUE(r.ok()) << first_example(r);
  EXPECT_EQ(r.grants_by_kind.at("read"), 2);
}

TEST(ChaosChecker, AWriterBesideAReaderIsAnOverlap) {
  // A writer granted while a reader holds...
  auto r = check(
      run_input({worker(1, rw_hold("a", "read", 10)), worker(2, rw_hold("b", "write", 12))}, 0, 0));
  EXPECT_EQ(r.violations.count("overlap"), 1u) << first_example(r);
  // ...a reader granted while a writer holds, even after another reader...
  r = check(run_input({worker(1, rw_hold("a", "write", 10)), worker(2, rw_hold("b", "read", 11)),
                       worker(3, rw_hold("c", "read", 12))},
                      0, 0));
  EXPECT_EQ(r.violations.at("overlap"), 2) << first_example(r);
  // ...and two writers, as on a mutex.
  r = check(run_input({worker(1, rw_hold("a", "write", 10)), worker(2, rw_hold("b", "write", 12))},
                      0, 0));
  EXPECT_EQ(r.violations.count("overlap"), 1u) << first_example(r);
  // One after the other: fine.
  r = check(run_input({worker(1, rw_hold("a", "write", 10)), worker(2, rw_hold("b", "read", 15)),
                       worker(3, rw_hold("c", "write", 20))},
                      0, 0));
  EXPECT_TRUE(r.ok()) << first_example(r);
}

TEST(ChaosChecker, AWriterAfterALongReaderIsJudgedByTheReaderToo) {
  // a reads until its node goes at 30; b reads [13, 16.5]; c writes at 21,
  // after b but while a's read still lives.
  auto in = run_input({worker(1, rw_hold("a", "read", 10)), worker(2, rw_hold("b", "read", 12)),
                       worker(3, rw_hold("c", "write", 20))},
                      0, 0);
  life_in(in, rw_node("a", "read")).deleted = 30 * kMs;
  const auto r = check(in);
  EXPECT_EQ(r.violations.count("overlap"), 1u) << first_example(r);
}

TEST(ChaosChecker, MoreLeasesThanTheLimitIsAViolation) {
  // Three leases in force at once at 13, the limit being 2.
  auto r = check(run_input({worker(1, lease_hold("a", 10, 2)), worker(2, lease_hold("b", 11, 2)),
                            worker(3, lease_hold("c", 12, 2))},
                           0, 0));
  EXPECT_EQ(r.violations.count("lease_bound"), 1u) << first_example(r);
  EXPECT_EQ(r.violations.count("overlap"), 0u);
  // Two at once, the third after the first went (14.5): fine.
  r = check(run_input({worker(1, lease_hold("a", 10, 2)), worker(2, lease_hold("b", 11, 2)),
                       worker(3, lease_hold("c", 14, 2))},
                      0, 0));
  EXPECT_TRUE(r.ok()) << first_example(r);
  EXPECT_EQ(r.grants_by_kind.at("lease"), 3);
  // A lease lasts until its node goes on the servers, as a lock's grant does.
  auto in = run_input({worker(1, lease_hold("a", 10, 2)), worker(2, lease_hold("b", 11, 2)),
                       worker(3, lease_hold("c", 14, 2))},
                      0, 0);
  life_in(in, "/chaos/locks/sem0/leases/_c_a-lease-0000000001").deleted = 16 * kMs;
  EXPECT_EQ(check(in).violations.count("lease_bound"), 1u);
}

TEST(ChaosChecker, ALeaseWithNoLimitOrBesideALockIsAProblem) {
  EXPECT_FALSE(check(run_input({worker(1, lease_hold("a", 10, 0))}, 0, 0)).problems.empty());
  auto mixed = run_input(
      {worker(1, lease_hold("a", 10, 2)),
       worker(2, shared_hold("b", "mutex", "sem0", "/chaos/locks/sem0/_c_b-lock-0000000001", 20))},
      0, 0);
  EXPECT_FALSE(check(mixed).problems.empty());
}

TEST(ChaosChecker, EveryKindOfLockNodeIsOneAndAnOrphanIfLeft) {
  for (const std::string_view name :
       {"_c_x-lock-0000000001", "_c_x-__READ__0000000001", "_c_x-__WRIT__0000000001",
        "leases/_c_x-lease-0000000001", "_c_x-latch-0000000001"}) {
    const auto path = "/chaos/locks/k0/" + std::string(name);
    EXPECT_TRUE(is_lock_node_name(path)) << name;
    auto in = run_input({}, 0, 0);
    in.final_state.lock_root_nodes.push_back({path, 0});
    EXPECT_EQ(check(in).orphans.size(), 1u) << name;
  }
  for (const std::string_view name : {"leases", "locks", "zzz-not-a-lock", "k0"})
    EXPECT_FALSE(is_lock_node_name("/chaos/locks/" + std::string(name))) << name;
}

TEST(ChaosChecker, NodeTheNemesisLeftIsNotTheLibrarysOrphan) {
  const std::string foreign =
      "/chaos/locks/k0/_c_0f0f0f0f-0000-4000-8000-000000000000-lock-0000000000";
  auto in = run_input({}, 0, 0);
  in.final_state.lock_root_nodes.push_back({foreign, 0x99});
  in.final_state.lock_root_nodes.push_back({"/chaos/locks/k1/aaa", 0});
  auto blamed = check(in);
  EXPECT_EQ(blamed.orphans.size(), 1u);  // without the nemesis's record: the lock-named one
  in.nemesis.push_back(ev(1, "foreign session=99 via=direct"));
  in.nemesis.push_back(ev(2, "foreign path=/chaos/locks/k1/aaa session=99"));
  const auto r = check(in);
  EXPECT_TRUE(r.orphans.empty());
  ASSERT_EQ(r.problems.size(), 2u);
  EXPECT_NE(r.problems[0].find("nemesis"), std::string::npos);
}

// Bystanders' trees: a Kafka-like tree under the lock root, and a lock path
// that existed before the locks, holding another application's data.
std::vector<Bystander> kafka_like_tree() {
  return {{"/chaos/locks", true, "", 10, 10, 0, 0},
          {"/chaos/locks/admin/delete_topics", true, "", 12, 12, 0, 0},
          {"/chaos/locks/controller_epoch", true, "7", 13, 13, 0, 0},
          {"/chaos/locks/k1", true, "config=important", 14, 14, 0, 0}};
}

RunInput with_bystanders(std::vector<Bystander> before, std::vector<Bystander> after) {
  auto in = run_input({}, 0, 0);
  in.bystanders.before = std::move(before);
  in.bystanders.after = std::move(after);
  in.bystanders.sweep = "removed=1 not_ours=3";
  return in;
}

TEST(ChaosChecker, BystandersAsTheyWerePass) {
  // The lock path's children came and went: not recorded, not compared.
  const auto r = check(with_bystanders(kafka_like_tree(), kafka_like_tree()));
  EXPECT_TRUE(r.ok()) << (r.examples.empty() ? "" : r.examples.front());
  EXPECT_EQ(r.bystanders, 4);
  EXPECT_EQ(r.sweep, "removed=1 not_ours=3");
}

TEST(ChaosChecker, BystanderDeletedRecreatedOrWrittenIsAViolation) {
  auto after = kafka_like_tree();
  after[1].exists = false;               // the cleaner took an empty node not its own
  after[2].czxid = after[2].mzxid = 90;  // deleted and made again, same data
  after[3].data = "";                    // a release deleted the lock path, a lock made it again
  after[3].czxid = after[3].mzxid = 91;
  const auto r = check(with_bystanders(kafka_like_tree(), after));
  ASSERT_EQ(r.violations.count("bystander_changed"), 1u);
  EXPECT_EQ(r.violations.at("bystander_changed"), 3);
  ASSERT_EQ(r.examples.size(), 3u);
  EXPECT_NE(r.examples[0].find("/chaos/locks/admin/delete_topics"), std::string::npos);
  EXPECT_NE(r.examples[0].find("deleted"), std::string::npos);
  EXPECT_NE(r.examples[1].find("created again"), std::string::npos);
  EXPECT_NE(r.examples[2].find("'config=important' -> ''"), std::string::npos);
  EXPECT_FALSE(r.ok());
}

TEST(ChaosChecker, BystanderDataWrittenIsAViolationEvenIfSetBack) {
  auto after = kafka_like_tree();
  after[2].version = 2;  // written twice, "7" again in the end
  after[2].mzxid = 95;
  const auto r = check(with_bystanders(kafka_like_tree(), after));
  ASSERT_EQ(r.violations.count("bystander_changed"), 1u);
  EXPECT_NE(r.examples[0].find("version 0 -> 2"), std::string::npos);
}

TEST(ChaosChecker, BystanderWithoutAnAfterRecordOrSweepIsAProblem) {
  auto in = with_bystanders(kafka_like_tree(), {kafka_like_tree()[0]});
  in.bystanders.sweep.reset();
  const auto r = check(in);
  EXPECT_EQ(r.problems.size(), 4u);  // no sweep, three nodes with no record after
  EXPECT_FALSE(r.ok());
}

TEST(ChaosChecker, BystanderIsNotTheLibrarysOrphan) {
  // Another application's ephemeral node, of a session the run never had.
  auto tree = kafka_like_tree();
  tree.push_back({"/chaos/locks/brokers/ids/1", true, "{\"host\":\"127.0.0.1\"}", 15, 15, 0, 0x77});
  auto in = with_bystanders(tree, tree);
  in.final_state.lock_root_nodes.push_back({"/chaos/locks/brokers/ids/1", 0x77});
  const auto r = check(in);
  EXPECT_TRUE(r.orphans.empty());
  EXPECT_TRUE(r.ok()) << (r.examples.empty() ? "" : r.examples.front());
}

TEST(ChaosChecker, BystanderRecordRoundTrips) {
  // Through word(), as EventLog writes each value: empty data included.
  for (const std::string& data : {std::string("a b\n\0\xff", 6), std::string()}) {
    const Bystander node{"/chaos/locks/k1", false, data, 1, 2, 3, 0x1234};
    std::string line = "5 after";
    for (const auto& [key, value] : bystander_fields(node))
      line += " " + word(key) + "=" + word(value);
    const auto back = parse_bystander(parse_event(line));
    EXPECT_EQ(back.path, node.path);
    EXPECT_EQ(back.exists, node.exists);
    EXPECT_EQ(back.data, node.data);
    EXPECT_EQ(back.czxid, 1);
    EXPECT_EQ(back.mzxid, 2);
    EXPECT_EQ(back.version, 3);
    EXPECT_EQ(back.owner, 0x1234);
  }
}

}  // namespace
}  // namespace zkr::chaos
