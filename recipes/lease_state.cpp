#include "lease_state.hpp"

namespace zkr::detail {

void LeaseState::mark_lost(LostReason why) {
  std::vector<std::function<void(LostReason)>> to_run;
  {
    std::lock_guard lock(mutex_);
    if (released_ || reason_ != LostReason::none) return;
    reason_ = why;
    to_run.swap(callbacks_);
  }
  stop_.request_stop();
  for (auto& callback : to_run) callback(why);
}

void LeaseState::mark_released() {
  std::lock_guard lock(mutex_);
  released_ = true;
  callbacks_.clear();
}

LostReason LeaseState::reason() {
  check_own_watch();
  std::lock_guard lock(mutex_);
  return reason_;
}

void LeaseState::add_callback(std::function<void(LostReason)> callback) {
  check_own_watch();
  LostReason already;
  {
    std::lock_guard lock(mutex_);
    already = reason_;
    if (already == LostReason::none) {
      if (!released_) callbacks_.push_back(std::move(callback));
      return;
    }
  }
  callback(already);
}

void LeaseState::set_own_watch(std::future<Result<NodeData>> reply) {
  std::lock_guard lock(mutex_);
  own_watch_ = std::move(reply);
}

void LeaseState::check_own_watch() {
  Errc error = Errc::ok;
  {
    std::lock_guard lock(mutex_);
    if (!own_watch_ || own_watch_->wait_for(std::chrono::seconds(0)) != std::future_status::ready)
      return;
    error = own_watch_->get().error();
    own_watch_.reset();
  }
  // No watch was armed in these cases, so no event will ever tell: the reply
  // is all we get. (A reply lost to a dropped link leaves the watch to the
  // Client's states, which cover that.)
  if (error == Errc::no_node) mark_lost(LostReason::node_deleted);
  else if (error == Errc::session_expired || error == Errc::closing)
    mark_lost(LostReason::session_lost);
}

}  // namespace zkr::detail
