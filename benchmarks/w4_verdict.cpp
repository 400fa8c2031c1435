#include "w4_verdict.hpp"

#include <algorithm>

namespace zkr::bench {

Verdict w4_flatness_verdict(const std::string& layout, const std::vector<W4Point>& points,
                            bool meaningful) {
  std::vector<W4Point> above_zero;
  for (const auto& p : points)
    if (p.n > 0 && p.p50_ms > 0) above_zero.push_back(p);
  std::sort(above_zero.begin(), above_zero.end(),
            [](const auto& a, const auto& b) { return a.n < b.n; });
  Verdict v;
  v.name = "W4 " + layout + " cycle latency at the largest N within 1.25x of at the smallest N > 0";
  v.check = false;
  if (above_zero.size() < 2) {
    v.met = false;
    v.meaningful = false;
    v.detail = "fewer than two sizes above N = 0 were measured: no baseline to compare with";
    return v;
  }
  const W4Point& base = above_zero.front();
  const W4Point& top = above_zero.back();
  const double ratio = top.p50_ms / base.p50_ms;
  const double controlled =
      base.control_p50_ms > 0 && top.control_p50_ms > 0
          ? (top.p50_ms / top.control_p50_ms) / (base.p50_ms / base.control_p50_ms)
          : 0.0;
  v.met = ratio <= kW4FlatnessTarget;
  v.meaningful = meaningful;
  v.detail = strprintf(
      "p50 %.2f ms at N=%llu, %.2f ms at N=%llu: %.2fx (wanted <= %.2fx); "
      "each over its empty-root control: %.2fx",
      top.p50_ms, static_cast<unsigned long long>(top.n), base.p50_ms,
      static_cast<unsigned long long>(base.n), ratio, kW4FlatnessTarget, controlled);
  return v;
}

}  // namespace zkr::bench
