// src/background_remover.hpp (internal): deletes that must happen eventually.
//
// A lock released while the link is down, or a create whose reply was lost,
// leaves a node behind that still blocks everyone queued after it. Its owner
// cannot wait (unlock() and destructors return at once and never throw), so it
// hands the delete to this class, which keeps trying on its own thread: at
// once, after each reconnection, and after a pause when a request timed out
// on a live link. It stops trying when the node is gone, when the error says
// trying again is pointless (logged), or when the session the node belonged to
// has ended: the node was ephemeral, and the server deletes it with its session.
//
//   BackgroundRemover remover(current_session, 5s, logger);
//   remover.add("/locks/a/lock-0000000007", epoch, /*by_name_prefix=*/false);
//   remover.on_connected();  // from the Client, on connected and reconnected
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "zkr/keeper.hpp"
#include "zkr/path.hpp"

namespace zkr::detail {

class BackgroundRemover {
 public:
  // What the Client has now: its keeper, the epoch of that session, and
  // whether requests can be served.
  struct Session {
    std::shared_ptr<Keeper> keeper;
    std::uint64_t epoch = 0;
    bool connected = false;
  };
  using SessionSource = std::function<Session()>;

  // op_timeout bounds each request, and so how long stop() may wait.
  BackgroundRemover(SessionSource session, std::chrono::milliseconds op_timeout,
                    std::shared_ptr<spdlog::logger> log,
                    std::chrono::milliseconds retry_pause = std::chrono::seconds(1));
  ~BackgroundRemover();
  BackgroundRemover(const BackgroundRemover&) = delete;
  BackgroundRemover& operator=(const BackgroundRemover&) = delete;

  // Deletes `path` (any version), or with by_name_prefix the child of
  // parent_path(path) whose name starts with node_name(path), as long as the
  // session of `epoch` lasts.
  void add(std::string path, std::uint64_t epoch, bool by_name_prefix) noexcept;
  // The link is back: try everything pending now.
  void on_connected() noexcept;
  // Joins the thread; what is still pending is dropped (the session is about
  // to close, which deletes its ephemeral nodes). Idempotent.
  void stop() noexcept;

  // For tests: how many deletes are pending or in progress, and a wait for
  // none (true) or the timeout (false).
  std::size_t pending() const;
  bool wait_until_empty(std::chrono::milliseconds timeout) const;

 private:
  struct Item {
    std::string path;
    std::uint64_t epoch;
    bool by_name_prefix;
  };
  enum class Outcome { done, retry_later, give_up };

  void run();
  Outcome attempt(Keeper& keeper, const Item& item) const;
  Outcome judge(Errc error, const Item& item) const;

  const SessionSource session_;
  const std::chrono::milliseconds op_timeout_;
  const std::shared_ptr<spdlog::logger> log_;
  const std::chrono::milliseconds retry_pause_;

  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;  // wakes run(), and wait_until_empty()
  std::vector<Item> items_;  // guarded by mutex_
  std::size_t in_flight_ = 0;  // guarded by mutex_: taken by run(), not yet settled
  bool wake_ = false;         // guarded by mutex_: something new to try
  std::optional<std::chrono::steady_clock::time_point> retry_at_;  // guarded by mutex_
  bool stopping_ = false;     // guarded by mutex_
  std::thread thread_;        // last: starts once the rest exists
};

// ---- Implementation. Inline, so that this internal class needs no build
// ---- file change of its own; only client.cpp and its tests include it.

inline BackgroundRemover::BackgroundRemover(SessionSource session,
                                            std::chrono::milliseconds op_timeout,
                                            std::shared_ptr<spdlog::logger> log,
                                            std::chrono::milliseconds retry_pause)
    : session_(std::move(session)),
      op_timeout_(op_timeout),
      log_(std::move(log)),
      retry_pause_(retry_pause),
      thread_([this] { run(); }) {}

inline BackgroundRemover::~BackgroundRemover() { stop(); }

inline void BackgroundRemover::add(std::string path, std::uint64_t epoch,
                                   bool by_name_prefix) noexcept {
  try {
    {
      std::lock_guard lock(mutex_);
      items_.push_back({std::move(path), epoch, by_name_prefix});
      wake_ = true;
    }
    cv_.notify_all();
  } catch (const std::exception& e) {  // allocation: nothing better to do than say so
    log_->error("could not schedule a background delete: {}", e.what());
  }
}

inline void BackgroundRemover::on_connected() noexcept {
  {
    std::lock_guard lock(mutex_);
    wake_ = true;
  }
  cv_.notify_all();
}

inline void BackgroundRemover::stop() noexcept {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

inline std::size_t BackgroundRemover::pending() const {
  std::lock_guard lock(mutex_);
  return items_.size() + in_flight_;
}

inline bool BackgroundRemover::wait_until_empty(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return cv_.wait_for(lock, timeout, [&] { return items_.empty() && in_flight_ == 0; });
}

inline void BackgroundRemover::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    const auto ready = [&] { return stopping_ || (wake_ && !items_.empty()); };
    if (!retry_at_) {
      cv_.wait(lock, ready);
    } else if (!cv_.wait_until(lock, *retry_at_, ready)) {
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
      switch (attempt(*now.keeper, item)) {
        case Outcome::done:
        case Outcome::give_up:
          break;
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

inline BackgroundRemover::Outcome BackgroundRemover::attempt(Keeper& keeper,
                                                             const Item& item) const {
  try {
    std::string target = item.path;
    if (item.by_name_prefix) {
      // A create with a protected name whose reply was lost: the server may
      // have made the node, under a name we only know the start of.
      const std::string parent(parent_path(item.path));
      const std::string prefix(node_name(item.path));
      auto children = keeper.try_children(parent, {}, op_timeout_);
      if (!children.ok()) return judge(children.error(), item);
      const auto& names = children.value().names;
      const auto match = std::find_if(names.begin(), names.end(), [&](const std::string& n) {
        return n.compare(0, prefix.size(), prefix) == 0;
      });
      if (match == names.end()) return Outcome::done;  // never created, or gone already
      target = join_path(parent, *match);
    }
    const auto removed = keeper.try_remove(target, kAnyVersion, op_timeout_);
    if (removed.ok()) {
      log_->debug("deleted {} in the background", target);
      return Outcome::done;
    }
    return judge(removed.error(), item);
  } catch (const std::exception& e) {
    log_->error("background delete of {} failed for good: {}", item.path, e.what());
    return Outcome::give_up;
  }
}

inline BackgroundRemover::Outcome BackgroundRemover::judge(Errc error,
                                                           const Item& item) const {
  if (error == Errc::ok || error == Errc::no_node) return Outcome::done;
  // The link or the session failed: the outcome is unknown, try again (an
  // ended session is noticed by its epoch next time).
  if (is_connection_error(error) || is_retryable(error)) return Outcome::retry_later;
  log_->error("background delete of {} failed for good: {}", item.path, errc_name(error));
  return Outcome::give_up;
}

}  // namespace zkr::detail
