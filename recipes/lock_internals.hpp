// The fair queue both locks stand on (Curator's LockInternals, in our terms).
//
// A lock key is a directory (a container znode). To acquire, a contender
// creates an ephemeral sequential node in it, under a protected name, and waits
// until every node before it is gone, watching only the one just before it: a
// release wakes exactly one waiter.
//
// Cost: a create of the directory, our create and the listing are sent back
// to back, so an uncontended acquire is one round trip. A release removes the
// directory with its node when nobody else is in it (it is a container, so the
// server would too, but only a second or more later and at a bounded rate), so
// locking a million keys leaves nothing behind. The listing is the only one: nodes before ours can
// disappear but never appear (sequence numbers only grow while our node keeps
// the directory alive), so when the node we watch goes, we step down the list
// we already have instead of listing again. A contender granted the lock
// after someone was before it marks its node (one data write, not awaited),
// and a successor that reads the mark drops everything below it at once:
// handing the lock down a queue of N waiters costs O(1) requests per hand-off.
// If the marked node is gone before its successor reads it, the successor
// checks the nodes it still knows in one pipelined round trip.
//
// Only our own mark counts: other writers (Curator's revocation) may write to
// a waiting node. And a contended grant reads our own node first: someone may
// have deleted it while we waited, and nodes before ours being gone says
// nothing about it.
//
// Safety rests on two rules: we only conclude "we hold it" from nodes of our
// current session (a lost session discards the whole view and re-enters), and
// every failure path deletes our node (at once, or in the background if the
// reply was lost), so no abandoned node blocks the queue.
#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lease_state.hpp"
#include "zkr/client.hpp"
#include "zkr/lock.hpp"

namespace zkr::detail {

using Clock = std::chrono::steady_clock;
using Deadline = std::optional<Clock::time_point>;  // nullopt: no deadline

class LockInternals {
 public:
  LockInternals(Client& client, std::string dir, LockOptions options);

  // The lease once granted; nullptr if the deadline passed first (our node is
  // then deleted). Throws KeeperError for errors the retry policy will not
  // retry (no_auth, invalid_acl, a lost session when requeue is off, ...).
  std::shared_ptr<LeaseState> acquire(Deadline deadline);

  // Deletes the lease's node; never throws, never blocks past one request.
  void release(const std::shared_ptr<LeaseState>& lease) noexcept;

  // Every contender's node, holder first, as full paths.
  std::vector<std::string> participant_nodes() const;

  const std::string& dir() const noexcept { return dir_; }
  Client& client() const noexcept { return client_; }

 private:
  friend class Attempt;
  void await_directory_removal(std::future<Result<Empty>>& reply,
                               std::chrono::milliseconds timeout) const;
  Client& client_;
  const std::string dir_;
  const LockOptions options_;
};

// The data a contender writes into its node.
std::string default_holder_id();

// Marks a holder's node once it was granted the lock after waiting.
inline constexpr std::string_view kHeldMark = "\nheld";

}  // namespace zkr::detail
