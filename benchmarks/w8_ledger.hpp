// W8's check and clock of one key: every holder of the key tells it when it
// is granted and when it is about to release. It counts a violation when a
// grant comes while the key is still held, or with a fencing token not above
// the previous grant's, and gives the hand-off time: from the previous
// holder's release to this grant.
//
//   KeyLedger& key = ledgers[k];
//   handoff_ms = key.granted(guard.grant().fencing_token(), monotonic_ns());
//   key.releasing(monotonic_ns());
//   guard.unlock();
//
// Atomics: holders of one key may be on different threads (the first holder
// on the bench's thread, waiters on theirs), and a violation is precisely two
// of them inside at once.
#pragma once

#include <atomic>
#include <cstdint>

namespace zkr::bench {

class KeyLedger {
 public:
  // A grant with `token` at `now_ns`; the milliseconds since the previous
  // holder said releasing() (or since the ledger began, for the first).
  double granted(std::int64_t token, std::int64_t now_ns) {
    if (held_.exchange(true)) violations_.fetch_add(1);
    if (token <= last_token_.exchange(token)) violations_.fetch_add(1);
    return static_cast<double>(now_ns - released_ns_.load()) / 1e6;
  }
  // Just before the holder releases, so the next grant's hand-off starts here.
  void releasing(std::int64_t now_ns) {
    held_ = false;
    released_ns_ = now_ns;
  }
  std::uint64_t violations() const { return violations_.load(); }

 private:
  std::atomic<bool> held_{false};
  std::atomic<std::int64_t> last_token_{0};  // tokens are czxids: above 0
  std::atomic<std::int64_t> released_ns_{0};
  std::atomic<std::uint64_t> violations_{0};
};

}  // namespace zkr::bench
