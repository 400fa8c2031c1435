#include "critical_section.hpp"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace zkr::bench {

void GuardedCounter::increment_unprotected() {
  const std::int64_t read = value_.load();
  // Holds the section open a moment: the next holder, if the lock let one
  // in, gets the processor and reads the same value.
  std::this_thread::yield();
  value_.store(read + 1);
}

std::int64_t monotonic_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

void HoldLog::hold(GuardedCounter& counter, std::int64_t token) {
  exclusion::HolderInterval interval{::getpid(), holder_, monotonic_ns(), 0, token, kind_};
  counter.increment_unprotected();
  interval.exit_ns = monotonic_ns();
  intervals_.push_back(std::move(interval));
}

void HoldLog::shared_hold(const GuardedCounter& counter, std::int64_t token) {
  exclusion::HolderInterval interval{::getpid(), holder_, monotonic_ns(),
                                     0,          token,   std::string(exclusion::kSharedKind)};
  // As long as an increment, without the write: a reader that looks.
  (void)counter.value();
  std::this_thread::yield();
  (void)counter.value();
  interval.exit_ns = monotonic_ns();
  intervals_.push_back(std::move(interval));
}

std::uint64_t Judgement::violations() const {
  return report.overlaps + report.token_inversions +
         static_cast<std::uint64_t>(std::llabs(report.lost_updates)) +
         (report.interval_count_mismatch ? 1 : 0);
}

void Judgement::add(const Judgement& later) {
  auto& r = report;
  const auto& l = later.report;
  r.intervals += l.intervals;
  r.overlaps += l.overlaps;
  r.token_inversions += l.token_inversions;
  r.counter += l.counter;
  r.acquisitions += l.acquisitions;
  r.lost_updates += l.lost_updates;
  r.interval_count_mismatch = r.interval_count_mismatch || l.interval_count_mismatch;
  r.shared_intervals += l.shared_intervals;
  r.most_shared_at_once = std::max(r.most_shared_at_once, l.most_shared_at_once);
  if (l.longest_idle_ns > r.longest_idle_ns) {
    r.longest_idle_ns = l.longest_idle_ns;
    r.longest_idle_before = l.longest_idle_before;
  }
  r.examples.insert(r.examples.end(), l.examples.begin(), l.examples.end());
  handoffs.merge(later.handoffs);
}

Judgement judge(const std::vector<const HoldLog*>& logs, const GuardedCounter& counter) {
  std::vector<exclusion::HolderInterval> all;
  for (const auto* log : logs)
    all.insert(all.end(), log->intervals().begin(), log->intervals().end());
  return judge(std::move(all), counter.value());
}

Judgement judge(std::vector<exclusion::HolderInterval> all, std::int64_t counter) {
  std::sort(all.begin(), all.end(),
            [](const auto& a, const auto& b) { return a.enter_ns < b.enter_ns; });
  Judgement j;
  j.handoffs = Samples(all.size());
  for (std::size_t i = 1; i < all.size(); ++i)
    j.handoffs.add(
        static_cast<double>(std::max<std::int64_t>(0, all[i].enter_ns - all[i - 1].exit_ns)) / 1e6);
  // Shared (read) holds make no increment.
  const auto acquisitions = static_cast<std::int64_t>(std::count_if(
      all.begin(), all.end(), [](const auto& h) { return h.kind != exclusion::kSharedKind; }));
  j.report = exclusion::check_exclusion(std::move(all), counter, acquisitions);
  return j;
}

void add_judgement(nlohmann::ordered_json& extra, const Judgement& j) {
  extra["violations"] = j.violations();
  extra["overlaps"] = static_cast<std::uint64_t>(j.report.overlaps);
  extra["token_inversions"] = static_cast<std::uint64_t>(j.report.token_inversions);
  extra["lost_updates"] = j.report.lost_updates;
  extra["counter"] = j.report.counter;
  // Not a violation: the longest time nobody held, a sign of a stalled hand-off.
  extra["longest_idle_ms"] = static_cast<double>(j.report.longest_idle_ns) / 1e6;
}

}  // namespace zkr::bench
