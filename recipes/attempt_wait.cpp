// The lock attempt's wait and grant stages (attempt.hpp): walking down the
// nodes before ours (or, for a semaphore, waiting for a grant to go), the
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

// Waits for our turn: walks down the nodes before ours until none is left
// (walk_down), or for a semaphore's grant waits for a grant to go
// (wait_for_leases). Only the server's word says who is before us: a
// node's existence, or a listing. What is written in a node (by its owner,
// Curator's revoker, or anyone allowed to write it) is never read as a sign
// of anything.
//
// A waiter parks in walk_down() (or wait_for_leases()) under acquire()'s
// frame, for as long as it waits: thousands of them may. GCC keeps every
// local and temporary of a coroutine in its frame for the frame's whole life, so these frames hold
// next to nothing, and each request with its reply (a Result, a path, the
// awaiter's timeout value) is sent and awaited in a coroutine of its own
// (watch_before(), look_again()), whose frame is gone before the wait.
Task<Turn> Attempt::wait_turn() { return lock_.leases_ ? wait_for_leases() : walk_down(); }

// No node before ours. The grant needs our node's watch armed: a read whose
// reply the link lost armed nothing (GrantState::read_needed), and a delete
// after the grant would go unheard. True: so it is, and the caller must read
// it again and list again (the read's reply comes first, and the listing
// says where we stand after it). Once per lost read.
bool Attempt::own_watch_lost() { return grant_ && grant_->read_if_needed(keeper_); }

// Why the wait must end now, if it must: the deadline, a stop, our node
// gone, or the grant we acquire under lost.
std::optional<Turn> Attempt::interrupted() {
  if (passed(deadline_)) return Turn::deadline;
  if (inbox_->stopped()) return Turn::stopped;
  if (own_node_lost()) return Turn::vanished;
  if (under_lost()) return Turn::under_lost;
  return std::nullopt;
}

// Down the nodes before ours, until none is left (ours), the deadline, a
// stop, or our node gone (vanished).
Task<Turn> Attempt::walk_down() {
  for (;;) {
    while (lower_count_ != 0) {
      if (const auto turn = interrupted()) co_return *turn;
      bool gone = co_await watch_before();
      if (!gone) {
        detail::ClientInternals::log(client_)->debug("lock {}: {} waits for {}", lock_.dir_, node_,
                                                     waits_for_);
        std::optional<Change> change;
        while (!change) change = what_changed(co_await inbox_->until(change_deadline()));
        switch (*change) {
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
      // waits_for_ is replaced only by that reply: a retry after a lost one
      // watches (and lists) again rather than granting on the event alone.
      // The deletion event ran us on the event thread, so the listing leaves
      // from there, with no thread switch.
      if (!co_await look_again(/*watch=*/false)) co_return Turn::vanished;
    }
    if (own_node_lost()) co_return Turn::vanished;
    if (!own_watch_lost()) co_return Turn::ours;
    if (!co_await look_again(/*watch=*/false)) co_return Turn::vanished;
  }
}

// Watches the node before ours (waits_for_). True: it is gone already.
Task<bool> Attempt::watch_before() {
  const std::string before = join_path(lock_.dir_, waits_for_);
  // A get, not an exists: it arms no watch when the node is already gone,
  // and lock node names are never used twice, so such a watch would stay
  // in the session for ever.
  auto watching = sent<NodeData>([&](auto on_reply) {
    count_request(lock_.observed_, Request::get);
    keeper_->async_get(before, watch_for_hand_off(), std::move(on_reply));
  });
  const auto watched = co_await await(watching, before);
  if (watched.error() == Errc::no_node) co_return true;
  if (!watched.ok()) throw KeeperError(watched.error(), before, "watching the node before ours");
  co_return false;
}

// Lists the queue again (watched: for a grant waiter), and places us by
// what it shows. False: our node is gone.
Task<bool> Attempt::look_again(bool watch) {
  auto looking = look(watch);
  co_return position_from(co_await await_look(looking));
}

// The grant queue's wait: any grant going (or the count rising) may let us
// in, so each look watches the listing (and the count), and the next look,
// after an event or a reconnect, is what we are granted on. A look whose
// reply was lost armed nothing: the retry looks again before it waits.
Task<Turn> Attempt::wait_for_leases() {
  for (;;) {
    while (lower_count_ != 0) {
      if (const auto turn = interrupted()) co_return *turn;
      if (!std::exchange(leases_watched_, false)) {
        if (!co_await look_again(/*watch=*/true)) co_return Turn::vanished;
        if (lower_count_ == 0) break;
      }
      detail::ClientInternals::log(client_)->debug("lock {}: {} waits for one of {} leases",
                                                   lock_.dir_, node_, lower_count_);
      std::optional<Change> change;
      while (!change) change = what_changed(co_await inbox_->until(change_deadline()));
      switch (*change) {
        case Change::deleted:
        case Change::look_again: break;
        case Change::deadline: co_return Turn::deadline;
        case Change::stopped: co_return Turn::stopped;
        case Change::under_lost: co_return Turn::under_lost;
      }
    }
    if (own_node_lost()) co_return Turn::vanished;
    if (under_lost()) co_return Turn::under_lost;
    if (!own_watch_lost()) co_return Turn::ours;
    if (!co_await look_again(/*watch=*/false)) co_return Turn::vanished;
  }
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
  if (!grant_) return false;
  const auto why = grant_->reason();
  if (why == LostReason::session_lost) throw SessionGone{epoch_};
  return why == LostReason::node_deleted;
}

// Whether a watch event on `path` is about what we wait for now: the node
// before ours, or for a grant waiter the grant queue and the count.
bool Attempt::watched(const std::string& path) const {
  if (lock_.leases_)
    return path == lock_.dir_ || (!lock_.leases_->fixed_max && path == lock_.leases_->count_path);
  return path.size() == lock_.dir_.size() + 1 + waits_for_.size() && path.starts_with(lock_.dir_) &&
         path[lock_.dir_.size()] == '/' && path.ends_with(waits_for_);
}

// Until when the next wait for a change may last. Without a deadline we
// still look again once per session timeout: a watch is one message, and a
// lost one must not mean waiting forever.
Clock::time_point Attempt::change_deadline() const {
  const auto safety = Clock::now() + keeper_->default_timeout();
  return deadline_ ? std::min(*deadline_, safety) : safety;
}

// After a wait for a change (woken: something came before
// change_deadline()), what changed: one of the watched paths (an event of a
// spent watch on an earlier one is passed over), a reconnect, or the end of
// the wait; nothing if the waiter should wait again. Not a coroutine of its
// own, which would be one more frame per parked waiter: the callers wait
//   std::optional<Change> change;
//   while (!change) change = what_changed(co_await inbox_->until(change_deadline()));
std::optional<Attempt::Change> Attempt::what_changed(bool woken) {
  if (!woken) return passed(deadline_) ? Change::deadline : Change::look_again;
  if (inbox_->stopped()) return Change::stopped;
  if (under_lost()) return Change::under_lost;
  for (const auto state : inbox_->take_states()) {
    // States reach listeners late: a `lost` may belong to the session
    // before ours. The Client moves to a new epoch before it announces
    // lost, so the epoch says whether it is about ours.
    if (state == ConnectionState::lost || state == ConnectionState::reconnected) {
      if (client_.session_epoch() != epoch_) throw SessionGone{epoch_};
      return Change::look_again;  // the watch survives; looking again is cheap and sure
    }
    // suspended, read_only: the watch stays armed; keep waiting.
  }
  for (const auto& event : inbox_->take_events()) {
    if (!watched(event.path)) continue;  // a spent watch on an earlier node
    if (event.type == EventType::deleted) return Change::deleted;
    if (event.type == EventType::session_ended) throw SessionGone{epoch_};
    return Change::look_again;  // changed: perhaps marked; the next get reads it
  }
  return std::nullopt;
}

std::shared_ptr<GrantState> Attempt::new_grant() const {
  auto grant = std::make_shared<GrantState>(
      join_path(lock_.dir_, node_), czxid_, epoch_, session_id_,
      detail::ClientInternals::callback_thread(client_), downgrade_token_);
  grant->observed = lock_.observed_;  // before it is shared: its reads count from the first
  return grant;
}

// The grant. A contender that waited watches its node since it queued
// (and wait_turn() saw that watch armed); one granted at once starts now,
// without waiting for the reply: its node was in the listing that granted
// it, and a reply saying it is gone, or not ours, marks the grant lost.
std::shared_ptr<GrantState> Attempt::grant() {
  // Taken before anything is sent: a suspension counted later fell after
  // the decision.
  const auto suspensions = detail::ClientInternals::suspensions(client_);
  auto grant = std::exchange(grant_, nullptr);
  // Someone was before us, and we waited for our turn (the waiter's own-node
  // watch is made only then): a hand-off.
  const bool hand_off = grant != nullptr;
  if (!grant) {
    grant = new_grant();
    watch_own_node(client_, grant, keeper_);
  }
  grant->directory_use = std::move(use_);
  grant->ahead_of_writers = ahead_of_writers_;
  // The hold starts here, before the loss rules below may end it.
  if (lock_.observed_) {
    grant->mark_granted();
    lock_.observed_->tell([&](Observer& o) {
      o.granted({.recipe = lock_.observed_->recipe, .path = lock_.dir_, .hand_off = hand_off});
    });
  }
  listen_for_loss(client_, grant, lock_.options_.suspended_policy, suspensions);
  return grant;
}

// Our node went with our session, unless that session is still the
// Client's: then it is alive, and left alone it would block the queue.
Task<void> Attempt::abandon_if_session_lives() {
  if (epoch_ != 0 && client_.session_epoch() == epoch_) co_await abandon();
}

void Attempt::start_over() {
  detail::ClientInternals::log(client_)->warn(
      "lock {}: our node {} was deleted while we waited; queueing again", lock_.dir_, node_);
  node_.clear();
  create_sent_ = false;
  stage_ = Stage::queue;
  lower_count_ = 0;
  waits_for_.clear();
  drop_waiting_lease();
  guid_ = new_guid();
}

// The own-node watch of a node we no longer wait with (its listener goes).
void Attempt::drop_waiting_lease() noexcept {
  if (grant_) stop_watching(client_, std::exchange(grant_, nullptr));
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
    detail::ClientInternals::log(client_)->error("lock {}: abandoning our node failed: {}",
                                                 lock_.dir_, e.what());
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
                 detail::ClientInternals::log(client_),
                 counting_removal(lock_.observed_, removing.handler()));
  const auto removed = co_await await(removing, path);
  co_return removed.ok();  // deleted, gone, or not ours (logged)
}

}  // namespace zkr::detail
