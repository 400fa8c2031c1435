// zkr/lock.hpp: fair distributed locks on a queue of ephemeral sequential znodes.
//
// Two locks share one queue (see recipes/lock_internals.hpp):
//   InterProcessMutex           reentrant per thread; only the holding thread releases.
//   NonReentrantMutex           not reentrant; any thread of the process may release.
// Both are fair (first come, first served), meet the C++ Lockable and
// TimedLockable requirements, and use Apache Curator's node names and order
// (`_c_<guid>-lock-<sequence>`), so Curator's InterProcessMutex and both of
// these locks exclude each other on the same path (tested against Curator
// 5.4). (Curator's non-reentrant InterProcessSemaphoreMutex is another
// protocol, with "locks" and "leases" children: ours of that name, which
// speaks it, is in zkr/semaphore.hpp.) Children of a lock
// directory that are not lock nodes are ignored (Curator sorts them in, and
// one whose name sorts first blocks its waiters), except those below.
//
// No silent mix. Curator's other lock recipes keep nodes our queue does not
// count, and they do not count ours: on one path, both would be granted. So a
// lock that finds them refuses before it can be granted: acquire() and every
// try_acquire* throw KeeperError(Errc::foreign_lock_protocol) naming the path
// and the protocol, our node deleted, nothing retried. Recognised:
//   Curator InterProcessSemaphoreV2 and InterProcessSemaphoreMutex: a child
//     named "locks" or "leases" (so a lock path must not have children of
//     those names for other reasons: nest other lock paths elsewhere);
//   InterProcessReadWriteLock, Curator's or ours (zkr/read_write_lock.hpp):
//     a child "..__READ__<seq>" or "..__WRIT__<seq>";
//   kazoo's (Python) Lock, WriteLock and ReadLock: "<hex>__lock__<seq>",
//     "<hex>__rlock__<seq>" (unless LockOptions::share_with_kazoo), and its
//     Semaphore: children of 32 hex digits;
//   any other protocol: a child whose name ends in a sequence number (ten
//     digits, or a minus sign and digits) that none of the above claims.
// Every listing an acquire makes is checked, the one its grant is decided on
// included: a foreign node that appears while we wait refuses us too. What
// cannot be done from our side:
//   - Curator is granted whatever our nodes say: its semaphore counts only
//     leases/, its read/write lock sorts our names after all of its own. So
//     a Curator lock that arrives while ours is held (or after our grant's
//     listing) is granted beside it; only our later acquires refuse. A
//     holder is not told (that would cost a child watch, and a listing per
//     new waiter, on every held lock).
//   - Curator's deprecated InterProcessSemaphore (v1) uses our very names and
//     queue, and with more than one grant grants its first N: it can hold
//     beside us undetected. Never mix it with our locks.
// Curator's semaphore leaves "locks" and "leases" behind as container nodes,
// which the server removes once empty (at its next container check, a
// minute by default): until then our locks on that path still refuse.
//
// Who holds the lock is decided only by which lock nodes exist, in sequence
// order, as the server reports them: the data in a lock node (the holder's
// text, or anything another client writes there) is never interpreted, so no
// holder text and no foreign write can let a contender skip a holder.
//
//   zkr::InterProcessMutex mutex(client, "/locks/orders/42");
//   if (mutex.try_acquire_for(5s)) {
//     const zkr::Grant grant = mutex.grant();   // a handle to this grant
//     write_with(grant.fencing_token());           // for a fenced resource
//     if (grant.lost()) return;                     // connection trouble: stop
//     mutex.release();
//   }
//   { std::scoped_lock hold(mutex); ... }          // as a Lockable
//
// What a lock cannot promise: once the link to the ensemble is suspended, the
// session may expire at any moment and another process may be granted the lock
// before this one hears of it. A holder must stop trusting the lock when its
// grant says lost(), and fence its writes (fencing_token() or guarded_write()).
//
// Misuse, and what it gets (nothing is sent to the ensemble for any of it):
// - a bad path (see zkr/path.hpp), the root "/", or one longer than
//   kMaxLockPathLength: std::invalid_argument from the constructor, naming it;
// - release() by a thread that holds nothing, or twice: false, nothing changes;
// - more than kMaxReentrantHolds holds of an InterProcessMutex by one thread:
//   std::overflow_error, and the holds stay as they were;
// - any acquire on the Client's listener thread: std::logic_error (see
//   Client::add_listener);
// - a lock destroyed while held: it releases (deletes its node) first;
// - a lock outliving its Client: see ~Client. Its acquire throws closing.
// Destroying a lock while another thread is inside one of its calls is
// undefined, as for std::mutex.
//
// Timed acquires (try_acquire*) return false by their deadline when no
// connection comes (a round trip already under way, or the delete of the
// node queued, may finish first: each waits at most a session timeout past
// the deadline); acquire() throws what
// the Client's retry policy gives up on. Errors about the Client rather than
// a znode (connection_loss, closing, auth_failed) name the lock's path too.
// Under a lock root whose ACL refuses us, every acquire form throws no_auth
// naming the path refused, at once: no_auth is not retried.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "zkr/acquire_forms.hpp"
#include "zkr/client.hpp"
#include "zkr/lock_guard.hpp"
#include "zkr/lock_options.hpp"
#include "zkr/lost_reason.hpp"
#include "zkr/path.hpp"

namespace zkr {

namespace detail {
class LockInternals;
struct GrantState;
}  // namespace detail

// The proof of holding a lock: a fencing token and a lost signal. A handle to
// one grant, cheap to copy: every grant has its own state, never reused, so a
// Grant keeps telling the truth about its grant after the hold ends
// (released() or lost()), whatever the lock object does next.
class Grant {
 public:
  // The lock node's czxid: the zxid at which this contender queued; a read
  // /write lock's downgraded read carries the token of the write grant it
  // descends from (zkr/read_write_lock.hpp). Within one lock path a grant's
  // token is larger than that of every grant before it that it excludes: each
  // mutex holder's than its predecessors', a writer's than every earlier
  // reader's and writer's, a reader's than every earlier writer's (readers
  // that share the lock may come in any order), across leaders and re-created
  // lock directories. A store that keeps the largest token seen and refuses
  // smaller ones refuses only holders that have been followed. Reentrant
  // holds share their grant's token. Tokens of different locks are not
  // comparable.
  std::int64_t fencing_token() const noexcept;
  const std::string& node_path() const noexcept;
  // The Client's session epoch the lock was granted in.
  std::uint64_t session_epoch() const noexcept;

  // The lock was lost: trust it no more. Turns true as soon as the library
  // knows (the lost token and callbacks follow on the callback thread).
  bool lost() const noexcept;
  LostReason lost_reason() const noexcept;
  // This grant was given back by release() (or the lock's destructor).
  bool released() const noexcept;
  // Held: neither lost nor released.
  bool held() const noexcept { return !lost() && !released(); }
  // Someone wrote Curator's revocation request ("__REVOKE__") into the lock
  // node: a holder that honours revocation should release. Nothing else
  // changes: the lock stays held until released or lost.
  bool revocation_requested() const noexcept;
  // Runs once when a revocation request is seen (queued at once if one was),
  // on the callback thread, as on_lost callbacks do.
  void on_revocation_requested(std::function<void()> callback) const;
  // Stops once the lock is lost (never stops for a clean release). Stop
  // callbacks run on the Client's callback thread, like on_lost callbacks.
  std::stop_token lost_token() const noexcept;
  // Runs once when the lock is lost (or at once, queued, if it already is),
  // on the Client's callback thread: never on the ZooKeeper client's threads
  // nor on the listener thread. There a callback may call into the library
  // (release this or another lock, acquire one, use the Client); callbacks
  // run one at a time, so one that blocks delays the others, and one that
  // throws is logged and does not stop the others. Never runs after a clean
  // release. Destroying the Client inside a callback is not allowed (its
  // destructor joins this thread).
  void on_lost(std::function<void(LostReason)> callback) const;

  explicit Grant(std::shared_ptr<detail::GrantState> state);

 private:
  std::shared_ptr<detail::GrantState> state_;
};

// What became of a guarded_write, decided from the server's reply so that
// callers need not decode the multi. It is the multi's result too (the grant
// checks first, one per grant, then the caller's ops, in order).
struct GuardedWriteResult : MultiResult {
  enum class Outcome {
    applied,    // every op applied, while every grant's lock node existed
    lock_lost,  // nothing applied: a lock node was gone (a grant lost or
                // released), or the session had ended
    conflict,   // nothing applied: the server refused the caller's op
                // `failed_op` (an index into the ops passed), with `error`
    unknown,    // no reply (the link failed, the deadline passed): applied
                // or not, nobody can tell from here; read to find out
  };
  Outcome outcome = Outcome::unknown;
  std::size_t failed_op = 0;  // conflict only
  bool applied() const noexcept { return outcome == Outcome::applied; }
};
std::string_view to_string(GuardedWriteResult::Outcome outcome) noexcept;

// A multi that succeeds only while `grant`'s lock node still exists: writes by
// a holder that has lost its lock fail atomically (with no_node on the check,
// outcome lock_lost). A grant already released is refused without sending
// anything (lock_lost; results[0] is no_node). Ops that touch the lock itself are std::invalid_argument, also
// before anything is sent: a remove, set or check of the grant's lock node or
// lock directory, a create in that directory, and a create (anywhere) of a
// name that looks like a lock node ("...lock-<10 digits>", "...__READ__<10
// digits>", "...__WRIT__<10 digits>" or a semaphore's "...lease-<10
// digits>", or a sequential create that would end so): each would hand a
// lock on, block a queue or take a grant.
GuardedWriteResult guarded_write(Keeper& keeper, const Grant& grant, std::vector<Op> ops,
                                 OptionalTimeout timeout = {});
// A multi that succeeds only while every grant's lock node still exists.
// Refuses ops on any grant's lock node or directory, as the one-grant form (MultiLock::grants() gives them);
// the result's checks are one per grant, in the order given.
GuardedWriteResult guarded_write(Keeper& keeper, const std::vector<Grant>& leases,
                                 std::vector<Op> ops, OptionalTimeout timeout = {});

// Fair, reentrant per thread: N acquires by a thread need N releases (N up to
// kMaxReentrantHolds).
class InterProcessMutex : public detail::StandardLockable<InterProcessMutex>,
                          public detail::GuardForms<InterProcessMutex> {
 public:
  InterProcessMutex(Client& client, std::string path, LockOptions options = {});
  ~InterProcessMutex();  // releases what this object still holds; never throws
  InterProcessMutex(const InterProcessMutex&) = delete;
  InterProcessMutex& operator=(const InterProcessMutex&) = delete;

  // acquire() and try_acquire*(): see zkr/acquire_forms.hpp. try_acquire()
  // costs one round trip.

  // Releases one hold of the calling thread. False (and nothing changes) if the
  // calling thread does not hold the lock. Never throws, never waits for the
  // server. When the last hold goes, release() returning means: the grant is
  // released (released() is true, lost() never turns true, on_lost callbacks
  // never run, lost_token() never stops, and guarded_write() refuses it
  // without sending anything); the delete of the lock node has been sent,
  // and not yet confirmed: other processes may still see the node, and be
  // granted only once the server applies it. Requests this Client sends
  // afterwards are applied after the delete (the server keeps a session's
  // order), unless the link fails with the delete in flight: then the Client
  // deletes the node in the background after the link is back, or the
  // session's end does.
  bool release() noexcept;

  bool is_acquired_in_this_process() const;
  bool is_owned_by_current_thread() const;
  // The calling thread's grant; throws std::logic_error if it does not hold.
  Grant grant() const;
  // Lock nodes of every contender, holder first.
  std::vector<std::string> participant_nodes() const;
  const std::string& path() const noexcept;

 private:
  friend class detail::StandardLockable<InterProcessMutex>;
  friend class detail::GuardForms<InterProcessMutex>;
  LockGuard take_guard(std::optional<std::chrono::steady_clock::time_point> deadline,
                       std::stop_token stop);
  void take_guard_async(std::optional<std::chrono::steady_clock::time_point> deadline,
                        std::stop_token stop, detail::GuardHandler on_done);
  bool take(std::optional<std::chrono::steady_clock::time_point> deadline, std::stop_token stop);

  struct Impl;
  std::shared_ptr<Impl> impl_;  // shared with its asynchronous acquires
};

// Fair, not reentrant: a second acquire while held waits like anyone else.
// Any thread of the process may release it.
//
// Several threads may share one object. A grant never overwrites another:
// if a hold is lost without a release (its node deleted, its session ended)
// and another thread is granted next, both grants stay on the object until
// released, and release() gives back the oldest first (the lost one, which
// deletes nothing), so the thread whose hold was lost cannot release the new
// holder's lock by releasing its own. grant() is the newest grant's; take it
// right after the acquire to keep your own.
class NonReentrantMutex : public detail::StandardLockable<NonReentrantMutex>,
                          public detail::GuardForms<NonReentrantMutex> {
 public:
  NonReentrantMutex(Client& client, std::string path, LockOptions options = {});
  ~NonReentrantMutex();
  NonReentrantMutex(const NonReentrantMutex&) = delete;
  NonReentrantMutex& operator=(const NonReentrantMutex&) = delete;

  // Gives back the oldest grant not yet released. False (and nothing
  // changes) if there is none. Returns as InterProcessMutex::release() does:
  // the delete is sent, not awaited.
  bool release() noexcept;

  bool is_acquired_in_this_process() const;
  // The newest grant's grant; throws std::logic_error if none is held.
  Grant grant() const;
  std::vector<std::string> participant_nodes() const;
  const std::string& path() const noexcept;

 private:
  friend class detail::StandardLockable<NonReentrantMutex>;
  friend class detail::GuardForms<NonReentrantMutex>;
  LockGuard take_guard(std::optional<std::chrono::steady_clock::time_point> deadline,
                       std::stop_token stop);
  void take_guard_async(std::optional<std::chrono::steady_clock::time_point> deadline,
                        std::stop_token stop, detail::GuardHandler on_done);
  bool take(std::optional<std::chrono::steady_clock::time_point> deadline, std::stop_token stop);

  struct Impl;
  std::shared_ptr<Impl> impl_;  // shared with its asynchronous acquires
};

}  // namespace zkr
