// W9's check and clock of one election: every leader tells it when its term
// starts (its await returned) and when it is about to close. It counts a
// violation when a term starts while another is still held, or with an
// epoch (the czxid of the leader's node) not above the previous term's, and
// gives the failover time: from the previous leader's close() call to this
// term's start.
//
//   TermLedger terms;
//   if (const auto ms = terms.started(*latch.epoch(), monotonic_ns())) samples.add(*ms);
//   terms.closing(monotonic_ns());
//   latch.close();
//
// Atomics: the leaders are participants on threads of their own, and a
// violation is precisely two of them leading at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

namespace zkr::bench {

class TermLedger {
 public:
  // A term with `epoch` starts at `now_ns`; the milliseconds since the
  // previous leader said closing(), or nullopt for the first term (nobody
  // closed before it: no failover to time).
  std::optional<double> started(std::int64_t epoch, std::int64_t now_ns) {
    if (leading_.exchange(true)) violations_.fetch_add(1);
    if (epoch <= last_epoch_.exchange(epoch)) violations_.fetch_add(1);
    terms_.fetch_add(1);
    const std::int64_t closed = closed_ns_.load();
    if (closed == 0) return std::nullopt;
    return static_cast<double>(now_ns - closed) / 1e6;
  }
  // Just before the leader calls close(): the next failover starts here.
  void closing(std::int64_t now_ns) {
    leading_ = false;
    closed_ns_ = now_ns;
  }
  std::uint64_t terms() const { return terms_.load(); }
  std::uint64_t violations() const { return violations_.load(); }

 private:
  std::atomic<bool> leading_{false};
  std::atomic<std::int64_t> last_epoch_{0};  // epochs are czxids: above 0
  std::atomic<std::int64_t> closed_ns_{0};
  std::atomic<std::uint64_t> terms_{0};
  std::atomic<std::uint64_t> violations_{0};
};

}  // namespace zkr::bench
