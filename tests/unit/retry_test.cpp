// Retry policies and the retry loop: the arithmetic of every policy, and what
// the loop retries. Sleeps are recorded, never taken.
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "zkr/retry.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

constexpr std::uint64_t kSeed = 42;

// ---- ExponentialBackoffRetry

TEST(ExponentialBackoffRetry, DelaysDoubleWithinEqualJitterRange) {
  ExponentialBackoffRetry policy(100ms, 10, 1h, kSeed);
  for (int n = 0; n < 10; ++n) {
    const milliseconds full = 100ms * (1 << n);
    for (int sample = 0; sample < 50; ++sample) {
      const auto d = policy.next_delay(n, 0ms);
      ASSERT_TRUE(d.has_value()) << "retry " << n;
      EXPECT_GE(*d, full / 2) << "retry " << n;
      EXPECT_LE(*d, full) << "retry " << n;
    }
  }
}

TEST(ExponentialBackoffRetry, JitterActuallyVaries) {
  ExponentialBackoffRetry policy(1000ms, 5, 1h, kSeed);
  std::set<milliseconds::rep> seen;
  for (int i = 0; i < 20; ++i) seen.insert(policy.next_delay(3, 0ms)->count());
  EXPECT_GT(seen.size(), 5u);
}

TEST(ExponentialBackoffRetry, SameSeedSameSequence) {
  ExponentialBackoffRetry a(100ms, 8, 10s, kSeed);
  ExponentialBackoffRetry b(100ms, 8, 10s, kSeed);
  for (int n = 0; n < 8; ++n) EXPECT_EQ(a.next_delay(n, 0ms), b.next_delay(n, 0ms));
}

TEST(ExponentialBackoffRetry, CappedAtMaxSleep) {
  ExponentialBackoffRetry policy(100ms, 29, 2s, kSeed);
  for (int n = 5; n < 29; ++n) {  // 100 ms * 2^5 > 2 s already
    const auto d = policy.next_delay(n, 0ms);
    ASSERT_TRUE(d.has_value());
    EXPECT_GE(*d, 1s);
    EXPECT_LE(*d, 2s);
  }
}

TEST(ExponentialBackoffRetry, NoOverflowAtHighestExponent) {
  ExponentialBackoffRetry policy(milliseconds(1'000'000'000), 29,
                                 milliseconds(std::numeric_limits<std::int64_t>::max() / 2), kSeed);
  const auto d = policy.next_delay(28, 0ms);
  ASSERT_TRUE(d.has_value());
  EXPECT_GT(*d, 0ms);
}

TEST(ExponentialBackoffRetry, GivesUpAfterMaxRetries) {
  ExponentialBackoffRetry policy(10ms, 3, 1s, kSeed);
  EXPECT_TRUE(policy.next_delay(0, 0ms));
  EXPECT_TRUE(policy.next_delay(2, 0ms));
  EXPECT_FALSE(policy.next_delay(3, 0ms));
  EXPECT_FALSE(policy.next_delay(4, 0ms));
}

TEST(ExponentialBackoffRetry, MaxRetriesCappedAt29) {
  ExponentialBackoffRetry policy(1ms, 1000, 1s, kSeed);
  EXPECT_TRUE(policy.next_delay(28, 0ms));
  EXPECT_FALSE(policy.next_delay(29, 0ms));
}

TEST(ExponentialBackoffRetry, ZeroRetriesNeverRetries) {
  ExponentialBackoffRetry policy(10ms, 0, 1s, kSeed);
  EXPECT_FALSE(policy.next_delay(0, 0ms));
}

TEST(ExponentialBackoffRetry, OneMillisecondBaseNeverSleepsZero) {
  ExponentialBackoffRetry policy(1ms, 1, 1s, kSeed);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(policy.next_delay(0, 0ms), 1ms);
}

TEST(ExponentialBackoffRetry, RejectsBadArguments) {
  const auto throws_naming = [](auto make, const std::string& name) {
    try {
      make();
      ADD_FAILURE() << "no exception for " << name;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  };
  throws_naming([] { ExponentialBackoffRetry(0ms, 3); }, "base_sleep");
  throws_naming([] { ExponentialBackoffRetry(-5ms, 3); }, "base_sleep");
  throws_naming([] { ExponentialBackoffRetry(10ms, -1); }, "max_retries");
  throws_naming([] { ExponentialBackoffRetry(10ms, 3, 0ms); }, "max_sleep");
  throws_naming([] { BoundedExponentialBackoffRetry(10ms, 1s, 0ms); }, "max_elapsed");
  throws_naming([] { BoundedExponentialBackoffRetry(0ms, 1s, 1s); }, "base_sleep");
  throws_naming([] { RetryNTimes(-1, 10ms); }, "n must");
  throws_naming([] { RetryNTimes(3, -1ms); }, "sleep_between");
  throws_naming([] { RetryOneTime(-1ms); }, "sleep_between");
  throws_naming([] { RetryUntilElapsed(-1ms, 10ms); }, "max_elapsed");
  throws_naming([] { RetryUntilElapsed(1s, -1ms); }, "sleep_between");
  throws_naming([] { RetryForever(0ms); }, "sleep_between");
}

// ---- BoundedExponentialBackoffRetry

TEST(BoundedExponentialBackoffRetry, GivesUpWhenTheSleepWouldEndPastTheBudget) {
  BoundedExponentialBackoffRetry policy(100ms, 400ms, 1s, kSeed);
  const auto d = policy.next_delay(0, 0ms);
  ASSERT_TRUE(d);
  EXPECT_GE(*d, 50ms);
  EXPECT_LE(*d, 100ms);
  EXPECT_TRUE(policy.next_delay(2, 600ms));   // at most 400 ms: ends by 1 s
  EXPECT_FALSE(policy.next_delay(0, 951ms));  // at least 50 ms: ends past 1 s
  EXPECT_FALSE(policy.next_delay(0, 1s));
}

TEST(BoundedExponentialBackoffRetry, KeepsRetryingAtTheCapWhileTimeRemains) {
  BoundedExponentialBackoffRetry policy(1ms, 10ms, 1h, kSeed);
  for (int n : {0, 10, 28, 29, 100, 10000}) {
    const auto d = policy.next_delay(n, 0ms);
    ASSERT_TRUE(d) << n;
    EXPECT_LE(*d, 10ms);
  }
}

// ---- Fixed-delay policies

TEST(RetryNTimes, RetriesExactlyN) {
  RetryNTimes policy(3, 25ms);
  EXPECT_EQ(policy.next_delay(0, 0ms), 25ms);
  EXPECT_EQ(policy.next_delay(2, 10h), 25ms);  // time does not matter
  EXPECT_FALSE(policy.next_delay(3, 0ms));
}

TEST(RetryNTimes, ZeroSleepIsAllowed) {
  RetryNTimes policy(1, 0ms);
  EXPECT_EQ(policy.next_delay(0, 0ms), 0ms);
}

TEST(RetryOneTime, RetriesOnce) {
  RetryOneTime policy(5ms);
  EXPECT_EQ(policy.next_delay(0, 0ms), 5ms);
  EXPECT_FALSE(policy.next_delay(1, 0ms));
}

TEST(RetryUntilElapsed, RetriesWhileTheSleepEndsWithinTheBudget) {
  RetryUntilElapsed policy(100ms, 30ms);
  EXPECT_EQ(policy.next_delay(0, 0ms), 30ms);
  EXPECT_EQ(policy.next_delay(50, 70ms), 30ms);
  EXPECT_FALSE(policy.next_delay(0, 71ms));
}

TEST(RetryForever, NeverGivesUp) {
  RetryForever policy(7ms);
  EXPECT_EQ(policy.next_delay(0, 0ms), 7ms);
  EXPECT_EQ(policy.next_delay(1'000'000, 1000h), 7ms);
}

TEST(NoRetry, GivesUpAtOnce) {
  NoRetry policy;
  EXPECT_FALSE(policy.next_delay(0, 0ms));
}

// ---- Sleepers

TEST(RecordingSleeper, RecordsAndSums) {
  RecordingSleeper sleeper;
  sleeper.sleep_for(10ms);
  sleeper.sleep_for(1h);
  EXPECT_EQ(sleeper.delays(), (std::vector<milliseconds>{10ms, 1h}));
  EXPECT_EQ(sleeper.total(), 1h + 10ms);
}

TEST(RealSleeper, SleepsAtLeastTheDelay) {
  RealSleeper sleeper;
  const auto start = std::chrono::steady_clock::now();
  sleeper.sleep_for(5ms);
  sleeper.sleep_for(-5ms);  // no-op
  EXPECT_GE(std::chrono::steady_clock::now() - start, 5ms);
}

// ---- The loop

// An operation that fails with the given codes in turn, then returns its call count.
struct Scripted {
  std::vector<Errc> failures;
  int calls = 0;
  int operator()() {
    ++calls;
    if (static_cast<std::size_t>(calls) <= failures.size())
      throw KeeperError(failures[calls - 1], "/a");
    return calls;
  }
};

TEST(CallWithRetry, ReturnsAtOnceOnSuccess) {
  RetryNTimes policy(3, 10ms);
  RecordingSleeper sleeper;
  Scripted op;
  EXPECT_EQ(call_with_retry(policy, sleeper, std::ref(op)), 1);
  EXPECT_TRUE(sleeper.delays().empty());
}

TEST(CallWithRetry, RetriesRetryableErrors) {
  RetryNTimes policy(5, 10ms);
  RecordingSleeper sleeper;
  Scripted op{
      {Errc::connection_loss, Errc::operation_timeout, Errc::session_moved, Errc::throttled_op}};
  EXPECT_EQ(call_with_retry(policy, sleeper, std::ref(op)), 5);
  EXPECT_EQ(sleeper.delays(), std::vector<milliseconds>(4, 10ms));
}

TEST(CallWithRetry, NeverRetriesErrorsAboutTheRequest) {
  for (Errc e : {Errc::no_auth, Errc::bad_arguments, Errc::no_node, Errc::node_exists,
                 Errc::bad_version, Errc::not_empty, Errc::auth_failed, Errc::closing}) {
    RetryNTimes policy(5, 10ms);
    RecordingSleeper sleeper;
    Scripted op{{e}};
    try {
      call_with_retry(policy, sleeper, std::ref(op));
      ADD_FAILURE() << "no exception for " << errc_name(e);
    } catch (const KeeperError& error) {
      EXPECT_EQ(error.errc(), e);
    }
    EXPECT_EQ(op.calls, 1) << errc_name(e);
    EXPECT_TRUE(sleeper.delays().empty()) << errc_name(e);
  }
}

TEST(CallWithRetry, SessionExpiredOnlyWithTheOption) {
  RetryNTimes policy(5, 10ms);
  {
    RecordingSleeper sleeper;
    Scripted op{{Errc::session_expired}};
    EXPECT_THROW(call_with_retry(policy, sleeper, std::ref(op)), KeeperError);
    EXPECT_EQ(op.calls, 1);
  }
  {
    RecordingSleeper sleeper;
    Scripted op{{Errc::session_expired, Errc::connection_loss}};
    EXPECT_EQ(call_with_retry(policy, sleeper, std::ref(op), {.retry_session_expired = true}), 3);
    EXPECT_EQ(sleeper.delays().size(), 2u);
  }
}

TEST(CallWithRetry, GivesUpWithTheLastErrorAfterThePolicysRetries) {
  RetryNTimes policy(3, 10ms);
  RecordingSleeper sleeper;
  Scripted op{std::vector<Errc>(10, Errc::connection_loss)};
  try {
    call_with_retry(policy, sleeper, std::ref(op));
    ADD_FAILURE() << "no exception";
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::connection_loss);
    EXPECT_EQ(e.path(), "/a");
  }
  EXPECT_EQ(op.calls, 4);  // the first attempt and 3 retries
  EXPECT_EQ(sleeper.delays(), std::vector<milliseconds>(3, 10ms));
}

TEST(CallWithRetry, VirtualTimeCountsTowardsElapsed) {
  // 30 ms sleeps within a 100 ms budget: after 0, 30 and 60 ms of recorded
  // sleep; a fourth would end at 120 ms.
  RetryUntilElapsed policy(100ms, 30ms);
  RecordingSleeper sleeper;
  Scripted op{std::vector<Errc>(10, Errc::connection_loss)};
  EXPECT_THROW(call_with_retry(policy, sleeper, std::ref(op)), KeeperError);
  EXPECT_EQ(sleeper.delays(), std::vector<milliseconds>(3, 30ms));
}

// The budget every retry loop of the library keeps: counts retries, counts
// virtual sleeps as elapsed time, and never sleeps past a deadline.
TEST(RetryBudget, CountsRetriesAndVirtualTime) {
  RetryUntilElapsed policy(100ms, 30ms);
  RecordingSleeper sleeper;
  RetryBudget budget(policy, sleeper);
  for (int i = 0; i < 3; ++i) {
    const auto step = budget.next();
    ASSERT_EQ(step.verdict, RetryBudget::Verdict::retry) << "retry " << i;
    EXPECT_EQ(step.delay, 30ms);
    budget.sleep(step);
  }
  EXPECT_EQ(budget.next().verdict, RetryBudget::Verdict::give_up);  // 90 + 30 > 100 ms
  EXPECT_EQ(budget.retries(), 4);
  EXPECT_EQ(sleeper.total(), 90ms);
}

TEST(RetryBudget, NeverSleepsPastTheDeadline) {
  RetryForever policy(50ms);
  RecordingSleeper sleeper;
  RetryBudget near(policy, sleeper, std::chrono::steady_clock::now() + 20ms);
  const auto step = near.next();
  EXPECT_EQ(step.verdict, RetryBudget::Verdict::past_deadline);
  EXPECT_EQ(step.delay, 50ms);
  RetryBudget far(policy, sleeper, std::chrono::steady_clock::now() + 1h);
  EXPECT_EQ(far.next().verdict, RetryBudget::Verdict::retry);
  EXPECT_TRUE(sleeper.delays().empty());  // deciding sleeps nothing
}

TEST(CallWithRetry, ExponentialDelaysAreRecordedAndTakeNoWallTime) {
  ExponentialBackoffRetry policy(1s, 5, 1h, kSeed);
  RecordingSleeper sleeper;
  Scripted op{std::vector<Errc>(10, Errc::connection_loss)};
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(call_with_retry(policy, sleeper, std::ref(op)), KeeperError);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  const auto delays = sleeper.delays();
  ASSERT_EQ(delays.size(), 5u);
  for (std::size_t n = 0; n < delays.size(); ++n) {
    const milliseconds full = 1s * (1 << n);
    EXPECT_GE(delays[n], full / 2);
    EXPECT_LE(delays[n], full);
  }
}

TEST(CallWithRetry, OtherExceptionsPassThroughUntouched) {
  RetryNTimes policy(3, 10ms);
  RecordingSleeper sleeper;
  int calls = 0;
  EXPECT_THROW(call_with_retry(policy, sleeper,
                               [&]() -> int {
                                 ++calls;
                                 throw std::runtime_error("boom");
                               }),
               std::runtime_error);
  EXPECT_EQ(calls, 1);
}

TEST(ShouldRetry, MatchesIsRetryablePlusTheOption) {
  for (Errc e : kAllErrc) {
    EXPECT_EQ(detail::should_retry(e, {}), is_retryable(e)) << errc_name(e);
    EXPECT_EQ(detail::should_retry(e, {.retry_session_expired = true}),
              is_retryable(e) || e == Errc::session_expired)
        << errc_name(e);
  }
}

}  // namespace
}  // namespace zkr
