// zkr/distributed_atomic_long.hpp: Curator's DistributedAtomicLong, a 64-bit
// counter in one node that never applies an increment twice.
//
// The value lives in one persistent node as an 8-byte big-endian long, as
// Curator stores it; a missing node reads as 0, and the first write creates
// it (parents as containers). Every write is optimistic: read the value and
// its version, compute, set with that version; a version conflict means
// someone wrote first, and the whole step is tried again under the retry
// policy. In promoted-to-lock mode (Curator's PromotedToLock) the step is
// then tried again holding an InterProcessMutex on a lock path of its own,
// compatible with Curator's on the same path.
//
//   zkr::DistributedAtomicLong hits(client, "/stats/hits");
//   auto r = hits.increment();
//   if (r.succeeded()) std::cout << *r.pre << " -> " << *r.post;
//   else if (r.indeterminate()) reconcile_later();  // applied once or not at all
//
// The safety point: Curator retries a versioned write after a lost reply,
// and when the first attempt had been applied the retry meets a version
// conflict, re-reads, and adds again. Here a lost reply ends the operation
// with `indeterminate` (zkr/counter_outcome.hpp) unless a re-read proves the
// write was not applied (the node's czxid and mzxid unchanged since the
// value we based it on): only then is the step tried again.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "zkr/client.hpp"
#include "zkr/counter_outcome.hpp"
#include "zkr/retry.hpp"
#include "zkr/types.hpp"

namespace zkr {

/// The outcome of one operation (Curator's AtomicValue, and the outcome).
struct AtomicLongResult {
  CounterOutcome outcome = CounterOutcome::conflict;
  /// The value the last attempt was based on (nullopt if none was read).
  std::optional<std::int64_t> pre;
  /// succeeded: the value written. indeterminate: the value the node holds if
  /// the write was applied. conflict: nullopt.
  std::optional<std::int64_t> post;
  bool succeeded() const noexcept { return outcome == CounterOutcome::succeeded; }
  bool indeterminate() const noexcept { return outcome == CounterOutcome::indeterminate; }
};

/// Curator's PromotedToLock: after the optimistic attempts fail, take a lock
/// and try again.
struct PromotedToLock {
  std::string lock_path;  ///< the InterProcessMutex's path (Curator's getPath())
  /// How long to wait for the lock; past it the result is conflict.
  std::chrono::milliseconds max_lock_time{std::chrono::seconds(10)};
  /// Attempts while holding the lock. Unset: RetryNTimes(3, 100 ms).
  std::shared_ptr<const RetryPolicy> retry_policy;
};

struct DistributedAtomicLongOptions {
  /// Attempts of the optimistic step. Unset: the Client's policy.
  std::shared_ptr<const RetryPolicy> retry_policy;
  std::optional<PromotedToLock> promoted;
  /// ACL of the node and its parents when we create them. Unset: the Client's.
  std::optional<AclList> acl;
};

class DistributedAtomicLong {
 public:
  /// std::invalid_argument for a bad path or the root. Sends nothing.
  DistributedAtomicLong(Client& client, std::string path,
                        DistributedAtomicLongOptions options = {});
  ~DistributedAtomicLong();
  DistributedAtomicLong(const DistributedAtomicLong&) = delete;
  DistributedAtomicLong& operator=(const DistributedAtomicLong&) = delete;

  /// The value (0 if the node is missing), as the connected server has it:
  /// it may lag another session's write that already succeeded (ZooKeeper's
  /// reads are not linearizable); sync the path first for the latest.
  /// KeeperError if the reads fail, CounterDataError if the node holds
  /// neither 0 nor 8 bytes.
  std::int64_t get();
  /// Adds `delta`; past either end of int64 it wraps, as Java's long does.
  [[nodiscard]] AtomicLongResult add(std::int64_t delta);
  [[nodiscard]] AtomicLongResult subtract(std::int64_t delta);
  [[nodiscard]] AtomicLongResult increment() { return add(1); }
  [[nodiscard]] AtomicLongResult decrement() { return add(-1); }
  /// Sets `value` if the node holds `expected` now (a missing node never
  /// matches, as in Curator); one attempt, not retried on conflict.
  [[nodiscard]] AtomicLongResult compare_and_set(std::int64_t expected, std::int64_t value);
  /// Sets `value` through the optimistic (and promoted) loop.
  [[nodiscard]] AtomicLongResult try_set(std::int64_t value);
  /// Creates the node with `value` if it is missing; false if it exists.
  /// Idempotent, so retried safely. KeeperError if the retries run out.
  bool initialize(std::int64_t value);

  const std::string& path() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace zkr
