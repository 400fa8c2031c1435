// Latency samples and their percentiles, and a monotonic stopwatch.
#pragma once

#include <chrono>
#include <cstddef>
#include <vector>

namespace zkr::bench {

using Clock = std::chrono::steady_clock;

inline double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}
inline double seconds_since(Clock::time_point from) {
  return ms_between(from, Clock::now()) / 1000.0;
}

struct Percentiles {
  std::size_t count = 0;
  double p50_ms = 0, p99_ms = 0, max_ms = 0, mean_ms = 0;
};

// Samples in milliseconds. Not thread-safe: one per thread, then merge().
class Samples {
 public:
  explicit Samples(std::size_t expected = 0) { ms_.reserve(expected); }
  void add(double ms) { ms_.push_back(ms); }
  void merge(const Samples& other) { ms_.insert(ms_.end(), other.ms_.begin(), other.ms_.end()); }
  std::size_t size() const noexcept { return ms_.size(); }
  // Nearest-rank percentiles; all zero when empty.
  Percentiles percentiles() const;

 private:
  std::vector<double> ms_;
};

}  // namespace zkr::bench
