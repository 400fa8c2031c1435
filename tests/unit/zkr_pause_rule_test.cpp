// The rule by which `zkr lock`'s guard stops, resumes and kills the command's
// group (tools/zkr/pause_rule.hpp), as a pure function of proofs, holds and
// the time: no process, no clock.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "pause_rule.hpp"

namespace zkr::cli {
namespace {

using Action = PauseRule::Action;

constexpr std::int64_t kSecond = 1'000'000'000;
constexpr std::int64_t T = 6 * kSecond;  // the session timeout
constexpr std::int64_t t0 = 1000 * kSecond;

// Every action next() asks for at `now`, in order.
std::vector<Action> actions_at(PauseRule& rule, std::int64_t now) {
  std::vector<Action> out;
  for (auto a = rule.next(now); a != Action::none; a = rule.next(now)) out.push_back(a);
  return out;
}

TEST(ZkrPauseRule, StopsHalfASessionTimeoutAfterTheLastProofAndGoesOnWithAFreshOne) {
  PauseRule rule(T, t0);
  EXPECT_TRUE(actions_at(rule, t0).empty());
  EXPECT_EQ(rule.wake_at(), t0 + T / 2);
  EXPECT_TRUE(actions_at(rule, t0 + T / 2 - 1).empty());
  EXPECT_TRUE(rule.may_run(t0 + T / 2 - 1));
  EXPECT_FALSE(rule.may_run(t0 + T / 2));
  EXPECT_EQ(actions_at(rule, t0 + T / 2), std::vector<Action>{Action::stop});
  EXPECT_TRUE(actions_at(rule, t0 + T / 2 + 1).empty()) << "stopped once, not again";
  EXPECT_EQ(rule.wake_at(), t0 + 2 * T) << "stopped, it wakes next to kill";

  // A proof sent after the stop, and still in its half: the group goes on.
  const auto sent = t0 + T / 2 + kSecond;
  rule.proved(sent);
  EXPECT_EQ(actions_at(rule, sent + kSecond), std::vector<Action>{Action::resume});
  EXPECT_EQ(rule.wake_at(), sent + T / 2);
  EXPECT_EQ(actions_at(rule, sent + T / 2), std::vector<Action>{Action::stop});
}

TEST(ZkrPauseRule, AProofThatComesBackTooLateDoesNotResume) {
  PauseRule rule(T, t0);
  EXPECT_EQ(actions_at(rule, t0 + T / 2), std::vector<Action>{Action::stop});
  // Sent at t0 + 1 s, but its reply reached the guard only at t0 + 4 s.
  rule.proved(t0 + kSecond);
  EXPECT_TRUE(actions_at(rule, t0 + 4 * kSecond).empty());
  EXPECT_FALSE(rule.may_run(t0 + 4 * kSecond));
}

TEST(ZkrPauseRule, AnOlderProofNeverMovesTheStopBack) {
  PauseRule rule(T, t0);
  rule.proved(t0 + kSecond);
  rule.proved(t0);  // came in late
  EXPECT_EQ(rule.stop_at(), t0 + kSecond + T / 2);
}

TEST(ZkrPauseRule, HeldForCtrlZTheGroupStaysStoppedUntilReleasedAndProved) {
  PauseRule rule(T, t0);
  rule.hold();  // zkr stopped the group itself
  EXPECT_FALSE(rule.may_run(t0));
  rule.proved(t0 + kSecond);  // a proof sent just before zkr stopped
  EXPECT_TRUE(actions_at(rule, t0 + kSecond).empty()) << "resumed while zkr is stopped";
  // Released within the proof's half: on at once.
  rule.release();
  EXPECT_EQ(actions_at(rule, t0 + 2 * kSecond), std::vector<Action>{Action::resume});

  // Held past the half: released, it waits for a proof.
  rule.hold();
  const auto back = t0 + kSecond + T;
  rule.release();
  EXPECT_TRUE(actions_at(rule, back).empty());
  EXPECT_FALSE(rule.may_run(back));
  rule.proved(back);
  EXPECT_EQ(actions_at(rule, back + 1), std::vector<Action>{Action::resume});
}

TEST(ZkrPauseRule, KillsTwiceTheSessionTimeoutAfterTheLastProofHeldOrNotAndOnce) {
  for (const bool held : {false, true}) {
    PauseRule rule(T, t0);
    if (held) rule.hold();
    EXPECT_TRUE(actions_at(rule, t0 + 2 * T - 1).size() <= 1);  // at most the stop
    EXPECT_EQ(actions_at(rule, t0 + 2 * T), std::vector<Action>{Action::kill}) << held;
    EXPECT_EQ(rule.wake_at(), PauseRule::kNever);
    rule.proved(t0 + 2 * T);
    rule.release();
    EXPECT_TRUE(actions_at(rule, t0 + 2 * T + 1).empty()) << "a killed group is not resumed";
  }
  // Asked first after the kill time (the guard was late): straight to kill.
  PauseRule late(T, t0);
  EXPECT_EQ(actions_at(late, t0 + 3 * T), std::vector<Action>{Action::kill});
}

TEST(ZkrPauseRule, EndingForALostLockTheGroupIsStoppedNoMoreButStillKilledLate) {
  PauseRule rule(T, t0);
  EXPECT_TRUE(rule.unexpired(t0 + T - 1));
  EXPECT_FALSE(rule.unexpired(t0 + T));
  EXPECT_EQ(actions_at(rule, t0 + T / 2), std::vector<Action>{Action::stop});
  rule.terminating();  // zkr sent SIGTERM, and SIGCONT
  EXPECT_TRUE(actions_at(rule, t0 + T / 2 + 1).empty());
  EXPECT_EQ(rule.wake_at(), t0 + 2 * T);
  EXPECT_EQ(actions_at(rule, t0 + 2 * T), std::vector<Action>{Action::kill});

  PauseRule running(T, t0);
  running.terminating();  // before the stop was due: none comes
  EXPECT_TRUE(actions_at(running, t0 + T).empty());
  EXPECT_EQ(actions_at(running, t0 + 2 * T), std::vector<Action>{Action::kill});
}

TEST(ZkrPauseRule, ProofsEveryInterval_WithRepliesUnderAThird_NeverStopAHealthyRun) {
  const auto interval = PauseRule::proof_interval(T);
  EXPECT_EQ(interval, T / 6);
  PauseRule rule(T, t0);
  const auto round_trip = T / 3 - 1;
  for (std::int64_t sent = t0 + interval; sent < t0 + 100 * T; sent += interval) {
    // The guard wakes at each of its deadlines before the reply is in.
    EXPECT_TRUE(actions_at(rule, sent + round_trip - 1).empty()) << "stopped at " << sent - t0;
    rule.proved(sent);
  }
}

// Whatever the order of proofs, holds and wake-ups, after the guard has acted
// at `now` the group runs only if the last proof is less than half a session
// timeout old and zkr is not held; and never past twice the session timeout.
TEST(ZkrPauseRule, RandomHistoriesNeverLeaveTheGroupRunningUnproved) {
  std::mt19937_64 random(20261126);
  for (int history = 0; history < 2000; ++history) {
    PauseRule rule(T, t0);
    std::int64_t now = t0, proven = t0;
    bool held = false, running = true, killed = false;
    for (int step = 0; step < 60; ++step) {
      now += static_cast<std::int64_t>(random() % static_cast<std::uint64_t>(T / 2));
      switch (random() % 4) {
        case 0: {
          const auto sent =
              now - static_cast<std::int64_t>(random() % static_cast<std::uint64_t>(T));
          rule.proved(sent);
          proven = std::max(proven, sent);
          break;
        }
        case 1:
          if (!held && !killed) {
            rule.hold();
            held = true;
            running = false;  // zkr stops the group itself
          }
          break;
        case 2:
          rule.release();
          held = false;
          break;
        default: break;
      }
      for (const auto a : actions_at(rule, now)) {
        ASSERT_FALSE(killed) << "acted after the kill";
        if (a == Action::stop) running = false;
        if (a == Action::resume) running = true;
        if (a == Action::kill) killed = true;
      }
      if (killed) break;
      EXPECT_EQ(running, !held && now < proven + T / 2)
          << "history " << history << " step " << step;
      EXPECT_LT(now, proven + 2 * T);
    }
  }
}

}  // namespace
}  // namespace zkr::cli
