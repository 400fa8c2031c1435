#include "progress.hpp"

#include <cstdio>

namespace zkr::bench {

namespace {
constexpr auto kEvery = std::chrono::seconds(3);
}

Progress::Progress(std::string what, std::uint64_t total)
    : what_(std::move(what)), total_(total), start_(Clock::now()), last_(start_) {}

void Progress::update(std::uint64_t done) {
  const auto now = Clock::now();
  if (now - last_ < kEvery) return;
  last_ = now;
  const double s = ms_between(start_, now) / 1000.0;
  const double rate = s > 0 ? static_cast<double>(done) / s : 0;
  if (total_ > 0)
    std::fprintf(stderr, "bench:   %s: %llu/%llu (%.0f%%, %.0f/s, %.0f s)\n", what_.c_str(),
                 static_cast<unsigned long long>(done), static_cast<unsigned long long>(total_),
                 100.0 * static_cast<double>(done) / static_cast<double>(total_), rate, s);
  else
    std::fprintf(stderr, "bench:   %s: %llu (%.0f/s, %.0f s)\n", what_.c_str(),
                 static_cast<unsigned long long>(done), rate, s);
}

}  // namespace zkr::bench
