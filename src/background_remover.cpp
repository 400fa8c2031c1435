#include "background_remover.hpp"

#include <algorithm>

#include "owned_delete.hpp"

namespace zkr::detail {

BackgroundRemover::BackgroundRemover(SessionSource session, std::chrono::milliseconds op_timeout,
                                     std::shared_ptr<spdlog::logger> log,
                                     std::chrono::milliseconds retry_pause)
    : session_(std::move(session)),
      op_timeout_(op_timeout),
      log_(std::move(log)),
      retry_pause_(retry_pause),
      thread_([this] { run(); }) {}

BackgroundRemover::~BackgroundRemover() { stop(); }

void BackgroundRemover::add(std::string path, std::uint64_t epoch, bool by_name_prefix,
                            std::int64_t czxid) noexcept {
  try {
    {
      std::lock_guard lock(mutex_);
      items_.push_back({std::move(path), epoch, by_name_prefix, czxid});
      wake_ = true;
    }
    cv_.notify_all();
  } catch (const std::exception& e) {  // allocation: nothing better to do than say so
    log_->error("could not schedule a background delete: {}", e.what());
  }
}

void BackgroundRemover::on_connected() noexcept {
  {
    std::lock_guard lock(mutex_);
    wake_ = true;
  }
  cv_.notify_all();
}

void BackgroundRemover::stop() noexcept {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

std::size_t BackgroundRemover::pending() const {
  std::lock_guard lock(mutex_);
  return items_.size() + in_flight_;
}

bool BackgroundRemover::wait_until_empty(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return cv_.wait_for(lock, timeout, [&] { return items_.empty() && in_flight_ == 0; });
}

void BackgroundRemover::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    const auto ready = [&] { return stopping_ || (wake_ && !items_.empty()); };
    if (!retry_at_) {
      cv_.wait(lock, ready);
    } else if (const auto until = *retry_at_; !cv_.wait_until(lock, until, ready)) {
      retry_at_.reset();  // the pause is over
      wake_ = true;
    }
    if (stopping_) return;
    if (!wake_ || items_.empty()) continue;
    wake_ = false;
    retry_at_.reset();
    auto batch = std::exchange(items_, {});
    in_flight_ = batch.size();
    lock.unlock();

    // Not connected: kept for on_connected(). Timed out on a live link: kept,
    // and tried again after a pause, since no state change may come to wake us.
    std::vector<Item> keep;
    bool pause = false;
    for (auto& item : batch) {
      const auto now = session_();
      if (now.epoch != item.epoch) {
        log_->debug("{}: its session ended, and the node with it", item.path);
        continue;
      }
      if (!now.connected || !now.keeper) {
        keep.push_back(std::move(item));
        continue;
      }
      switch (attempt(now.keeper, item)) {
        case Outcome::done:
        case Outcome::give_up: break;
        case Outcome::retry_later:
          pause = true;
          keep.push_back(std::move(item));
          break;
      }
    }

    lock.lock();
    in_flight_ = 0;
    items_.insert(items_.begin(), std::make_move_iterator(keep.begin()),
                  std::make_move_iterator(keep.end()));
    if (pause) retry_at_ = std::chrono::steady_clock::now() + retry_pause_;
    cv_.notify_all();  // for wait_until_empty()
  }
}

BackgroundRemover::Outcome BackgroundRemover::attempt(const std::shared_ptr<Keeper>& keeper,
                                                      const Item& item) const {
  try {
    std::string target = item.path;
    if (item.by_name_prefix) {
      // A create with a protected name whose reply was lost: the server may
      // have made the node, under a name we only know the start of.
      const std::string parent(parent_path(item.path));
      const std::string prefix(node_name(item.path));
      auto children = keeper->try_children(parent, {}, op_timeout_);
      if (!children.ok()) return judge(children.error(), item);
      const auto& names = children.value().names;
      const auto match = std::find_if(names.begin(), names.end(), [&](const std::string& n) {
        return n.compare(0, prefix.size(), prefix) == 0;
      });
      if (match == names.end()) return Outcome::done;  // never created, or gone already
      target = join_path(parent, *match);
    }
    // The session of the item is the keeper's (run() compared the epochs).
    const Ownership ours{.session_id = keeper->session_id(), .czxid = item.czxid};
    const auto removed = remove_if_ours_now(keeper, target, ours, log_, 2 * op_timeout_);
    if (!removed.ok()) return judge(removed.error(), item);
    if (removed.value() == Removal::deleted) log_->debug("deleted {} in the background", target);
    return Outcome::done;  // or gone, or not ours (logged): nothing of ours is left there
  } catch (const std::exception& e) {
    log_->error("background delete of {} failed for good: {}", item.path, e.what());
    return Outcome::give_up;
  }
}

BackgroundRemover::Outcome BackgroundRemover::judge(Errc error, const Item& item) const {
  if (error == Errc::ok || error == Errc::no_node) return Outcome::done;
  // The link or the session failed: the outcome is unknown, try again (an
  // ended session is noticed by its epoch next time).
  if (is_connection_error(error) || is_retryable(error)) return Outcome::retry_later;
  log_->error("background delete of {} failed for good: {}", item.path, errc_name(error));
  return Outcome::give_up;
}

}  // namespace zkr::detail
