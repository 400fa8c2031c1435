// guarded_write: the caller's writes in one multi behind a check of every
// grant's lock node, the refusal of ops that would touch the locks
// themselves, and the outcome read from the server's reply.
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "lock_driver.hpp"
#include "zkr/lock.hpp"
#include "zkr/path.hpp"

namespace zkr {

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

[[noreturn]] void refuse_op(const OpTarget& t, const std::string& why) {
  throw std::invalid_argument("guarded_write: refusing " + std::string(t.kind) + " of " + *t.path +
                              ": " + why + "; nothing was sent");
}

// A guarded write is for the caller's own data. Ops on the lock's own nodes
// would undo the guard: removing or rewriting our lock node or its directory
// hands the lock to the next contender (or breaks the queue) in the same
// transaction that the check admits, and a create under the lock directory,
// or of a lock-named node anywhere, is a contender that never releases and
// blocks a queue for everyone. So such ops are refused before anything is sent.
void check_ops_leave_locks_alone(const std::vector<Grant>& leases, const std::vector<Op>& ops) {
  for (const auto& o : ops) {
    const auto t = target_of(o);
    const std::string& path = *t.path;
    for (const auto& grant : leases) {
      const std::string& node = grant.node_path();
      const std::string_view dir = parent_path(node);
      if (path == node) refuse_op(t, "it is the lock node of a grant it is guarded by");
      if (path == dir) refuse_op(t, "it is the lock directory of a grant it is guarded by");
      if (std::holds_alternative<op::Create>(o) && parent_path(path) == dir)
        refuse_op(t, "it would create a node in the lock directory " + std::string(dir));
    }
    if (const auto* create = std::get_if<op::Create>(&o)) {
      // A sequential create gets ten digits appended: judge the name it will get.
      std::string name(node_name(path));
      if (is_sequential(create->mode)) name += "0000000000";
      if (detail::is_lock_node(name))
        refuse_op(t, "its name looks like a lock node, which would join (and block) a lock queue");
    }
  }
}

}  // namespace

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

GuardedWriteResult guarded_write(Keeper& keeper, const std::vector<Grant>& leases,
                                 std::vector<Op> ops, OptionalTimeout timeout) {
  check_ops_leave_locks_alone(leases, ops);
  std::vector<Op> guarded;
  guarded.reserve(leases.size() + ops.size());
  for (const auto& grant : leases) guarded.push_back(op::Check{grant.node_path(), kAnyVersion});
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

GuardedWriteResult guarded_write(Keeper& keeper, const Grant& grant, std::vector<Op> ops,
                                 OptionalTimeout timeout) {
  return guarded_write(keeper, std::vector<Grant>{grant}, std::move(ops), timeout);
}

}  // namespace zkr
