// The shared state behind a LockLease: what the lock knows about one grant,
// and the lost signal that the Client's listener thread, the keeper's event
// thread and the holder all reach.
//
// One LeaseState per grant, never reused: a LockLease handle copied out of a
// lock keeps telling the truth about its own grant after the hold ends.
#pragma once

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
#include "zkr/client.hpp"
#include "zkr/keeper.hpp"
#include "zkr/lost_reason.hpp"

namespace zkr::detail {

// What Curator's Revoker writes into a lock node to ask its holder to let go.
inline constexpr std::string_view kRevokeRequest = "__REVOKE__";

class LeaseState : public std::enable_shared_from_this<LeaseState> {
 public:
  // token: the fencing token, if not the node's own czxid (a downgraded
  // read carries its write grant's; see zkr/read_write_lock.hpp).
  LeaseState(std::string path, std::int64_t zxid, std::uint64_t session_epoch,
             std::shared_ptr<CallbackThread> callbacks,
             std::optional<std::int64_t> token = std::nullopt)
      : node_path(std::move(path)),
        czxid(zxid),
        fencing_token(token.value_or(zxid)),
        epoch(session_epoch),
        callbacks_(std::move(callbacks)) {}

  const std::string node_path;
  const std::int64_t czxid;
  const std::int64_t fencing_token;
  const std::uint64_t epoch;
  Client::ListenerId listener = 0;  // set once, before the lease is shared
  // A read granted through its thread's write node ahead of queued writers
  // (queue_position): safe only while that write node stays. Set once,
  // before the lease is shared.
  bool ahead_of_writers = false;
  // The grant's use of its lock directory (directory_registry.hpp): set
  // before the lease is shared, ended by the release.
  std::unique_ptr<DirectoryRegistry::Use> directory_use;

  // The first reason wins and is visible at once; the lost token stops and
  // the callbacks run on the callback thread, each on its own (one that
  // throws does not stop the others). No effect after release: a lock given
  // back is not lost.
  void mark_lost(LostReason why);
  void mark_released();
  bool released();
  LostReason reason();
  bool revocation_requested();
  std::stop_token token() const noexcept { return stop_.get_token(); }
  void add_callback(std::function<void(LostReason)> callback);
  // Runs once the revocation request is seen (queued at once if it was).
  void add_revocation_callback(std::function<void()> callback);

  // Watches our own node for as long as the lease lives: deleted means lost
  // (node_deleted), the session's end means lost (session_lost), and a data
  // change re-arms the watch (reading the data: Curator's revocation request
  // is noted), however many changes come. Returns the reply to the first
  // read, for a caller that must know the node exists now. A reply that says
  // the node is gone arms no watch, so every reply is looked at too: on the
  // callback thread as soon as it comes, and by anyone asking reason().
  std::shared_future<Result<NodeData>> watch_own_node(const std::shared_ptr<Keeper>& keeper);

  // The data version of our node as last read, while that read proved the
  // node ours and nothing has been heard of it since. The first read is our
  // create's reply (our session's node, version 0); then each reply of the
  // own-node watch's read that finds the node our create made (czxid). Any
  // watch event, a failed read, or a lost lease forgets it. The watch's
  // events come before any later reply, so this is what a read made now
  // would show, as of the last reply: a release deletes with this version
  // and needs no read of its own (owned_delete.hpp says what no read can
  // exclude). nullopt: read before deleting.
  std::optional<Version> proven_version();

 private:
  // Sends the read that sets the watch; its reply, also kept in pending_
  // until someone looks at it.
  std::shared_future<Result<NodeData>> arm(const std::shared_ptr<Keeper>& keeper);
  void on_reply(const Result<NodeData>& reply);
  void forget_watched();
  void check_pending_reply();

  const std::shared_ptr<CallbackThread> callbacks_;
  std::mutex mutex_;
  LostReason reason_ = LostReason::none;                           // guarded by mutex_
  bool released_ = false;                                          // guarded by mutex_
  bool revocation_requested_ = false;                              // guarded by mutex_
  std::vector<std::function<void(LostReason)>> callbacks_to_run_;  // guarded by mutex_
  std::vector<std::function<void()>> revocation_callbacks_;        // guarded by mutex_
  std::optional<std::shared_future<Result<NodeData>>> pending_;    // guarded by mutex_
  std::optional<Version> proven_version_{0};  // guarded by mutex_: see proven_version()
  std::stop_source stop_;
};

}  // namespace zkr::detail
