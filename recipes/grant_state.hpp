// The shared state behind a Grant: what the lock knows about one grant,
// and the lost signal that the Client's listener thread, the keeper's event
// thread and the holder all reach.
//
// One GrantState per grant, never reused: a Grant handle copied out of a
// lock keeps telling the truth about its own grant after the hold ends.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "callback_thread.hpp"
#include "directory_registry.hpp"
#include "observed_lock.hpp"
#include "zkr/client.hpp"
#include "zkr/keeper.hpp"
#include "zkr/lost_reason.hpp"

namespace zkr::detail {

// What Curator's Revoker writes into a lock node to ask its holder to let go.
inline constexpr std::string_view kRevokeRequest = "__REVOKE__";

class GrantState : public std::enable_shared_from_this<GrantState> {
 public:
  // token: the fencing token, if not the node's own czxid (a downgraded
  // read carries its write grant's; see zkr/read_write_lock.hpp).
  GrantState(std::string path, std::int64_t zxid, std::uint64_t session_epoch, std::int64_t session,
             std::shared_ptr<CallbackThread> callbacks,
             std::optional<std::int64_t> token = std::nullopt)
      : node_path(std::move(path)),
        czxid(zxid),
        fencing_token(token.value_or(zxid)),
        epoch(session_epoch),
        session_id(session),
        callbacks_(std::move(callbacks)) {}

  const std::string node_path;
  const std::int64_t czxid;
  const std::int64_t fencing_token;
  const std::uint64_t epoch;
  const std::int64_t session_id;  // the owner our node must have (ephemeralOwner)
  // The Client listener of the own-node watch (watch_own_node in
  // lock_internals.hpp): set once, before the grant is shared; removed by the
  // release, or by the attempt that gives the grant up before a grant.
  Client::ListenerId listener = 0;
  // A read granted through its thread's write node ahead of queued writers
  // (queue_position): safe only while that write node stays. Set once,
  // before the grant is shared.
  bool ahead_of_writers = false;
  // The grant's use of its lock directory (directory_registry.hpp): set
  // before the grant is shared, ended by the release.
  std::unique_ptr<DirectoryRegistry::Use> directory_use;
  // Who hears of this grant's hold, losses and reads (observed_lock.hpp):
  // set before the grant is shared; null without an observer.
  std::shared_ptr<const ObservedLock> observed;

  // The first reason wins and is visible at once; the lost token stops and
  // the callbacks run on the callback thread, each on its own (one that
  // throws does not stop the others). No effect after release: a lock given
  // back is not lost.
  void mark_lost(LostReason why);
  void mark_released();
  // The hold starts (only with an observer): its end, a release or the first
  // loss, is told with its duration. A waiter's node lost before its grant
  // ends no hold.
  void mark_granted();
  bool released();
  LostReason reason();
  bool revocation_requested();
  std::stop_token token() const noexcept { return stop_.get_token(); }
  void add_callback(std::function<void(LostReason)> callback);
  // Runs once the revocation request is seen (queued at once if it was).
  void add_revocation_callback(std::function<void()> callback);

  // The own-node watch. The grant counts as held only while its node is
  // known to exist with our session as its owner, so every read of the node
  // (a get that also sets the watch) is judged: gone, or owned by another
  // session (ours was deleted and a node of its name made), is node_deleted;
  // the session's end is session_lost. A data change spends the watch: it is
  // read again (Curator's revocation request is noted), however many come.
  //
  // A read whose reply is lost to the link sets no watch (the C client arms
  // one only from a reply), and nothing would ever tell of a delete after
  // it: read_needed() says so until the next read is sent. The Client
  // listener of watch_own_node() sends it when the link is back (one read per
  // reconnect, which also covers a watch the server dropped), and an attempt
  // about to grant sends it itself first (its reply comes before the grant's
  // listing). Every read is sent without waiting: its reply is judged on the
  // keeper's event thread as it comes, before any later reply of the session.
  void read(const std::shared_ptr<Keeper>& keeper);
  // The link went down (suspended): the next reconnect reads again.
  void link_down();
  // A read is due: the last one's reply was lost, or the link went down since.
  bool read_needed();
  // Sends the read if one is due; true if it did.
  bool read_if_needed(const std::shared_ptr<Keeper>& keeper);

  // Under SuspendedPolicy::lost, set by the grant: the Client's suspension
  // count at the grant decision (ClientInternals::suspensions). A suspension
  // counted after it loses the grant. nullopt: suspensions are not losses
  // (a waiter, or SuspendedPolicy::ignore).
  void lose_on_suspension_after(std::uint64_t suspensions);
  std::optional<std::uint64_t> suspension_mark();

  // The data version of our node as last read, while that read proved the
  // node ours and nothing has been heard of it since. The first read is our
  // create's reply (our session's node, version 0); then each reply of the
  // own-node watch's read that finds the node our create made (czxid) and
  // owned by our session. Any watch event, a failed read, or a lost grant
  // forgets it. The watch's events come before any later reply, so this is
  // what a read made now would show, as of the last reply: a release deletes
  // with this version and needs no read of its own (owned_delete.hpp says
  // what no read can exclude). nullopt: read before deleting.
  std::optional<Version> proven_version();

 private:
  void on_reply(std::uint64_t generation, const Result<NodeData>& reply);
  void forget_watched();
  void on_event(std::uint64_t generation, const WatchEvent& event,
                const std::weak_ptr<Keeper>& keeper);

  const std::shared_ptr<CallbackThread> callbacks_;
  std::mutex mutex_;
  LostReason reason_ = LostReason::none;                           // guarded by mutex_
  bool released_ = false;                                          // guarded by mutex_
  bool revocation_requested_ = false;                              // guarded by mutex_
  std::vector<std::function<void(LostReason)>> callbacks_to_run_;  // guarded by mutex_
  std::vector<std::function<void()>> revocation_callbacks_;        // guarded by mutex_
  std::uint64_t generation_ = 0;                                   // guarded by mutex_: reads sent
  bool read_needed_ = false;                                       // guarded by mutex_
  std::optional<std::uint64_t> suspension_mark_;                   // guarded by mutex_
  std::optional<Version> proven_version_{0};  // guarded by mutex_: see proven_version()
  std::optional<std::chrono::steady_clock::time_point> held_since_;  // guarded by mutex_
  // Held while a read is sent, so that a read another thread has decided to
  // send is on its way before read_if_needed() returns false.
  std::mutex send_mutex_;
  std::stop_source stop_;
};

}  // namespace zkr::detail
