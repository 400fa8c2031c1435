// The lock attempt's wait and grant stages (attempt.hpp): walking down the
// nodes before ours (or, for a semaphore, waiting for a lease to go), the
// wait for a change, the grant, and giving up (abandon deletes our node).
// Apart because these are the stages driven by watch events and states, not
// by the replies to our own requests.
#include <algorithm>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "attempt.hpp"
#include "client_internals.hpp"
#include "owned_delete.hpp"
#include "zkr/path.hpp"

namespace zkr::detail {

// Walks down the nodes before ours until none is left. Only the server's
// word says who is before us: a node's existence, or a listing. What is
// written in a node (by its owner, Curator's revoker, or anyone allowed to
// write it) is never read as a sign of anything.
Task<Turn> Attempt::wait_turn() {
  for (;;) {
    const auto turn = co_await walk_down();
    if (turn != Turn::ours) co_return turn;
    // No node before ours. The grant needs our node's watch armed: a read
    // whose reply the link lost armed nothing (LeaseState::read_needed),
    // and a delete after the grant would go unheard. So read it again and
    // list again: the read's reply comes first, and the listing says where
    // we stand after it. Once per lost read.
    if (!lease_ || !lease_->read_if_needed(keeper_)) co_return Turn::ours;
    auto looking = look(/*watch=*/false);
    if (!position_from(co_await await_look(looking))) co_return Turn::vanished;
  }
}

// Down the nodes before ours, until none is left (ours), the deadline, a
// stop, or our node gone (vanished).
Task<Turn> Attempt::walk_down() {
  if (lock_.leases_) co_return co_await wait_for_leases();
  while (!lower_.empty()) {
    if (passed(deadline_)) co_return Turn::deadline;
    if (inbox_->stopped()) co_return Turn::stopped;
    if (own_node_lost()) co_return Turn::vanished;
    if (under_lost()) co_return Turn::under_lost;
    const std::string before = join_path(lock_.dir_, lower_.back());
    // A get, not an exists: it arms no watch when the node is already gone,
    // and lock node names are never used twice, so such a watch would stay
    // in the session for ever.
    auto watching = sent<NodeData>([&](auto on_reply) {
      keeper_->async_get(before, watch_for_hand_off(), std::move(on_reply));
    });
    const auto watched = co_await await(watching, before);
    bool gone = watched.error() == Errc::no_node;
    if (!gone && !watched.ok())
      throw KeeperError(watched.error(), before, "watching the node before ours");
    if (!gone) {
      client_.logger().debug("lock {}: {} waits for {}", lock_.dir_, node_, lower_.back());
      std::vector<std::string> paths{before};  // (a named vector: GCC 12 coroutines)
      switch (co_await await_change(std::move(paths))) {
        case Change::deleted: gone = true; break;
        case Change::look_again: break;
        case Change::deadline: co_return Turn::deadline;
        case Change::stopped: co_return Turn::stopped;
        case Change::under_lost: co_return Turn::under_lost;
      }
    }
    if (!gone) continue;
    // The nodes below the one that went may be gone too (typically: it held
    // the lock, so they were), or not: one listing says which, however many,
    // and it is the reply a grant is decided on. The event that brought us
    // here may be old: a process stopped (SIGSTOP, a long GC, a swapped-out
    // VM) wakes to events read before its session expired, and a grant
    // decided on them alone would hold a lock that another process was
    // granted meanwhile. A reply that comes after the decision says the
    // session still lives and our node is still there; a listing also shows
    // what arrived while we waited (another protocol's nodes: position()).
    // lower_ is replaced only by that reply: a retry after a lost one
    // watches (and lists) again rather than granting on the event alone.
    // The deletion event ran us on the event thread, so the listing leaves
    // from there, with no thread switch.
    auto looking = look(/*watch=*/false);
    if (!position_from(co_await await_look(looking))) co_return Turn::vanished;
  }
  co_return own_node_lost() ? Turn::vanished : Turn::ours;
}

// The lease queue's wait: any lease going (or the count rising) may let us
// in, so each look watches the listing (and the count), and the next look,
// after an event or a reconnect, is what we are granted on. A look whose
// reply was lost armed nothing: the retry looks again before it waits.
Task<Turn> Attempt::wait_for_leases() {
  while (!lower_.empty()) {
    if (passed(deadline_)) co_return Turn::deadline;
    if (inbox_->stopped()) co_return Turn::stopped;
    if (own_node_lost()) co_return Turn::vanished;
    if (under_lost()) co_return Turn::under_lost;
    if (!std::exchange(leases_watched_, false)) {
      auto looking = look(/*watch=*/true);
      if (!position_from(co_await await_look(looking))) co_return Turn::vanished;
      if (lower_.empty()) break;
    }
    client_.logger().debug("lock {}: {} waits for one of {} leases", lock_.dir_, node_,
                           lower_.size());
    std::vector<std::string> watched{lock_.dir_};
    if (!lock_.leases_->fixed_max) watched.push_back(lock_.leases_->count_path);
    switch (co_await await_change(watched)) {
      case Change::deleted:
      case Change::look_again: break;
      case Change::deadline: co_return Turn::deadline;
      case Change::stopped: co_return Turn::stopped;
      case Change::under_lost: co_return Turn::under_lost;
    }
  }
  if (own_node_lost()) co_return Turn::vanished;
  co_return under_lost() ? Turn::under_lost : Turn::ours;
}

// The watch on the node before ours: its event runs this attempt (the
// inbox wakes it on the event thread).
Watcher Attempt::watch_for_hand_off() {
  return [inbox = std::weak_ptr<AttemptInbox>(inbox_)](const WatchEvent& event) {
    if (const auto waiting = inbox.lock()) waiting->on_event(event);
  };
}

// Our node was deleted while we waited (the own-node watch says so).
bool Attempt::own_node_lost() {
  if (!lease_) return false;
  const auto why = lease_->reason();
  if (why == LostReason::session_lost) throw SessionGone{epoch_};
  return why == LostReason::node_deleted;
}

// The next change to one of the watched paths (an event of a spent watch
// on an earlier one is passed over), a reconnect, or the end of the wait.
Task<Attempt::Change> Attempt::await_change(std::vector<std::string> watched) {
  for (;;) {
    // Without a deadline we still look again once per session timeout: a
    // watch is one message, and a lost one must not mean waiting forever.
    const auto safety = Clock::now() + keeper_->default_timeout();
    const auto until = deadline_ ? std::min(*deadline_, safety) : safety;
    if (!co_await inbox_->until(until))
      co_return passed(deadline_) ? Change::deadline : Change::look_again;
    if (inbox_->stopped()) co_return Change::stopped;
    if (under_lost()) co_return Change::under_lost;
    for (const auto state : inbox_->take_states()) {
      // States reach listeners late: a `lost` may belong to the session
      // before ours. The Client moves to a new epoch before it announces
      // lost, so the epoch says whether it is about ours.
      if (state == ConnectionState::lost || state == ConnectionState::reconnected) {
        if (client_.session_epoch() != epoch_) throw SessionGone{epoch_};
        co_return Change::look_again;  // the watch survives; looking again is cheap and sure
      }
      // suspended, read_only: the watch stays armed; keep waiting.
    }
    for (const auto& event : inbox_->take_events()) {
      if (std::find(watched.begin(), watched.end(), event.path) == watched.end())
        continue;  // a spent watch on an earlier node
      if (event.type == EventType::deleted) co_return Change::deleted;
      if (event.type == EventType::session_ended) throw SessionGone{epoch_};
      co_return Change::look_again;  // changed: perhaps marked; the next get reads it
    }
  }
}

std::shared_ptr<LeaseState> Attempt::new_lease() const {
  return std::make_shared<LeaseState>(join_path(lock_.dir_, node_), czxid_, epoch_, session_id_,
                                      detail::ClientInternals::callback_thread(client_),
                                      downgrade_token_);
}

// The lease. A contender that waited watches its node since it queued
// (and wait_turn() saw that watch armed); one granted at once starts now,
// without waiting for the reply: its node was in the listing that granted
// it, and a reply saying it is gone, or not ours, marks the lease lost.
std::shared_ptr<LeaseState> Attempt::grant() {
  // Taken before anything is sent: a suspension counted later fell after
  // the decision.
  const auto suspensions = detail::ClientInternals::suspensions(client_);
  auto lease = std::exchange(lease_, nullptr);
  if (!lease) {
    lease = new_lease();
    watch_own_node(client_, lease, keeper_);
  }
  lease->directory_use = std::move(use_);
  lease->ahead_of_writers = ahead_of_writers_;
  listen_for_loss(client_, lease, lock_.options_.suspended_policy, suspensions);
  return lease;
}

// Our node went with our session, unless that session is still the
// Client's: then it is alive, and left alone it would block the queue.
Task<void> Attempt::abandon_if_session_lives() {
  if (epoch_ != 0 && client_.session_epoch() == epoch_) co_await abandon();
}

void Attempt::start_over() {
  client_.logger().warn("lock {}: our node {} was deleted while we waited; queueing again",
                        lock_.dir_, node_);
  node_.clear();
  create_sent_ = false;
  stage_ = Stage::queue;
  lower_.clear();
  drop_waiting_lease();
  guid_ = new_guid();
}

// The own-node watch of a node we no longer wait with (its listener goes).
void Attempt::drop_waiting_lease() noexcept {
  if (lease_) stop_watching(client_, std::exchange(lease_, nullptr));
}

// Deletes our node, known or not. When the link is up the delete is done by
// the time we return, so a caller told "not acquired" sees no node of ours;
// otherwise the Client goes on in the background. Never throws.
Task<void> Attempt::abandon() {
  if (epoch_ == 0) co_return;
  try {
    if (!node_.empty()) {
      const std::string path = join_path(lock_.dir_, node_);
      if (!co_await remove_now(path))
        detail::ClientInternals::remove_in_background(client_, path, epoch_, false, czxid_);
    } else if (create_sent_) {
      detail::ClientInternals::remove_in_background(client_, prefix_path(), epoch_,
                                                    /*by_name_prefix=*/true);
    }
  } catch (const std::exception& e) {
    client_.logger().error("lock {}: abandoning our node failed: {}", lock_.dir_, e.what());
  }
  node_.clear();
  create_sent_ = false;
  // The directory stays known to this Client, idle; a directory we created
  // and never had a child (a container the server never reaps) goes too.
  use_.reset();
}

Task<bool> Attempt::remove_now(const std::string& path) {
  if (!keeper_ || client_.session_epoch() != epoch_ || !client_.is_connected()) co_return false;
  // Cleaning up may take a round trip past the deadline (never more than
  // one session timeout past it, as every wait here): better than leaving
  // a node in the queue for the background to find.
  // Only if a read shows it ours (owned_delete.hpp): a node of its name
  // made by someone else is theirs.
  PendingReply<Result<Removal>> removing;
  remove_if_ours(keeper_, path, {.session_id = session_id_, .czxid = czxid_},
                 client_.options().logger, removing.handler());
  const auto removed = co_await await(removing, path);
  co_return removed.ok();  // deleted, gone, or not ours (logged)
}

}  // namespace zkr::detail
