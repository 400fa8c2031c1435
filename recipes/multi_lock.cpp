#include "zkr/multi_lock.hpp"

#include <algorithm>
#include <stdexcept>
#include <type_traits>
#include <variant>

#include <spdlog/spdlog.h>

#include "lock_driver.hpp"
#include "zkr/path.hpp"

namespace zkr {

using Clock = std::chrono::steady_clock;

namespace {

// The path an op names, and a word for it in messages.
struct OpTarget {
  const char* kind;
  const std::string* path;
};
OpTarget target_of(const Op& o) {
  return std::visit(
      [](const auto& x) -> OpTarget {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, op::Create>) return {"create", &x.path};
        else if constexpr (std::is_same_v<T, op::Remove>) return {"remove", &x.path};
        else if constexpr (std::is_same_v<T, op::Set>) return {"set", &x.path};
        else return {"check", &x.path};
      },
      o);
}

[[noreturn]] void refuse(const OpTarget& t, const std::string& why) {
  throw std::invalid_argument("guarded_write: refusing " + std::string(t.kind) + " of " + *t.path +
                              ": " + why + "; nothing was sent");
}

// A guarded write is for the caller's own data. Ops on the lock's own nodes
// would undo the guard: removing or rewriting our lock node or its directory
// hands the lock to the next contender (or breaks the queue) in the same
// transaction that the check admits, and a create under the lock directory,
// or of a lock-named node anywhere, is a contender that never releases and
// blocks a queue for everyone. So such ops are refused before anything is sent.
void check_ops_leave_locks_alone(const std::vector<LockLease>& leases, const std::vector<Op>& ops) {
  for (const auto& o : ops) {
    const auto t = target_of(o);
    const std::string& path = *t.path;
    for (const auto& lease : leases) {
      const std::string& node = lease.node_path();
      const std::string_view dir = parent_path(node);
      if (path == node) refuse(t, "it is the lock node of a lease it is guarded by");
      if (path == dir) refuse(t, "it is the lock directory of a lease it is guarded by");
      if (std::holds_alternative<op::Create>(o) && parent_path(path) == dir)
        refuse(t, "it would create a node in the lock directory " + std::string(dir));
    }
    if (const auto* create = std::get_if<op::Create>(&o)) {
      // A sequential create gets ten digits appended: judge the name it will get.
      std::string name(node_name(path));
      if (is_sequential(create->mode)) name += "0000000000";
      if (detail::is_lock_node(name))
        refuse(t, "its name looks like a lock node, which would join (and block) a lock queue");
    }
  }
}

}  // namespace

MultiLock::MultiLock(Client& client, std::vector<std::string> paths, LockOptions options)
    : client_(client), paths_(std::move(paths)) {
  if (paths_.empty()) throw std::invalid_argument("MultiLock needs at least one path");
  // The canonical order: every MultiLock takes shared paths in the same order.
  std::sort(paths_.begin(), paths_.end());
  paths_.erase(std::unique(paths_.begin(), paths_.end()), paths_.end());
  for (const auto& path : paths_)
    locks_.push_back(std::make_unique<InterProcessMutex>(client, path, options));
}

MultiLock::~MultiLock() = default;  // each InterProcessMutex releases what it holds

bool MultiLock::take(std::optional<Clock::time_point> deadline) {
  // Each round ends holding all, holding none, or having found a lease lost
  // while we waited for a later lock: then it gives everything back and goes
  // again. A round is lost only to a session ending. With a deadline, rounds
  // go on until it passes; without one, as long as the retry policy allows,
  // as a single lock requeues after a lost session.
  RetryBudget budget(client_.retry_policy(), client_.sleeper());
  for (;;) {
    switch (take_once(deadline)) {
      case Outcome::held: return true;
      case Outcome::timed_out: return false;
      case Outcome::lease_lost: break;
    }
    if (deadline) {
      if (Clock::now() >= *deadline) return false;
      continue;
    }
    const auto step = budget.next();
    if (step.verdict != RetryBudget::Verdict::retry)
      throw KeeperError(Errc::session_expired, paths_.front(),
                        "MultiLock: a lock was lost before the last was granted in " +
                            std::to_string(budget.retries()) +
                            " rounds, and the retry policy gave up");
    budget.sleep(step);
  }
}

MultiLock::Outcome MultiLock::take_once(std::optional<Clock::time_point> deadline) {
  std::size_t taken = 0;
  auto give_back = [&] {
    // Last first, so nobody waits on a partial set.
    while (taken > 0) locks_[--taken]->release();
  };
  try {
    for (; taken < locks_.size(); ++taken) {
      auto& lock = *locks_[taken];
      const bool got = deadline ? lock.try_acquire_until(*deadline) : (lock.acquire(), true);
      if (!got) {
        give_back();
        return Outcome::timed_out;
      }
      // While we waited for this one, our session may have ended and taken
      // the earlier locks' nodes with it: each lock requeues in the new
      // session on its own, so a set spanning two sessions is no set at all
      // (another process may hold an earlier lock by now).
      if (!all_current(taken + 1)) {
        client_.logger().info("MultiLock: a lock was lost while taking the next; starting over");
        ++taken;
        give_back();
        return Outcome::lease_lost;
      }
    }
  } catch (...) {
    give_back();
    throw;
  }
  return Outcome::held;
}

bool MultiLock::all_current(std::size_t n) const {
  const auto epoch = client_.session_epoch();
  for (std::size_t i = 0; i < n; ++i) {
    const auto& lease = locks_[i]->lease();
    if (lease.lost() || lease.session_epoch() != epoch) return false;
  }
  return true;
}

void MultiLock::acquire() { (void)take(std::nullopt); }
bool MultiLock::try_acquire() { return take(Clock::now()); }
bool MultiLock::try_acquire_for(std::chrono::milliseconds timeout) {
  return take(Clock::now() + std::max(timeout, std::chrono::milliseconds(0)));
}
bool MultiLock::try_acquire_until(Clock::time_point deadline) { return take(deadline); }

bool MultiLock::release() noexcept {
  bool any = false;
  for (auto it = locks_.rbegin(); it != locks_.rend(); ++it) {
    if ((*it)->is_owned_by_current_thread()) any = (*it)->release() || any;
  }
  return any;
}

bool MultiLock::is_acquired_in_this_process() const {
  return std::all_of(locks_.begin(), locks_.end(),
                     [](const auto& lock) { return lock->is_acquired_in_this_process(); });
}

const std::vector<std::string>& MultiLock::paths() const noexcept { return paths_; }

std::vector<LockLease> MultiLock::leases() const {
  std::vector<LockLease> leases;
  for (const auto& lock : locks_) leases.push_back(lock->lease());
  return leases;
}

namespace {

// The outcome of a guarded multi whose first `checks` ops are the leases' checks.
GuardedWriteResult classify(MultiResult multi, std::size_t checks) {
  GuardedWriteResult result;
  static_cast<MultiResult&>(result) = std::move(multi);
  using Outcome = GuardedWriteResult::Outcome;
  const auto failed = result.failed_index();
  if (result.ok()) result.outcome = Outcome::applied;
  // A session the server ended applies none of its requests.
  else if (result.error == Errc::session_expired) result.outcome = Outcome::lock_lost;
  // No reply: it may have been applied.
  else if (is_connection_error(result.error)) result.outcome = Outcome::unknown;
  // Pinned on an op by the server's reply: refused, so nothing applied.
  else if (failed < checks) result.outcome = Outcome::lock_lost;
  else if (failed < result.results.size()) {
    result.outcome = Outcome::conflict;
    result.failed_op = failed - checks;
  }
  // A reply that names no op: it may have been applied.
  else
    result.outcome = Outcome::unknown;
  return result;
}

}  // namespace

std::string_view to_string(GuardedWriteResult::Outcome outcome) noexcept {
  switch (outcome) {
    case GuardedWriteResult::Outcome::applied: return "applied";
    case GuardedWriteResult::Outcome::lock_lost: return "lock_lost";
    case GuardedWriteResult::Outcome::conflict: return "conflict";
    case GuardedWriteResult::Outcome::unknown: return "unknown";
  }
  return "unknown";
}

GuardedWriteResult guarded_write(Keeper& keeper, const std::vector<LockLease>& leases,
                                 std::vector<Op> ops, OptionalTimeout timeout) {
  check_ops_leave_locks_alone(leases, ops);
  std::vector<Op> guarded;
  guarded.reserve(leases.size() + ops.size());
  for (const auto& lease : leases) guarded.push_back(op::Check{lease.node_path(), kAnyVersion});
  for (auto& o : ops) guarded.push_back(std::move(o));
  for (std::size_t i = 0; i < leases.size(); ++i) {
    if (!leases[i].released()) continue;
    // Its delete may still be on its way: never let the write race it. The
    // result reads as the server's would, the check at i failing.
    MultiResult refused;
    refused.error = Errc::no_node;
    refused.results.resize(guarded.size());
    for (std::size_t j = i + 1; j < guarded.size(); ++j)
      refused.results[j].error = Errc::runtime_inconsistency;
    refused.results[i].error = Errc::no_node;
    return classify(std::move(refused), leases.size());
  }
  return classify(keeper.try_multi(std::move(guarded), timeout), leases.size());
}

}  // namespace zkr
