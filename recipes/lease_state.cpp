#include "lease_state.hpp"

#include <chrono>

namespace zkr::detail {

void LeaseState::mark_lost(LostReason why) {
  std::vector<std::function<void(LostReason)>> to_run;
  {
    std::lock_guard lock(mutex_);
    proven_version_.reset();
    if (released_ || reason_ != LostReason::none) return;
    reason_ = why;
    to_run.swap(callbacks_to_run_);
  }
  // Stop callbacks are user code too: they run where on_lost callbacks do.
  callbacks_->post([stop = stop_] { stop.request_stop(); });
  for (auto& callback : to_run)
    callbacks_->post([callback = std::move(callback), why] { callback(why); });
}

void LeaseState::mark_released() {
  std::lock_guard lock(mutex_);
  released_ = true;
  callbacks_to_run_.clear();
}

bool LeaseState::released() {
  std::lock_guard lock(mutex_);
  return released_;
}

LostReason LeaseState::reason() {
  check_pending_reply();
  std::lock_guard lock(mutex_);
  return reason_;
}

bool LeaseState::revocation_requested() {
  check_pending_reply();
  std::lock_guard lock(mutex_);
  return revocation_requested_;
}

void LeaseState::add_callback(std::function<void(LostReason)> callback) {
  check_pending_reply();
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

void LeaseState::add_revocation_callback(std::function<void()> callback) {
  check_pending_reply();
  {
    std::lock_guard lock(mutex_);
    if (!revocation_requested_) {
      revocation_callbacks_.push_back(std::move(callback));
      return;
    }
  }
  callbacks_->post(std::move(callback));
}

std::shared_future<Result<NodeData>> LeaseState::watch_own_node(
    const std::shared_ptr<Keeper>& keeper) {
  return arm(keeper);
}

// Runs on the caller's thread the first time, then on the keeper's event
// thread (from the watch): sending is all it does there, never waiting.
std::shared_future<Result<NodeData>> LeaseState::arm(const std::shared_ptr<Keeper>& keeper) {
  std::weak_ptr<LeaseState> weak = weak_from_this();
  std::weak_ptr<Keeper> weak_keeper = keeper;
  auto reply = keeper
                   ->async_get(node_path,
                               [weak, weak_keeper](const WatchEvent& event) {
                                 auto self = weak.lock();
                                 if (!self) return;
                                 self->forget_watched();
                                 switch (event.type) {
                                   case EventType::deleted:
                                     self->mark_lost(LostReason::node_deleted);
                                     break;
                                   case EventType::session_ended:
                                     self->mark_lost(LostReason::session_lost);
                                     break;
                                   default:
                                     // Changed (someone wrote into our node): the watch is spent, so arm
                                     // it again, or the next delete would go unheard.
                                     if (auto k = weak_keeper.lock()) self->arm(k);
                                     else self->mark_lost(LostReason::session_lost);
                                 }
                               })
                   .share();
  {
    std::lock_guard lock(mutex_);
    pending_ = reply;
  }
  const auto timeout = keeper->default_timeout();
  callbacks_->post([weak, reply, timeout] {
    // A session's replies come within its timeout or the link is reported
    // down, which the Client's states cover: never wait longer than that.
    if (reply.wait_for(timeout) != std::future_status::ready) return;
    if (auto self = weak.lock()) self->check_pending_reply();
  });
  return reply;
}

void LeaseState::check_pending_reply() {
  std::optional<Result<NodeData>> reply;
  {
    std::lock_guard lock(mutex_);
    if (!pending_ || pending_->wait_for(std::chrono::seconds(0)) != std::future_status::ready)
      return;
    reply.emplace(pending_->get());
    pending_.reset();
  }
  on_reply(*reply);
}

std::optional<Version> LeaseState::proven_version() {
  check_pending_reply();
  std::lock_guard lock(mutex_);
  if (reason_ != LostReason::none) return std::nullopt;
  return proven_version_;
}

void LeaseState::forget_watched() {
  std::lock_guard lock(mutex_);
  proven_version_.reset();
}

void LeaseState::on_reply(const Result<NodeData>& reply) {
  if (reply.ok()) {
    if (reply.value().stat.czxid != czxid) {
      // A node of our name that our create did not make: ours was deleted
      // before the watch was set, unheard.
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
  // is all we get. (A reply lost to a dropped link leaves the watch to the
  // Client's states, which cover that.)
  if (reply.error() == Errc::no_node) mark_lost(LostReason::node_deleted);
  else if (reply.error() == Errc::session_expired || reply.error() == Errc::closing)
    mark_lost(LostReason::session_lost);
}

}  // namespace zkr::detail
