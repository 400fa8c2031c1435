// The fair queue every lock and semaphore stands on (Curator's LockInternals, in our terms).
//
// A lock key is a directory (a container znode). To acquire, a contender
// creates an ephemeral sequential node in it, under a protected name, and waits
// until every node before it is gone, watching only the one just before it: a
// release wakes exactly one waiter.
//
// Cost: our create and the listing are sent back to back, so an uncontended
// acquire is one round trip; the directory's create goes in front of them
// only when the Client does not know it exists (directory_registry.hpp). A
// release sends the delete of our node and does not wait. So a key locked
// again and again costs two writes per cycle, our node's create and delete;
// the directory is removed once idle (by the registry, batched), so locking
// a million keys leaves nothing behind.
//
// Who is before us is learned only from the server: a listing, and the
// existence of the node we watch. Data in a node (the holder's text, Curator's
// revocation request, anything another client writes) is never read as a sign
// of anything, so no holder text and no foreign write can skip a holder. When
// the node we watch goes, one listing says which nodes before ours are left:
// O(1) requests per hand-off however long the queue, at the price of a reply
// that grows with it.
//
// A contender that has to wait watches its own node from then on (the reply
// comes before any later event of the session), so a delete of it while it
// waits is known before its turn comes. A grant is never decided on an event
// alone: the listing that follows it is the proof that the session still
// lived after the decision (an event may have waited out a stopped process
// and its session's expiry in a socket buffer).
//
// No silent mix: every listing, and so every grant, is refused with
// foreign_lock_protocol if it shows another lock protocol's nodes
// (lock_driver.hpp says which are recognised); our node is deleted.
//
// Safety rests on two rules: we only conclude "we hold it" from nodes of our
// current session (a lost session discards the whole view and re-enters), and
// every failure path deletes our node (at once, or in the background if the
// reply was lost), so no abandoned node blocks the queue.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "directory_registry.hpp"
#include "grant_state.hpp"
#include "lock_driver.hpp"
#include "observed_lock.hpp"
#include "task.hpp"
#include "zkr/client.hpp"
#include "zkr/keeper.hpp"
#include "zkr/lock_options.hpp"

namespace zkr::detail {

using Clock = std::chrono::steady_clock;
using Deadline = std::optional<Clock::time_point>;  // nullopt: no deadline

// A node of ours that makes a read grant safe at once: the write node the
// acquiring thread holds (see queue_position). Its name in a listing is not
// proof (anyone may delete it and create a node of that name): its grant,
// whose own-node watch has heard of a delete before any later reply comes,
// must still be held too.
struct HeldWriteNode {
  std::string name;
  std::uint64_t epoch = 0;
  std::shared_ptr<GrantState> grant;
};

// A semaphore's leases directory run as the queue (Curator's
// InterProcessSemaphoreV2): a grant node is granted once the directory holds
// at most the limit's number of children (lease_rule.hpp), the limit fixed
// or read from a SharedCount node. Every listing comes with one of the
// semaphore's path, refused if another lock protocol is there, and (for a
// SharedCount) a read of the count; a waiter watches the listing and the
// count, since any grant going or the count rising may let it in.
struct LeaseQueue {
  std::string semaphore_dir;
  std::optional<std::int32_t> fixed_max;  // else the SharedCount at count_path
  std::string count_path;
};

// The grant an acquire was made `under` (a semaphore's internal mutex) was
// lost before the grant: our node is deleted, and the caller starts over
// from that grant.
struct UnderGrantLost {};

class AttemptInbox;

class LockInternals {
 public:
  // kind: which queue, and which kind of node in it, this lock's contenders
  // join; or, with `leases`, a semaphore's leases directory.
  LockInternals(Client& client, std::string dir, LockOptions options,
                QueueKind kind = QueueKind::mutex, std::optional<LeaseQueue> leases = {});
  ~LockInternals();
  LockInternals(const LockInternals&) = delete;
  LockInternals& operator=(const LockInternals&) = delete;

  // The grant once granted; nullptr if the deadline passed or `stop` was
  // stopped first (our node is then deleted: at once while the link is up,
  // else by the background remover). A stop is seen at once while we wait
  // (for our turn, a connection, or a retry's delay), and otherwise when the
  // round trip under way ends. Throws
  // KeeperError for errors the retry policy will not retry (no_auth,
  // invalid_acl, a lost session when requeue is off, ...). A read acquire
  // may pass the write node its thread holds (a downgrade). With `under`,
  // a grant is made only while that grant is held in the same session: lost
  // first, the attempt deletes our node and throws UnderGrantLost.
  std::shared_ptr<GrantState> acquire(Deadline deadline,
                                      const std::optional<HeldWriteNode>& held_write = {},
                                      std::stop_token stop = {},
                                      std::shared_ptr<GrantState> under = {});
  // The same without a blocked thread: acquire() waits for this. It runs on
  // the caller's thread until its first wait, then on the keeper's event
  // thread or the Client's timer thread, and ends on one of them.
  // held_write, if not null, must outlive it.
  Task<std::shared_ptr<GrantState>> acquisition(Deadline deadline,
                                                const HeldWriteNode* held_write = nullptr,
                                                std::stop_token stop = {},
                                                std::shared_ptr<GrantState> under = {});

  // Sends the delete of the grant's node and returns without waiting for
  // its reply (see InterProcessMutex::release); never throws.
  void release(const std::shared_ptr<GrantState>& grant) noexcept;

  // Every contender's node, holder first, as full paths.
  std::vector<std::string> participant_nodes() const;

  // A node of ours (its name) to take up again rather than create another:
  // a latch's term lost to a suspension leaves its node alive. The next
  // attempt looks for it as for a create whose reply was lost (by its guid,
  // adopted only if its owner is the attempt's session) and decides its
  // place afresh; if it is gone, the attempt creates a node as usual.
  void adopt_next(std::string node_name);
  // The node adopt_next() named, if no attempt has taken it up yet (then
  // none will): the caller gives it back. Empty otherwise.
  std::string take_adoption();

  const std::string& dir() const noexcept { return dir_; }
  Client& client() const noexcept { return client_; }

 private:
  friend class Attempt;
  Task<bool> pause_after_session_loss(RetryBudget& budget, AttemptInbox& inbox);

  Client& client_;
  const std::string dir_;
  const LockOptions options_;
  const QueueKind kind_;
  const std::optional<LeaseQueue> leases_;  // set: a semaphore's leases directory
  const std::string holder_;                // what our nodes hold: options_.holder_id, checked
  const CreateOptions create_options_;      // the ACL of everything a lock creates
  const std::shared_ptr<DirectoryRegistry> directories_;  // the Client's
  const std::shared_ptr<const ObservedLock> observed_;    // null: no observer
  std::mutex adopt_mutex_;
  std::string adopt_next_;  // guarded by adopt_mutex_: see adopt_next()
};

// Starts a grant's own-node watch (GrantState::read) and the Client listener
// that keeps it armed: every `suspended` makes a read due, and the next
// reconnect of the same session sends it (one read per reconnect); a new
// session (a `lost`, or a reconnect on another epoch) loses the grant. One
// place for every recipe: a waiter's node, a grant, a semaphore's grant.
// stop_watching() removes the listener of a grant never granted; a release
// removes a granted one's.
void watch_own_node(Client& client, const std::shared_ptr<GrantState>& grant,
                    const std::shared_ptr<Keeper>& keeper);
void stop_watching(Client& client, const std::shared_ptr<GrantState>& grant) noexcept;
// Gives up a lost grant while keeping its node, for the next attempt to
// adopt (LockInternals::adopt_next): marks it released, removes its
// listener, ends its directory use, deletes nothing. Never throws.
void let_go_keeping_node(Client& client, const std::shared_ptr<GrantState>& grant) noexcept;

// Makes a granted grant (its own node watched) also lose to a suspension under
// SuspendedPolicy::lost: one the Client counted after `suspensions`, its count
// at the grant decision (ClientInternals::suspensions), so that a suspension
// announced late, from before the decision, is not one of this hold. Looks
// now too, for a change before this call.
void listen_for_loss(Client& client, const std::shared_ptr<GrantState>& grant,
                     SuspendedPolicy policy, std::uint64_t suspensions);

// Gives a grant back: marks it released, and sends the delete of its node
// without waiting (a lost reply hands it to the background remover), unless
// the grant knows its node was deleted by someone (a node of that name now is
// not ours). The delete carries the version of the last read that proved the
// node ours (GrantState::proven_version); without one, a read goes first and
// the delete follows its reply, only if it shows the node ours
// (owned_delete.hpp). Never throws.
void release_node(Client& client, const std::shared_ptr<GrantState>& grant) noexcept;

// The data a contender writes into its node, unless LockOptions says.
std::string default_holder_id();
// holder_id, or the default if empty; std::invalid_argument for a control
// character or more than kMaxHolderIdLength bytes.
std::string checked_holder_id(const std::string& holder_id);

}  // namespace zkr::detail
