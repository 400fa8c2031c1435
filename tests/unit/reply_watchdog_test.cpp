// When a session whose server has gone silent gets a nudge: the pure logic,
// driven by hand with a made-up clock.
#include <gtest/gtest.h>

#include <chrono>

#include "reply_watchdog.hpp"

namespace zkr::detail {
namespace {

using namespace std::chrono_literals;
using Clock = ReplyWatchdog::Clock;

constexpr auto kLimit = 500ms;
const Clock::time_point t0 = Clock::time_point{} + 1h;

TEST(ReplyWatchdogTest, NoNudgeWithNothingOutstanding) {
  ReplyWatchdog dog(kLimit);
  EXPECT_EQ(dog.next_deadline(), std::nullopt);
  EXPECT_FALSE(dog.take_nudge(t0));
  EXPECT_FALSE(dog.take_nudge(t0 + 1h));
  // Nor once everything sent was answered, however long the silence after.
  dog.on_sent(t0);
  dog.on_reply(t0 + 10ms);
  dog.on_event(t0 + 20ms);
  EXPECT_EQ(dog.outstanding(), 0u);
  EXPECT_EQ(dog.next_deadline(), std::nullopt);
  EXPECT_FALSE(dog.take_nudge(t0 + 1h));
}

TEST(ReplyWatchdogTest, NoNudgeWhileRepliesKeepComing) {
  ReplyWatchdog dog(kLimit);
  // A pipeline that never drains, but each reply comes within the limit of the
  // one before: a long total wait is not silence.
  auto now = t0;
  dog.on_sent(now);
  for (int i = 0; i < 100; ++i) {
    dog.on_sent(now);
    now += kLimit - 1ms;
    EXPECT_FALSE(dog.take_nudge(now)) << i;
    dog.on_reply(now);
    EXPECT_EQ(dog.next_deadline(), now + kLimit);
  }
  EXPECT_EQ(dog.outstanding(), 1u);
  EXPECT_FALSE(dog.nudge_in_flight());
}

TEST(ReplyWatchdogTest, OneNudgeAfterTheLimitOfSilence) {
  ReplyWatchdog dog(kLimit);
  dog.on_sent(t0);
  // More sends do not push the deadline: what is missing is replies.
  dog.on_sent(t0 + 300ms);
  EXPECT_EQ(dog.next_deadline(), t0 + kLimit);
  EXPECT_FALSE(dog.take_nudge(t0 + kLimit - 1ms));
  EXPECT_TRUE(dog.take_nudge(t0 + kLimit));
  EXPECT_TRUE(dog.nudge_in_flight());
}

TEST(ReplyWatchdogTest, AtMostOneNudgeInFlight) {
  ReplyWatchdog dog(kLimit);
  dog.on_sent(t0);
  ASSERT_TRUE(dog.take_nudge(t0 + kLimit));
  // However long its answer takes, and whatever else is sent meanwhile.
  dog.on_sent(t0 + kLimit + 1ms);
  EXPECT_EQ(dog.next_deadline(), std::nullopt);
  EXPECT_FALSE(dog.take_nudge(t0 + kLimit));
  EXPECT_FALSE(dog.take_nudge(t0 + 10 * kLimit));
  EXPECT_FALSE(dog.take_nudge(t0 + 1h));
}

TEST(ReplyWatchdogTest, NudgesAgainAfterAnotherLimitOfSilence) {
  ReplyWatchdog dog(kLimit);
  dog.on_sent(t0);
  ASSERT_TRUE(dog.take_nudge(t0 + kLimit));
  // The nudge is answered (or could not be sent) but the request is not.
  const auto answered = t0 + kLimit + 20ms;
  dog.on_nudge_answered(answered);
  EXPECT_FALSE(dog.nudge_in_flight());
  EXPECT_EQ(dog.next_deadline(), answered + kLimit);
  EXPECT_FALSE(dog.take_nudge(answered + kLimit - 1ms));
  EXPECT_TRUE(dog.take_nudge(answered + kLimit));
  dog.on_nudge_answered(answered + 2 * kLimit);
  EXPECT_TRUE(dog.take_nudge(answered + 3 * kLimit));
}

TEST(ReplyWatchdogTest, AReplyResetsTheSilence) {
  ReplyWatchdog dog(kLimit);
  dog.on_sent(t0);
  dog.on_sent(t0);
  dog.on_reply(t0 + 400ms);
  EXPECT_FALSE(dog.take_nudge(t0 + kLimit));
  EXPECT_EQ(dog.next_deadline(), t0 + 400ms + kLimit);
  EXPECT_TRUE(dog.take_nudge(t0 + 400ms + kLimit));
}

TEST(ReplyWatchdogTest, AnEventResetsTheSilence) {
  ReplyWatchdog dog(kLimit);
  dog.on_sent(t0);
  dog.on_event(t0 + 400ms);
  EXPECT_FALSE(dog.take_nudge(t0 + kLimit));
  EXPECT_TRUE(dog.take_nudge(t0 + 400ms + kLimit));
}

TEST(ReplyWatchdogTest, AWithdrawnRequestIsNoReply) {
  ReplyWatchdog dog(kLimit);
  dog.on_sent(t0);
  dog.on_sent(t0);
  // Refused by the client: one less outstanding, but nothing was heard.
  dog.on_withdrawn();
  EXPECT_EQ(dog.outstanding(), 1u);
  EXPECT_TRUE(dog.take_nudge(t0 + kLimit));
  // With nothing left outstanding, no nudge is due.
  ReplyWatchdog idle(kLimit);
  idle.on_sent(t0);
  idle.on_withdrawn();
  EXPECT_FALSE(idle.take_nudge(t0 + 1h));
}

TEST(ReplyWatchdogTest, SilenceIsMeasuredFromTheFirstSendAfterIdle) {
  ReplyWatchdog dog(kLimit);
  dog.on_sent(t0);
  dog.on_reply(t0 + 1ms);
  // Idle for an hour, then a request: its clock starts now, not at the reply.
  const auto later = t0 + 1h;
  dog.on_sent(later);
  EXPECT_FALSE(dog.take_nudge(later));
  EXPECT_EQ(dog.next_deadline(), later + kLimit);
}

TEST(ReplyWatchdogTest, QuietLimitIsATenthOfTheSessionTimeoutClamped) {
  EXPECT_EQ(ReplyWatchdog::quiet_limit_for(15s), 1000ms);
  EXPECT_EQ(ReplyWatchdog::quiet_limit_for(5s), 500ms);
  EXPECT_EQ(ReplyWatchdog::quiet_limit_for(1s), 200ms);
  EXPECT_EQ(ReplyWatchdog::quiet_limit_for(60s), 1000ms);
}

TEST(ReplyWatchdogTest, ANewLimitAppliesToTheSilenceSoFar) {
  ReplyWatchdog dog(kLimit);
  dog.on_sent(t0);
  dog.set_quiet_limit(200ms);
  EXPECT_EQ(dog.quiet_limit(), 200ms);
  EXPECT_TRUE(dog.take_nudge(t0 + 200ms));
}

}  // namespace
}  // namespace zkr::detail
