#include "zkr/retry.hpp"

#include <stdexcept>
#include <thread>

namespace zkr {
namespace {

// Past this many doublings base * 2^n overflows long before it means anything.
constexpr int kMaxExponent = 29;

void require(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(what);
}

}  // namespace

ExponentialBackoffRetry::ExponentialBackoffRetry(milliseconds base_sleep, int max_retries,
                                                 milliseconds max_sleep, std::uint64_t seed)
    : base_(base_sleep),
      max_retries_(std::min(max_retries, kMaxExponent)),
      max_sleep_(max_sleep),
      rng_(seed) {
  require(base_sleep > milliseconds::zero(), "ExponentialBackoffRetry: base_sleep must be > 0 ms");
  require(max_retries >= 0, "ExponentialBackoffRetry: max_retries must be >= 0");
  require(max_sleep > milliseconds::zero(), "ExponentialBackoffRetry: max_sleep must be > 0 ms");
}

std::optional<milliseconds> ExponentialBackoffRetry::next_delay(int retries_so_far,
                                                                milliseconds) const {
  if (retries_so_far < 0 || retries_so_far >= max_retries_) return std::nullopt;
  // base * 2^n, compared against the cap before multiplying so it cannot overflow.
  const auto base = base_.count();
  const auto cap = max_sleep_.count();
  const auto full = base > (cap >> retries_so_far) ? cap : std::min(cap, base << retries_so_far);
  // Equal jitter: half the delay is kept, the other half is random.
  std::uniform_int_distribution<milliseconds::rep> jitter(full - full / 2, full);
  std::lock_guard lock(mutex_);
  return milliseconds(jitter(rng_));
}

BoundedExponentialBackoffRetry::BoundedExponentialBackoffRetry(milliseconds base_sleep,
                                                               milliseconds max_sleep,
                                                               milliseconds max_elapsed,
                                                               std::uint64_t seed)
    : backoff_(base_sleep, kMaxExponent, max_sleep, seed), max_elapsed_(max_elapsed) {
  require(max_elapsed > milliseconds::zero(),
          "BoundedExponentialBackoffRetry: max_elapsed must be > 0 ms");
}

std::optional<milliseconds> BoundedExponentialBackoffRetry::next_delay(int retries_so_far,
                                                                       milliseconds elapsed) const {
  // The time budget is the only limit: past the last doubling the delay stays
  // at its cap instead of giving up.
  const auto delay = backoff_.next_delay(std::min(retries_so_far, kMaxExponent - 1), elapsed);
  if (!delay || elapsed + *delay > max_elapsed_) return std::nullopt;
  return delay;
}

RetryNTimes::RetryNTimes(int n, milliseconds sleep_between) : n_(n), sleep_(sleep_between) {
  require(n >= 0, "RetryNTimes: n must be >= 0");
  require(sleep_between >= milliseconds::zero(), "RetryNTimes: sleep_between must be >= 0 ms");
}

std::optional<milliseconds> RetryNTimes::next_delay(int retries_so_far, milliseconds) const {
  if (retries_so_far < 0 || retries_so_far >= n_) return std::nullopt;
  return sleep_;
}

RetryUntilElapsed::RetryUntilElapsed(milliseconds max_elapsed, milliseconds sleep_between)
    : max_elapsed_(max_elapsed), sleep_(sleep_between) {
  require(max_elapsed >= milliseconds::zero(), "RetryUntilElapsed: max_elapsed must be >= 0 ms");
  require(sleep_between >= milliseconds::zero(),
          "RetryUntilElapsed: sleep_between must be >= 0 ms");
}

std::optional<milliseconds> RetryUntilElapsed::next_delay(int, milliseconds elapsed) const {
  // Like the bounded backoff: no sleep that would end past the budget.
  if (elapsed + sleep_ > max_elapsed_) return std::nullopt;
  return sleep_;
}

RetryForever::RetryForever(milliseconds sleep_between) : sleep_(sleep_between) {
  // Forever without a pause would hammer the ensemble in a tight loop.
  require(sleep_between > milliseconds::zero(), "RetryForever: sleep_between must be > 0 ms");
}

std::optional<milliseconds> RetryForever::next_delay(int, milliseconds) const { return sleep_; }

// The one deliberate sleep of the library: the pause between retries.
void RealSleeper::sleep_for(milliseconds delay) { std::this_thread::sleep_for(delay); }

void RecordingSleeper::sleep_for(milliseconds delay) {
  std::lock_guard lock(mutex_);
  delays_.push_back(delay);
}

milliseconds RecordingSleeper::timer_delay(milliseconds delay) {
  sleep_for(delay);
  return milliseconds::zero();
}

std::vector<milliseconds> RecordingSleeper::delays() const {
  std::lock_guard lock(mutex_);
  return delays_;
}

milliseconds RecordingSleeper::total() const {
  std::lock_guard lock(mutex_);
  milliseconds sum{0};
  for (auto d : delays_) sum += d;
  return sum;
}

namespace detail {

bool should_retry(Errc e, const RetryOptions& options) noexcept {
  return is_retryable(e) || (options.retry_session_expired && e == Errc::session_expired);
}

}  // namespace detail
}  // namespace zkr
