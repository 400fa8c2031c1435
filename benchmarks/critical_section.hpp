// What a holder does in W2 and W5, and how the bench judges it: a real
// read-modify-write of a counter that nothing but the lock under test
// protects, and one interval per hold (grant, release, holder, token) for the
// exclusion checker (checker/exclusion_checker.hpp), which looks for overlaps,
// tokens out of grant order and lost updates after the run. Nothing is
// compared between threads while the run goes on: each thread keeps its own
// intervals, merged once the threads are joined.
//
//   GuardedCounter counter;
//   HoldLog log(worker_index);                   // one per thread
//   ... acquire ...
//   log.hold(counter, token);                    // enter, read, yield, write, leave
//   ... release ...
//   auto verdict = judge({logs...}, counter);    // after join
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

#include "exclusion_checker.hpp"
#include "report.hpp"

namespace zkr::bench {

// The shared state a lock must protect. The two steps of increment() are
// separate atomic operations with a yield between them: with no lock, or a
// broken one, two holders read the same value and one increment is lost.
// (Atomic only so that a broken lock is a lost update and not undefined
// behaviour.)
class GuardedCounter {
 public:
  void increment_unprotected();
  std::int64_t value() const { return value_.load(); }

 private:
  std::atomic<std::int64_t> value_{0};
};

// What the worker threads of one round share: the counter their holds
// increment, and their failures (each counted; the first one's text kept, to
// say what went wrong).
class RoundShared {
 public:
  GuardedCounter counter;

  // An acquire that timed out: a failure with nothing to say.
  void timed_out() { errors_.fetch_add(1); }
  void failed(const std::exception& e) {
    errors_.fetch_add(1);
    std::lock_guard lock(mutex_);
    if (first_error_.empty()) first_error_ = e.what();
  }
  std::uint64_t errors() const { return errors_.load(); }
  std::string first_error() const {
    std::lock_guard lock(mutex_);
    return first_error_;
  }

 private:
  std::atomic<std::uint64_t> errors_{0};
  mutable std::mutex mutex_;
  std::string first_error_;  // guarded by mutex_
};

// CLOCK_MONOTONIC in nanoseconds: the clock of the checker's intervals.
std::int64_t monotonic_ns();

// One thread's holds.
class HoldLog {
 public:
  explicit HoldLog(std::int64_t holder, std::string kind = "mutex")
      : holder_(holder), kind_(std::move(kind)) {}
  // Called just after the acquire returned and before the release: records
  // the grant time, increments the counter, records the release time.
  void hold(GuardedCounter& counter, std::int64_t token);
  // A read/write lock's read hold: recorded with kind "read", no increment.
  void shared_hold(const GuardedCounter& counter, std::int64_t token);
  const std::vector<exclusion::HolderInterval>& intervals() const noexcept { return intervals_; }

 private:
  std::int64_t holder_;
  std::string kind_;
  std::vector<exclusion::HolderInterval> intervals_;
};

// The checker's report over every thread's holds, and the hand-off gaps
// (from one holder's release to the next one's grant, in grant order), which
// measure the hand-off when waiters are always queued.
struct Judgement {
  exclusion::ExclusionReport report;
  Samples handoffs;
  std::uint64_t violations()
      const;  // overlaps + token inversions + |lost updates| + missing records
  // Adds a later round's judgement, made on holds of their own: counts add
  // up and hand-offs pool (the gap between two rounds is no hand-off).
  void add(const Judgement& later);
};
Judgement judge(const std::vector<const HoldLog*>& logs, const GuardedCounter& counter);
// The same, for holds recorded elsewhere (the Curator peer's interval file).
Judgement judge(std::vector<exclusion::HolderInterval> holds, std::int64_t counter);

// Adds the checker's counts to a record's extra fields.
void add_judgement(nlohmann::ordered_json& extra, const Judgement& judgement);

}  // namespace zkr::bench
