// The checker's rules on hand-written records: each rule must fire on the
// record of a violation and stay silent on a correct one. No server.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "checker.hpp"

namespace zkr::chaos {
namespace {

constexpr std::int64_t kMs = 1'000'000;

Event ev(std::int64_t at_ms, const std::string& line) {
  auto e = parse_event(std::to_string(at_ms * kMs) + " " + line);
  return e;
}

// A worker log: start, then the given events.
std::pair<std::string, std::vector<Event>> worker(int pid, std::vector<Event> events) {
  events.insert(events.begin(), ev(0, "start pid=" + std::to_string(pid) + " slot=0 gen=0 session_timeout_ms=4000"));
  return {"worker-" + std::to_string(pid) + ".log", events};
}

std::string deadline(std::int64_t at_ms) { return std::to_string(at_ms * kMs); }
std::string sent(std::int64_t at_ms) { return std::to_string(at_ms * kMs); }

// One clean hold: acquire at `t`, enter at t+1, one accepted write, exit.
std::vector<Event> hold(const std::string& op, std::int64_t t, std::int64_t token, std::int64_t value,
                        const std::string& result = "ok") {
  return {ev(t, "acq op=" + op + " kind=mutex keys=k0 deadline=" + deadline(t + 1000)),
          ev(t + 1, "enter op=" + op + " tokens=k0:" + std::to_string(token)),
          ev(t + 3, "write op=" + op + " n=0 sent=" + sent(t + 2) + " result=" + result +
                        " err=ok values=k0:" + std::to_string(value) + " tokens=k0:" +
                        std::to_string(token) + " late=0"),
          ev(t + 4, "exit op=" + op)};
}

RunInput input(std::vector<std::pair<std::string, std::vector<Event>>> workers, std::int64_t counter,
               std::int64_t token) {
  RunInput in;
  in.workers = std::move(workers);
  in.final_state.counters["k0"] = counter;
  in.final_state.tokens["k0"] = token;
  return in;
}

std::vector<Event> concat(std::vector<Event> a, const std::vector<Event>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(ChaosChecker, CleanRunPasses) {
  const auto r = check(input({worker(1, concat(hold("a", 10, 100, 1), hold("c", 30, 300, 3))),
                              worker(2, hold("b", 20, 200, 2))},
                             3, 300));
  EXPECT_TRUE(r.ok()) << (r.examples.empty() ? "" : r.examples.front());
  EXPECT_EQ(r.acquisitions, 3);
  EXPECT_EQ(r.writes_accepted, 3);
}

TEST(ChaosChecker, OverlapIsAViolation) {
  // b enters at 13 while a holds until 14.
  const auto r = check(input({worker(1, hold("a", 10, 100, 1)), worker(2, hold("b", 12, 200, 2))}, 2, 200));
  EXPECT_EQ(r.violations.count("overlap"), 1u);
}

TEST(ChaosChecker, SuspendedNoticeEndsTheInterval) {
  // a's client is suspended at 12: b may enter at 13 without overlap.
  auto a = hold("a", 10, 100, 1);
  a.insert(a.begin() + 2, ev(12, "state s=suspended session=0"));
  auto r = check(input({worker(1, a), worker(2, hold("b", 12, 200, 2))}, 2, 200));
  EXPECT_EQ(r.violations.count("overlap"), 0u) << (r.examples.empty() ? "" : r.examples.front());
}

TEST(ChaosChecker, NemesisCutEndsTheInterval) {
  auto in = input({worker(1, hold("a", 10, 100, 1)), worker(2, hold("b", 12, 200, 2))}, 2, 200);
  in.nemesis.push_back(ev(12, "cut pid=1 why=pause_worker from=" + sent(11) + " to=" + sent(11)));
  auto r = check(in);
  EXPECT_EQ(r.violations.count("overlap"), 0u);
  // ...but a's write, sent at 12 after the cut's end at 11, was applied: fencing failed.
  EXPECT_EQ(r.violations.count("late_write"), 1u);
}

// Found in CI (seed 6): a MultiLock's grant, decided from replies read before
// the nemesis ended its session, reached the worker just after: its leases
// were void from the start, and it wrote nothing.
TEST(ChaosChecker, GrantInASessionAlreadyEndedIsVoidNotAnOverlap) {
  auto a = hold("a", 10, 100, 1);
  a[1] = ev(13, "enter op=a tokens=k0:100 sid=abc");  // after the cut below
  a[2] = ev(14, "write op=a n=0 sent=" + sent(13) +
                    " result=rejected err=no_node values=k0:1 tokens=k0:100 late=0");
  auto in = input({worker(1, a), worker(2, hold("b", 12, 200, 1))}, 1, 200);
  in.nemesis.push_back(ev(12, "cut pid=1 why=expire_session from=" + sent(11) + " to=" + sent(12) +
                                  " session=abc"));
  auto r = check(in);
  EXPECT_EQ(r.violations.count("overlap"), 0u) << (r.examples.empty() ? "" : r.examples.front());
  EXPECT_TRUE(r.ok()) << (r.examples.empty() ? "" : r.examples.front());
}

TEST(ChaosChecker, GrantInAnotherSessionThanTheEndedOneStillOverlaps) {
  auto a = hold("a", 10, 100, 1);
  a[1] = ev(13, "enter op=a tokens=k0:100 sid=def");  // a new session: the cut is not about it
  auto in = input({worker(1, a), worker(2, hold("b", 12, 200, 2))}, 2, 200);
  in.nemesis.push_back(ev(12, "cut pid=1 why=expire_session from=" + sent(11) + " to=" + sent(12) +
                                  " session=abc"));
  auto r = check(in);
  EXPECT_EQ(r.violations.count("overlap"), 1u);
}

TEST(ChaosChecker, DuplicateCounterValueIsALostUpdate) {
  const auto r = check(input({worker(1, hold("a", 10, 100, 1)), worker(2, hold("b", 20, 200, 1))}, 1, 200));
  EXPECT_GE(r.violations.count("lost_update"), 1u);
}

TEST(ChaosChecker, TokensMustGrow) {
  const auto r = check(input({worker(1, hold("a", 10, 300, 1)), worker(2, hold("b", 20, 200, 2))}, 2, 200));
  EXPECT_EQ(r.violations.count("token_order"), 1u);
}

TEST(ChaosChecker, UnknownWriteFillsAGapOnlyIfNeeded) {
  // b's outcome is unknown; the counter says it was applied (3 = a, b, c).
  auto ok = check(input({worker(1, concat(hold("a", 10, 100, 1), hold("c", 30, 300, 3))),
                         worker(2, hold("b", 20, 200, 2, "unknown"))},
                        3, 300));
  EXPECT_TRUE(ok.ok()) << (ok.examples.empty() ? "" : ok.examples.front());
  EXPECT_EQ(ok.unknown_applied, 1);
  // A counter value that no write explains.
  auto bad = check(input({worker(1, hold("a", 10, 100, 1))}, 2, 100));
  EXPECT_EQ(bad.violations.count("lost_update"), 1u);
}

TEST(ChaosChecker, WriteOfAKilledProcessIsUnknownNotMissing) {
  // b was killed after sending its write (no outcome on record), which the
  // server applied: the counter shows it, and that is no lost update.
  std::vector<Event> b{ev(20, "acq op=b kind=mutex keys=k0 deadline=" + deadline(1020)),
                       ev(21, "enter op=b tokens=k0:200"),
                       ev(22, "wsend op=b n=0 sent=" + sent(22) + " values=k0:2 tokens=k0:200 late=0")};
  auto in = input({worker(1, hold("a", 10, 100, 1)), worker(2, b)}, 2, 200);
  in.nemesis.push_back(ev(23, "cut pid=2 why=kill_worker from=" + sent(23) + " to=" + sent(23)));
  const auto r = check(in);
  EXPECT_TRUE(r.ok()) << (r.examples.empty() ? "" : r.examples.front());
  EXPECT_EQ(r.writes_unknown, 1);
  EXPECT_EQ(r.unknown_applied, 1);
}

TEST(ChaosChecker, UnknownMultiKeyWriteCountsOnce) {
  // One unknown write on two keys, applied: one write, two counters.
  std::vector<Event> a{ev(10, "acq op=a kind=multi keys=k0,k1 deadline=" + deadline(1010)),
                       ev(11, "enter op=a tokens=k0:100,k1:101"),
                       ev(13, "write op=a n=0 sent=" + sent(12) +
                                  " result=unknown err=connection_loss values=k0:1,k1:1 tokens=k0:100,k1:101 late=0"),
                       ev(14, "exit op=a")};
  auto in = input({worker(1, a)}, 1, 100);
  in.final_state.counters["k1"] = 1;
  in.final_state.tokens["k1"] = 101;
  const auto r = check(in);
  EXPECT_TRUE(r.ok()) << (r.examples.empty() ? "" : r.examples.front());
  EXPECT_EQ(r.unknown_applied, 1);
}

TEST(ChaosChecker, FinalTokenMustBeTheLastWritersToken) {
  const auto r = check(input({worker(1, hold("a", 10, 100, 1))}, 1, 99));
  EXPECT_EQ(r.violations.count("final_token"), 1u);
}

TEST(ChaosChecker, AcquireMustReturnWithinDeadlinePlusSessionTimeout) {
  // deadline at 1010 ms, session timeout 4000 ms: entering at 6000 ms is late.
  std::vector<Event> events{ev(10, "acq op=a kind=mutex keys=k0 deadline=" + deadline(1010)),
                            ev(6000, "noacq op=a why=timeout")};
  const auto r = check(input({worker(1, events)}, 0, 0));
  EXPECT_EQ(r.violations.count("acquire_overrun"), 1u);
  // The same, but the process was stopped for 2 s meanwhile: in time.
  auto in = input({worker(1, events)}, 0, 0);
  in.nemesis.push_back(ev(3000, "paused pid=1 from=" + sent(1000) + " to=" + sent(3000)));
  EXPECT_EQ(check(in).violations.count("acquire_overrun"), 0u);
}

TEST(ChaosChecker, LateWriteAfterSessionLossMustNotApply) {
  auto a = hold("a", 10, 100, 1);
  a.insert(a.begin() + 2, ev(11, "lost op=a key=k0 why=session_lost"));
  // The write (sent at 12) was accepted although the session was lost at 11.
  const auto r = check(input({worker(1, a)}, 1, 100));
  EXPECT_EQ(r.violations.count("late_write"), 1u);
}

TEST(ChaosChecker, LeftoverLockNodeIsAnOrphan) {
  auto in = input({}, 0, 0);
  in.final_state.lock_root_nodes.push_back({"/chaos/locks/k0", 0});
  in.final_state.lock_root_nodes.push_back({"/chaos/locks/k0/_c_x-lock-0000000001", 0x42});
  in.final_state.live_sessions.insert(0x7);
  const auto r = check(in);
  ASSERT_EQ(r.orphans.size(), 1u);
  EXPECT_NE(r.orphans[0].find("-lock-"), std::string::npos);
}

TEST(ChaosChecker, HoldWithNoEndIsAProblem) {
  std::vector<Event> events{ev(10, "acq op=a kind=mutex keys=k0 deadline=" + deadline(1010)),
                            ev(11, "enter op=a tokens=k0:100")};
  EXPECT_FALSE(check(input({worker(1, events)}, 0, 0)).ok());
}

}  // namespace
}  // namespace zkr::chaos
