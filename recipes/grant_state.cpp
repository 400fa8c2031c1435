#include "grant_state.hpp"

namespace zkr::detail {
namespace {

// The end of an observed hold, told outside the grant's lock.
void tell_hold_ended(const ObservedLock& observed, const std::string& dir, HoldOutcome outcome,
                     std::chrono::steady_clock::time_point since, LostReason why) {
  const auto held = std::chrono::steady_clock::now() - since;
  observed.tell([&](Observer& o) {
    if (outcome == HoldOutcome::lost)
      o.lost({.recipe = observed.recipe, .path = dir, .reason = why});
    o.hold_ended({.recipe = observed.recipe,
                  .path = dir,
                  .outcome = outcome,
                  .duration = std::chrono::duration_cast<std::chrono::nanoseconds>(held)});
  });
}

}  // namespace

void GrantState::mark_granted() {
  std::lock_guard lock(mutex_);
  held_since_ = std::chrono::steady_clock::now();
}

void GrantState::mark_lost(LostReason why) {
  std::vector<std::function<void(LostReason)>> to_run;
  std::optional<std::chrono::steady_clock::time_point> held_since;
  {
    std::lock_guard lock(mutex_);
    proven_version_.reset();
    if (released_ || reason_ != LostReason::none) return;
    reason_ = why;
    to_run.swap(callbacks_to_run_);
    held_since = held_since_;
  }
  if (observed && held_since)
    tell_hold_ended(*observed, observed->path, HoldOutcome::lost, *held_since, why);
  // Stop callbacks are user code too: they run where on_lost callbacks do.
  // All in one batch: a stop callback may end the holder's term, and whatever
  // it does next (a callback added now, a new term's) must come after the
  // whole signal.
  std::vector<std::function<void()>> signal;
  signal.reserve(to_run.size() + 1);
  signal.emplace_back([stop = stop_] { stop.request_stop(); });
  for (auto& callback : to_run)
    signal.emplace_back([callback = std::move(callback), why] { callback(why); });
  callbacks_->post_all(std::move(signal));
}

void GrantState::mark_released() {
  std::optional<std::chrono::steady_clock::time_point> held_since;
  {
    std::lock_guard lock(mutex_);
    // A hold that was lost ended then, and one released twice once.
    if (!released_ && reason_ == LostReason::none) held_since = held_since_;
    released_ = true;
    callbacks_to_run_.clear();
  }
  if (observed && held_since)
    tell_hold_ended(*observed, observed->path, HoldOutcome::released, *held_since,
                    LostReason::none);
}

bool GrantState::released() {
  std::lock_guard lock(mutex_);
  return released_;
}

LostReason GrantState::reason() {
  std::lock_guard lock(mutex_);
  return reason_;
}

bool GrantState::revocation_requested() {
  std::lock_guard lock(mutex_);
  return revocation_requested_;
}

void GrantState::add_callback(std::function<void(LostReason)> callback) {
  LostReason already;
  {
    std::lock_guard lock(mutex_);
    already = reason_;
    if (already == LostReason::none) {
      if (!released_) callbacks_to_run_.push_back(std::move(callback));
      return;
    }
  }
  callbacks_->post([callback = std::move(callback), already] { callback(already); });
}

void GrantState::add_revocation_callback(std::function<void()> callback) {
  {
    std::lock_guard lock(mutex_);
    if (!revocation_requested_) {
      revocation_callbacks_.push_back(std::move(callback));
      return;
    }
  }
  callbacks_->post(std::move(callback));
}

void GrantState::read(const std::shared_ptr<Keeper>& keeper) {
  {
    std::lock_guard sending(send_mutex_);
    std::uint64_t generation;
    {
      std::lock_guard lock(mutex_);
      if (released_ || reason_ != LostReason::none) return;  // nothing left to watch for
      generation = ++generation_;
      read_needed_ = false;
    }
    std::weak_ptr<GrantState> weak = weak_from_this();
    std::weak_ptr<Keeper> weak_keeper = keeper;
    keeper->async_get(
        node_path,
        [weak, weak_keeper, generation](const WatchEvent& event) {
          if (auto self = weak.lock()) self->on_event(generation, event, weak_keeper);
        },
        [weak, generation](Result<NodeData> reply) {
          if (auto self = weak.lock()) self->on_reply(generation, reply);
        });
  }
  count_request(observed, Request::get);  // told once the send lock is let go
}

void GrantState::link_down() {
  std::lock_guard lock(mutex_);
  read_needed_ = true;
  // The proven version stays: a watch armed before the link went down is set
  // again by the C client on reconnect (with the events it missed), and a
  // read lost with the link forgets it when its reply says so.
}

bool GrantState::read_needed() {
  std::lock_guard lock(mutex_);
  return read_needed_ && !released_ && reason_ == LostReason::none;
}

bool GrantState::read_if_needed(const std::shared_ptr<Keeper>& keeper) {
  {
    // Waits for a read being sent by another thread: once we return, it is
    // on its way, ahead of whatever the caller sends next.
    std::lock_guard sending(send_mutex_);
    if (!read_needed()) return false;
  }
  read(keeper);
  return true;
}

void GrantState::lose_on_suspension_after(std::uint64_t suspensions) {
  std::lock_guard lock(mutex_);
  suspension_mark_ = suspensions;
}

std::optional<std::uint64_t> GrantState::suspension_mark() {
  std::lock_guard lock(mutex_);
  return suspension_mark_;
}

// On the keeper's event thread: sending is all it does there, never waiting.
void GrantState::on_event(std::uint64_t generation, const WatchEvent& event,
                          const std::weak_ptr<Keeper>& keeper) {
  forget_watched();  // whatever the event, the last read no longer proves the version
  switch (event.type) {
    case EventType::deleted: mark_lost(LostReason::node_deleted); return;
    case EventType::session_ended: mark_lost(LostReason::session_lost); return;
    default: break;
  }
  // Changed (someone wrote into our node): this watch is spent, so read
  // again, or the next delete would go unheard. Only the latest read's watch
  // does: an older one's event is also seen by the latest (armed later), or
  // that read's reply was lost and the reconnect reads again.
  {
    std::lock_guard lock(mutex_);
    if (generation != generation_) return;
  }
  if (auto k = keeper.lock()) read(k);
  else mark_lost(LostReason::session_lost);
}

void GrantState::on_reply(std::uint64_t generation, const Result<NodeData>& reply) {
  if (reply.ok()) {
    // A node of our name that is not our session's, or that our create did
    // not make, is not ours: ours was deleted, and the name taken by someone
    // else (another session, or ours again through a create of its own).
    if (reply.value().stat.ephemeral_owner != session_id || reply.value().stat.czxid != czxid) {
      mark_lost(LostReason::node_deleted);
      return;
    }
    {
      std::lock_guard lock(mutex_);
      proven_version_ = reply.value().stat.version;
    }
    if (reply.value().data != kRevokeRequest) return;
    std::vector<std::function<void()>> to_run;
    {
      std::lock_guard lock(mutex_);
      if (revocation_requested_) return;
      revocation_requested_ = true;
      to_run.swap(revocation_callbacks_);
    }
    for (auto& callback : to_run) callbacks_->post(std::move(callback));
    return;
  }
  forget_watched();  // no proof from this read, and perhaps no watch
  // No watch was armed in these cases, so no event will ever tell: the reply
  // is all we get.
  if (reply.error() == Errc::no_node) {
    mark_lost(LostReason::node_deleted);
  } else if (reply.error() == Errc::session_expired || reply.error() == Errc::closing) {
    mark_lost(LostReason::session_lost);
  } else {
    // The link (or something else that set no watch): read again once it is
    // back, unless a later read has been sent meanwhile.
    std::lock_guard lock(mutex_);
    if (generation == generation_) read_needed_ = true;
  }
}

std::optional<Version> GrantState::proven_version() {
  std::lock_guard lock(mutex_);
  if (reason_ != LostReason::none) return std::nullopt;
  return proven_version_;
}

void GrantState::forget_watched() {
  std::lock_guard lock(mutex_);
  proven_version_.reset();
}

}  // namespace zkr::detail
