// The shared state behind a LockLease: what the lock knows about one grant,
// and the lost signal that the Client's listener thread, the keeper's event
// thread and the holder all reach.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "zkr/client.hpp"
#include "zkr/lock.hpp"

namespace zkr::detail {

struct LeaseState {
  LeaseState(std::string path, std::int64_t zxid, std::uint64_t session_epoch,
             bool remove_directory)
      : node_path(std::move(path)),
        czxid(zxid),
        epoch(session_epoch),
        remove_directory_on_release(remove_directory) {}

  const std::string node_path;
  const std::int64_t czxid;
  const std::uint64_t epoch;
  const bool remove_directory_on_release;  // LockOptions::remove_directory_on_release
  Client::ListenerId listener = 0;  // set once, before the lease is shared

  // The first reason wins; callbacks run once, outside the mutex. No effect
  // after release: a lock given back is not lost.
  void mark_lost(LostReason why);
  void mark_released();
  LostReason reason();
  std::stop_token token() const noexcept { return stop_.get_token(); }
  void add_callback(std::function<void(LostReason)> callback);

  // The reply to the watch set on our own node after the grant: if the node
  // was already gone, no watch fires, so the reply itself is looked at when
  // anyone asks whether the lock is lost.
  void set_own_watch(std::future<Result<NodeData>> reply);

 private:
  void check_own_watch();

  std::mutex mutex_;
  LostReason reason_ = LostReason::none;                   // guarded by mutex_
  bool released_ = false;                                  // guarded by mutex_
  std::vector<std::function<void(LostReason)>> callbacks_; // guarded by mutex_
  std::optional<std::future<Result<NodeData>>> own_watch_;  // guarded by mutex_
  std::stop_source stop_;
};

}  // namespace zkr::detail
