// zkr/leader_selector.hpp: leader election in which leadership is a function
// that runs, on Apache Curator's LeaderSelector protocol.
//
// A LeaderSelector holds our InterProcessMutex (zkr/lock.hpp) on its path,
// with the participant id as the lock node's data, exactly as Curator's
// LeaderSelector holds its own: Curator's participants and ours on one path
// queue in one line and lead one at a time. While this participant holds the
// mutex, the selector runs `take_leadership` on a thread of its own; the term
// lasts until that function returns, and the mutex is released then (our
// node deleted), so the next participant leads.
//
//   zkr::LeaderSelector selector(client, "/services/compactor", "compactor-a",
//                                [&](const zkr::LeaderTerm& term) {
//                                  while (!term.stop.stop_requested())
//                                    compact_next(term.epoch());
//                                },
//                                {.auto_requeue = true});
//   selector.start();
//   ...
//   selector.close();  // stops a term under way, waits for it, leaves the queue
//
// The term's `stop` token stops when leadership is lost (our node deleted,
// the session ended, or under SuspendedPolicy::lost a suspended link), when
// interrupt_leadership() or close() is called: the function must return soon
// after, and it must not trust leadership after it stops. Its writes can be
// fenced: `term.epoch()` (the czxid of our node) is larger than every earlier
// leader's on the path, and guarded_write(keeper, term.grant, ops) applies
// them only while our node exists, so a deposed leader's writes fail
// atomically.
//
// Terms never overlap in one selector, and a lost term's lost signal (its
// lost_token's callbacks and on_lost callbacks) has been delivered before
// the selector queues for a new term. After a term, the selector queues again
// only with `auto_requeue` or on requeue().
//
// Errors: a queueing that cannot go on (the Client's retry policy gave up,
// no_auth, another lock protocol on the path: foreign_lock_protocol) ends
// that queueing; `on_error` is told, and the selector waits for requeue(). An
// exception thrown by take_leadership ends its term (the mutex is released)
// and goes to `on_error` too; auto_requeue then queues again as after any
// term. Unset, on_error logs.
//
// A coroutine can own a term with no thread: the protocol is a hold of our
// InterProcessMutex with the id as LockOptions::holder_id, so a coroutine
// that awaits that mutex's guard (zkr::asio::async_acquire_guard) leads, in
// the same queue, while it keeps the guard (docs/locks.md has the example).
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "zkr/client.hpp"
#include "zkr/lock.hpp"
#include "zkr/lock_options.hpp"
#include "zkr/participant.hpp"

namespace zkr {

/// One term of leadership, as take_leadership gets it.
struct LeaderTerm {
  /// The mutex's grant: lost(), lost_token(), on_lost(), and for
  /// guarded_write.
  Grant grant;
  /// Stops when the term must end: leadership lost, interrupt_leadership()
  /// or close().
  std::stop_token stop;
  /// The leadership epoch: the czxid of our node, larger than every earlier
  /// leader's on this path.
  std::int64_t epoch() const noexcept { return grant.fencing_token(); }
};

/// How a LeaderSelector queues and what it does between terms.
struct LeaderSelectorOptions {
  /// The ACL of the path, its missing parents and our node. Unset: open to
  /// all, as LockOptions::acl says and for the same reasons.
  std::optional<AclList> acl;
  /// lost (the default): a suspended link already ends the term (its stop
  /// token stops); ignore: only a lost session or our node's deletion does.
  SuspendedPolicy suspended_policy = SuspendedPolicy::lost;
  /// Queue again by itself after each term (Curator's autoRequeue()).
  bool auto_requeue = false;
  /// Told of an error that ended a queueing or a term (see the file
  /// comment). Runs on the selector's thread; it may call requeue().
  std::function<void(std::exception_ptr)> on_error;
};

/// A participant whose leadership is a function that runs (see the file
/// comment).
class LeaderSelector {
 public:
  /// Runs once per term, on the selector's thread; the term ends when it
  /// returns.
  using TakeLeadership = std::function<void(const LeaderTerm&)>;

  /// `id` is written into our node for every participant to read: one line
  /// of printable text, at most kMaxHolderIdLength bytes; empty means
  /// "host=..;pid=..;thread=..". std::invalid_argument for a bad id or path
  /// (as InterProcessMutex's) or an empty take_leadership. Sends nothing.
  LeaderSelector(Client& client, std::string path, std::string id, TakeLeadership take_leadership,
                 LeaderSelectorOptions options = {});
  /// close(); never throws. Not from inside take_leadership.
  ~LeaderSelector();
  LeaderSelector(const LeaderSelector&) = delete;
  LeaderSelector& operator=(const LeaderSelector&) = delete;

  /// Starts the selector's thread and queues. std::logic_error if started
  /// before or closed.
  void start();
  /// Queues again when the selector is neither queued nor leading (after a
  /// term without auto_requeue, or after an error): true if it did. False
  /// when it already is, or before start() or after close().
  bool requeue();
  /// Stops the current term's token (the function should return), without
  /// closing: with auto_requeue the selector queues again. False if no term
  /// is under way.
  bool interrupt_leadership();
  /// Final: stops a term's token and waits until take_leadership has
  /// returned (when called from inside it, does not wait), leaves the queue
  /// (our node deleted) and joins the selector's thread. Never throws.
  void close() noexcept;

  /// take_leadership is running for a term not yet lost.
  bool has_leadership() const;
  /// Every participant's id in queue order, read from its node as Curator
  /// does; the first one read leads. A node gone between the listing and its
  /// read is left out. Throws KeeperError as Client::with_retry does.
  std::vector<Participant> participants() const;
  /// The leader's id; nullopt when nobody takes part.
  std::optional<Participant> leader() const;

  const std::string& path() const noexcept;
  const std::string& id() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace zkr
