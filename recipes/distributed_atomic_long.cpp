// DistributedAtomicLong: Curator's optimistic loop (read, compute, versioned
// write) and its promotion to a lock, with a lost reply ending the operation
// instead of starting it again.
#include "zkr/distributed_atomic_long.hpp"

#include <functional>
#include <stdexcept>
#include <utility>

#include <spdlog/spdlog.h>

#include "client_internals.hpp"
#include "counter_write.hpp"
#include "zkr/cleanup.hpp"
#include "zkr/lock.hpp"
#include "zkr/path.hpp"

namespace zkr {

namespace {

std::string checked_counter_path(std::string path) {
  validate_path(path);
  if (path == "/")
    throw std::invalid_argument("DistributedAtomicLong: the root cannot be a counter");
  return path;
}

// The value to write, from the value read; nullopt: do not write (a
// compare-and-set whose expected value is not there).
using MakeValue = std::function<std::optional<std::int64_t>(std::int64_t current, bool exists)>;

// Java's long arithmetic wraps; C++'s signed overflow is undefined.
std::int64_t wrapping_add(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}

}  // namespace

struct DistributedAtomicLong::Impl {
  Impl(Client& c, std::string p, DistributedAtomicLongOptions o)
      : client(c), path(checked_counter_path(std::move(p))), options(std::move(o)) {
    if (options.promoted) validate_path(options.promoted->lock_path);
  }

  struct Read {
    std::int64_t value = 0;
    detail::WriteBasis basis;
  };

  // Reads are safe to repeat: under the Client's retry policy.
  Read read() {
    const auto got = client.with_retry([&](Keeper& k) -> std::optional<NodeData> {
      auto node = k.try_get(path);
      if (node.error() == Errc::no_node) return std::nullopt;
      return std::move(node).value();  // throws the others, for the policy to judge
    });
    if (!got) return {};
    return {detail::decode_int64(path, got->data), {got->stat}};
  }

  // One step: read, make, write. nullopt when the step was not applied and
  // may be tried again.
  std::optional<AtomicLongResult> try_once(const MakeValue& make, AtomicLongResult& last) {
    const auto current = read();
    last.pre = current.value;
    last.post.reset();
    const auto next = make(current.value, current.basis.stat.has_value());
    if (!next) {
      last.outcome = CounterOutcome::conflict;
      return last;  // nothing to write: final
    }
    const auto answer = detail::conditional_write(client, path, current.basis,
                                                  detail::encode_int64(*next), options.acl);
    switch (answer.fate) {
      case detail::WriteFate::applied:
        return AtomicLongResult{CounterOutcome::succeeded, current.value, *next};
      case detail::WriteFate::unknown:
        detail::ClientInternals::log(client)->info(
            "counter {}: the write of {} (from {}) may or may not have been applied", path, *next,
            current.value);
        return AtomicLongResult{CounterOutcome::indeterminate, current.value, *next};
      case detail::WriteFate::refused: break;
    }
    last.outcome = CounterOutcome::conflict;
    return std::nullopt;
  }

  // Steps until one is applied, final, or the policy gives up.
  std::optional<AtomicLongResult> loop(const RetryPolicy& policy, const MakeValue& make,
                                       AtomicLongResult& last) {
    RetryBudget budget(policy, client.sleeper());
    for (;;) {
      if (auto done = try_once(make, last)) return done;
      const auto step = budget.next();
      if (step.verdict != RetryBudget::Verdict::retry) return std::nullopt;
      budget.sleep(step);
    }
  }

  AtomicLongResult run(const MakeValue& make) {
    AtomicLongResult last;
    const RetryPolicy& policy =
        options.retry_policy ? *options.retry_policy : client.retry_policy();
    if (auto done = loop(policy, make, last)) return *done;
    if (!options.promoted) return last;
    return with_lock(make, last);
  }

  AtomicLongResult with_lock(const MakeValue& make, AtomicLongResult& last) {
    const auto& promoted = *options.promoted;
    InterProcessMutex mutex(client, promoted.lock_path);
    if (!mutex.try_acquire_for(promoted.max_lock_time)) return last;
    static const RetryNTimes kDefaultLockedPolicy(3, std::chrono::milliseconds(100));
    const RetryPolicy& policy =
        promoted.retry_policy ? *promoted.retry_policy : kDefaultLockedPolicy;
    std::optional<AtomicLongResult> done;
    try {
      done = loop(policy, make, last);
    } catch (...) {
      mutex.release();
      throw;
    }
    mutex.release();
    return done ? *done : last;
  }

  Client& client;
  const std::string path;
  const DistributedAtomicLongOptions options;
};

DistributedAtomicLong::DistributedAtomicLong(Client& client, std::string path,
                                             DistributedAtomicLongOptions options)
    : impl_(std::make_unique<Impl>(client, std::move(path), std::move(options))) {}

DistributedAtomicLong::~DistributedAtomicLong() = default;

std::int64_t DistributedAtomicLong::get() { return impl_->read().value; }

AtomicLongResult DistributedAtomicLong::add(std::int64_t delta) {
  return impl_->run([delta](std::int64_t current, bool) -> std::optional<std::int64_t> {
    return wrapping_add(current, delta);
  });
}

AtomicLongResult DistributedAtomicLong::subtract(std::int64_t delta) {
  return impl_->run([delta](std::int64_t current, bool) -> std::optional<std::int64_t> {
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(current) -
                                     static_cast<std::uint64_t>(delta));
  });
}

AtomicLongResult DistributedAtomicLong::compare_and_set(std::int64_t expected, std::int64_t value) {
  // One attempt, as Curator's compareAndSet: a conflict is the answer.
  AtomicLongResult last;
  const MakeValue make = [&](std::int64_t current, bool exists) -> std::optional<std::int64_t> {
    if (!exists || current != expected) return std::nullopt;
    return value;
  };
  if (auto done = impl_->try_once(make, last)) return *done;
  return last;
}

AtomicLongResult DistributedAtomicLong::try_set(std::int64_t value) {
  return impl_->run([value](std::int64_t, bool) -> std::optional<std::int64_t> { return value; });
}

bool DistributedAtomicLong::initialize(std::int64_t value) {
  Impl& impl = *impl_;
  CreateOptions options;
  options.acl = impl.options.acl;
  // A create repeated after a lost reply finds our own node: node_exists,
  // the same answer as if someone else had made it, and nothing applied twice.
  const auto created = impl.client.with_retry([&](Keeper& k) {
    auto made =
        k.try_create(impl.path, detail::encode_int64(value), CreateMode::persistent, options);
    if (made.error() == Errc::no_node) {
      create_marked_parents(k, impl.path);
      made = k.try_create(impl.path, detail::encode_int64(value), CreateMode::persistent, options);
    }
    if (!made.ok() && is_retryable(made.error())) throw KeeperError(made.error(), impl.path);
    return made;
  });
  if (created.error() == Errc::node_exists) return false;
  (void)created.value();  // throws any other error
  return true;
}

const std::string& DistributedAtomicLong::path() const noexcept { return impl_->path; }

}  // namespace zkr
