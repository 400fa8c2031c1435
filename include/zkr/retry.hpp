// zkr/retry.hpp: retry policies and the retry loop.
//
// A policy only decides: "retry after this delay" or "give up". The loop sleeps
// through a Sleeper, so tests inject one that records delays and takes no time.
//
//   zkr::ExponentialBackoffRetry policy(100ms, /*max_retries=*/5, /*max_sleep=*/2s);
//   zkr::RealSleeper sleeper;
//   auto data = zkr::call_with_retry(policy, sleeper, [&] { return keeper.get("/a"); });
//
// Only errors for which zkr::is_retryable() holds are retried, and only the
// caller knows whether its operation is safe to repeat: reads, deletes by
// version, and creates with a protected name are; a blind create or an
// unversioned set is not, because the first attempt may have been applied
// before the connection dropped.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "zkr/error.hpp"

namespace zkr {

using std::chrono::milliseconds;

class RetryPolicy {
 public:
  virtual ~RetryPolicy() = default;
  // The delay before the next attempt, after `retries_so_far` retries and
  // `elapsed` time since the first attempt began; nullopt to give up.
  virtual std::optional<milliseconds> next_delay(int retries_so_far,
                                                 milliseconds elapsed) const = 0;
};

// Delay base * 2^n, capped at max_sleep, with "equal jitter": a random value in
// [d/2, d]. Jitter matters because clients that lose the same server at the same
// moment would otherwise retry in lock step and hit the next server together.
// max_retries is capped at 29 (2^29 * base overflows any sane cap).
class ExponentialBackoffRetry : public RetryPolicy {
 public:
  ExponentialBackoffRetry(milliseconds base_sleep, int max_retries,
                          milliseconds max_sleep = std::chrono::seconds(30),
                          std::uint64_t seed = std::random_device{}());
  std::optional<milliseconds> next_delay(int retries_so_far, milliseconds elapsed) const override;

 private:
  milliseconds base_;
  int max_retries_;
  milliseconds max_sleep_;
  mutable std::mutex mutex_;
  mutable std::mt19937_64 rng_;  // guarded by mutex_
};

// Exponential backoff with jitter and a cap, and also a total time budget:
// gives up once the next sleep would end past max_elapsed.
class BoundedExponentialBackoffRetry : public RetryPolicy {
 public:
  BoundedExponentialBackoffRetry(milliseconds base_sleep, milliseconds max_sleep,
                                 milliseconds max_elapsed,
                                 std::uint64_t seed = std::random_device{}());
  std::optional<milliseconds> next_delay(int retries_so_far, milliseconds elapsed) const override;

 private:
  ExponentialBackoffRetry backoff_;
  milliseconds max_elapsed_;
};

class RetryNTimes : public RetryPolicy {
 public:
  RetryNTimes(int n, milliseconds sleep_between);
  std::optional<milliseconds> next_delay(int retries_so_far, milliseconds elapsed) const override;

 private:
  int n_;
  milliseconds sleep_;
};

class RetryOneTime : public RetryNTimes {
 public:
  explicit RetryOneTime(milliseconds sleep_between) : RetryNTimes(1, sleep_between) {}
};

class RetryUntilElapsed : public RetryPolicy {
 public:
  RetryUntilElapsed(milliseconds max_elapsed, milliseconds sleep_between);
  std::optional<milliseconds> next_delay(int retries_so_far, milliseconds elapsed) const override;

 private:
  milliseconds max_elapsed_;
  milliseconds sleep_;
};

class RetryForever : public RetryPolicy {
 public:
  explicit RetryForever(milliseconds sleep_between);
  std::optional<milliseconds> next_delay(int retries_so_far, milliseconds elapsed) const override;

 private:
  milliseconds sleep_;
};

class NoRetry : public RetryPolicy {
 public:
  std::optional<milliseconds> next_delay(int, milliseconds) const override { return std::nullopt; }
};

// Sleeps between attempts. The only place the library sleeps on purpose.
class Sleeper {
 public:
  virtual ~Sleeper() = default;
  virtual void sleep_for(milliseconds delay) = 0;
  // For a retry that must not block its thread (a lock acquire waits on a
  // timer instead): counts `delay` as slept, and says how long the timer is
  // to run. The delay itself, unless the sleeper keeps a virtual clock.
  virtual milliseconds timer_delay(milliseconds delay) { return delay; }
};

class RealSleeper : public Sleeper {
 public:
  void sleep_for(milliseconds delay) override;
};

// For tests: records each delay, advances a virtual clock, never sleeps.
class RecordingSleeper : public Sleeper {
 public:
  void sleep_for(milliseconds delay) override;
  milliseconds timer_delay(milliseconds delay) override;  // records it; zero
  std::vector<milliseconds> delays() const;
  milliseconds total() const;

 private:
  mutable std::mutex mutex_;
  std::vector<milliseconds> delays_;  // guarded by mutex_
};

// Which errors the loop retries besides is_retryable() ones.
struct RetryOptions {
  // Retry after session_expired too: right for operations that do not belong to
  // a session (reads, persistent writes), wrong for anything ephemeral.
  bool retry_session_expired = false;
};

namespace detail {
bool should_retry(Errc e, const RetryOptions& options) noexcept;
}

// The bookkeeping of one retried operation, shared by every retry loop of the
// library (call_with_retry, and the locks' own): retries so far, time since
// the first attempt, and an optional deadline no retry may sleep past.
// Elapsed time is the larger of the real time and the sum of the sleeps, so
// that a recording sleeper's virtual time counts and a real one's is not
// counted twice.
//
//   RetryBudget budget(policy, sleeper, deadline);
//   for (;;) {
//     try { return attempt(); } catch (const KeeperError& e) {
//       if (!is_retryable(e.errc())) throw;
//       const auto step = budget.next();
//       if (step.verdict == RetryBudget::Verdict::give_up) throw;
//       if (step.verdict == RetryBudget::Verdict::past_deadline) return nothing;
//       budget.sleep(step);
//     }
//   }
class RetryBudget {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Verdict {
    retry,          // sleep step.delay, then try again
    give_up,        // the policy says so
    past_deadline,  // the delay would end at or past the deadline
  };
  struct Step {
    Verdict verdict = Verdict::give_up;
    milliseconds delay{0};
  };

  RetryBudget(const RetryPolicy& policy, Sleeper& sleeper,
              std::optional<Clock::time_point> deadline = std::nullopt)
      : policy_(policy), sleeper_(sleeper), deadline_(deadline), start_(Clock::now()) {}

  // After a failed attempt: what to do next (counts it as a retry).
  Step next() {
    const auto elapsed =
        std::max(std::chrono::duration_cast<milliseconds>(Clock::now() - start_), slept_);
    const auto delay = policy_.next_delay(retries_++, elapsed);
    if (!delay) return {Verdict::give_up, milliseconds{0}};
    if (deadline_ && Clock::now() + *delay >= *deadline_) return {Verdict::past_deadline, *delay};
    return {Verdict::retry, *delay};
  }
  // Sleeps a retry step's delay through the sleeper.
  void sleep(const Step& step) {
    sleeper_.sleep_for(step.delay);
    slept_ += step.delay;
  }
  // The same for a caller that waits on a timer rather than sleep: counts
  // the delay, and returns how long the timer is to run (Sleeper::timer_delay).
  milliseconds timer_delay(const Step& step) {
    slept_ += step.delay;
    return sleeper_.timer_delay(step.delay);
  }
  int retries() const noexcept { return retries_; }

 private:
  const RetryPolicy& policy_;
  Sleeper& sleeper_;
  const std::optional<Clock::time_point> deadline_;
  const Clock::time_point start_;
  int retries_ = 0;
  milliseconds slept_{0};
};

// Calls op() until it returns, throws an error that is not retried, or the
// policy gives up (then the last KeeperError propagates).
template <class Op>
auto call_with_retry(const RetryPolicy& policy, Sleeper& sleeper, Op&& op,
                     RetryOptions options = {}) -> decltype(op()) {
  RetryBudget budget(policy, sleeper);
  for (;;) {
    try {
      return op();
    } catch (const KeeperError& e) {
      if (!detail::should_retry(e.errc(), options)) throw;
      const auto step = budget.next();
      if (step.verdict != RetryBudget::Verdict::retry) throw;
      budget.sleep(step);
    }
  }
}

}  // namespace zkr
