// zkr/leader_latch.hpp: leader election among processes, on Apache Curator's
// LeaderLatch layout.
//
// Each participant queues one protected ephemeral sequential node
// `_c_<guid>-latch-<sequence>` under the latch path (created as a container),
// holding its id; the participant whose node is first leads. The queue is the
// locks' (recipes/lock_internals.hpp): a participant watches only the node
// before its own, leadership is decided on a listing sent after the last
// event and only for a node of our own session, and every failure path
// deletes our node. Curator's LeaderLatch and this one, on one path, elect one
// leader at a time (Curator orders by the text after "latch-", as we do).
//
//   zkr::LeaderLatch latch(client, "/services/scheduler", "scheduler-a");
//   if (latch.try_await_leadership_for(30s)) {
//     const zkr::Grant term = latch.term();       // this term's lost signal
//     run_scheduler(term.lost_token(), term.fencing_token());
//   }
//   latch.close();                                     // gives leadership up now
//
// A term is a Grant (zkr/lock.hpp): its fencing_token() is the epoch (the
// czxid of our node), larger than every other earlier leader's on the path; its
// lost_token() stops and its on_lost callbacks run when leadership is lost
// (node deleted, session ended, or under SuspendedPolicy::lost a suspended
// link); guarded_write(keeper, latch.term(), ops) applies a leader's writes
// only while its node still exists. The lost signal of a term is delivered
// (its callbacks have run) before an await of this latch reports a new term.
//
// Waiting is participating: an await joins the queue (creates our node) and
// a wait that ends without leadership (deadline, stop, close) deletes the
// node again. While our node lives nothing re-creates it: a reconnect within
// the session keeps it, a wait resumes on it, and a term survives it under
// SuspendedPolicy::ignore. Under SuspendedPolicy::lost a suspension ends the
// term though the node may live on: the next await takes that node up again
// (if it still exists and is our session's), decides afresh from a new
// listing, and so leads again at once, with the same epoch, if nobody is
// before it: nobody can have led in between. When our node is gone (deleted by
// someone, the latch path deleted, the session expired) a waiting
// participant queues again by itself; a leader's term is lost, and the next
// await joins again.
//
// One participant, one await at a time: an await on a latch while another of
// the same latch object is under way throws std::logic_error. Other threads
// read has_leadership() and term().
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "zkr/client.hpp"
#include "zkr/lock.hpp"
#include "zkr/lock_options.hpp"
#include "zkr/participant.hpp"
#include "zkr/types.hpp"

namespace zkr {

/// The longest name a latch puts below its path ("/_c_<guid>-latch-" and an
/// 11-character sequence), and so the longest latch path.
inline constexpr std::size_t kMaxLatchNodeSuffix = 58;
inline constexpr std::size_t kMaxLatchPathLength = kMaxPathLength - kMaxLatchNodeSuffix;

/// How a LeaderLatch queues and when it counts leadership as lost.
struct LeaderLatchOptions {
  /// The ACL of the latch path, its missing parents and our node. Unset: open
  /// to all, as LockOptions::acl says and for the same reasons.
  std::optional<AclList> acl;
  /// lost (the default): a suspended link already ends the term;
  /// ignore: only a lost session or our node's deletion does.
  SuspendedPolicy suspended_policy = SuspendedPolicy::lost;
};

/// A latch's participant (zkr/participant.hpp).
using LatchParticipant = Participant;

/// A participant in a leader election (see the file comment).
class LeaderLatch {
 public:
  /// `id` is written into our node for every participant to read (Curator's
  /// participant id): one line of printable text, at most kMaxHolderIdLength
  /// bytes; empty means "host=..;pid=..;thread=..". std::invalid_argument for
  /// a bad id or path, or a path longer than kMaxLatchPathLength. Sends nothing.
  LeaderLatch(Client& client, std::string path, std::string id, LeaderLatchOptions options = {});
  /// close(); never throws.
  ~LeaderLatch();
  LeaderLatch(const LeaderLatch&) = delete;
  LeaderLatch& operator=(const LeaderLatch&) = delete;

  /// Joins and waits until this participant leads (true) or `stop` is stopped
  /// (false, our node deleted); true at once while a term is held. Throws
  /// KeeperError when it cannot take part (retries exhausted, another lock
  /// protocol on the path: foreign_lock_protocol, ...), std::logic_error once
  /// closed or with another await of this latch under way.
  bool await_leadership(std::stop_token stop = {});
  /// The same with a deadline: false, our node deleted, once it passes. A
  /// negative timeout is no wait (one look at the queue); one too long for the
  /// clock has no deadline.
  bool try_await_leadership_for(std::chrono::milliseconds timeout, std::stop_token stop = {});
  bool try_await_leadership_until(std::chrono::steady_clock::time_point deadline,
                                  std::stop_token stop = {});
  /// One look with no wait: leads only if nobody queues before us.
  bool try_await_leadership();

  /// Called once with (error, leader): leader true when this participant
  /// leads, false when the deadline (nullopt: none), a stop or close() came
  /// first, or with the error the blocking form would throw. Returns at once;
  /// `on_done` (any callable, move-only ones too) runs on a Client thread (or
  /// on this one when the outcome is known at once) and must not block. The
  /// latch may be destroyed first (that closes it: on_done gets false); its
  /// Client may not. std::logic_error, thrown here, as for the blocking form.
  /// zkr::asio::async_await_leadership (zkr/asio.hpp) is this with Asio tokens.
  template <class Handler>
  void async_await_leadership(std::optional<std::chrono::steady_clock::time_point> deadline,
                              std::stop_token stop, Handler&& on_done) {
    auto held = std::make_shared<std::decay_t<Handler>>(std::forward<Handler>(on_done));
    start_await(deadline, std::move(stop), [held](std::exception_ptr error, bool leader) {
      (*held)(std::move(error), leader);
    });
  }

  /// A term is held: neither lost nor given up by close().
  bool has_leadership() const;
  /// The czxid of our node while a term is held; nullopt otherwise.
  std::optional<std::int64_t> epoch() const;
  /// The current term, or the last one (lost or closed); std::logic_error if
  /// this latch never led.
  Grant term() const;

  /// Gives leadership up at once: a term ends (released, not lost: its lost
  /// signal does not fire), our node's delete is sent, an await under way
  /// returns false. Final: the latch cannot join again. Never throws.
  void close() noexcept;

  /// Every participant's id in queue order, read from its node as Curator
  /// does; the first one read leads. A node gone between the listing and its
  /// read is left out. Throws KeeperError as Client::with_retry does.
  std::vector<LatchParticipant> participants() const;
  /// The leader's id; nullopt when nobody takes part.
  std::optional<LatchParticipant> leader() const;

  const std::string& path() const noexcept;
  const std::string& id() const noexcept;

 private:
  bool take(std::optional<std::chrono::steady_clock::time_point> deadline, std::stop_token stop);
  void start_await(std::optional<std::chrono::steady_clock::time_point> deadline,
                   std::stop_token stop, std::function<void(std::exception_ptr, bool)> on_done);

  struct Impl;
  std::shared_ptr<Impl> impl_;  // shared with its asynchronous awaits
};

}  // namespace zkr
