#include "stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace zkr::bench {

Percentiles Samples::percentiles() const {
  Percentiles p;
  p.count = ms_.size();
  if (ms_.empty()) return p;
  std::vector<double> sorted = ms_;
  std::sort(sorted.begin(), sorted.end());
  const auto rank = [&](double q) {
    const auto r = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
    return sorted[std::clamp<std::size_t>(r, 1, sorted.size()) - 1];
  };
  p.p50_ms = rank(0.50);
  p.p99_ms = rank(0.99);
  p.max_ms = sorted.back();
  p.mean_ms =
      std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(sorted.size());
  return p;
}

}  // namespace zkr::bench
