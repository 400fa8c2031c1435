// See refresh_thread.hpp.
#include "refresh_thread.hpp"

#include <utility>

namespace zkr::detail {

void RefreshSignal::wake(bool full) {
  {
    std::lock_guard lock(mutex_);
    pending_ = true;
    full_ = full_ || full;
  }
  changed_.notify_all();
}

void RefreshThread::start(Look look, std::chrono::milliseconds retry_after) {
  thread_ = std::jthread([this, look = std::move(look), retry_after](std::stop_token stop) {
    run(stop, look, retry_after);
  });
}

void RefreshThread::stop() noexcept {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

void RefreshThread::run(const std::stop_token& stop, const Look& look,
                        std::chrono::milliseconds retry_after) {
  RefreshSignal& s = *signal_;
  for (;;) {
    bool full = false;
    {
      std::unique_lock lock(s.mutex_);
      if (!s.changed_.wait(lock, stop, [&] { return s.pending_; })) return;
      s.pending_ = false;
      full = std::exchange(s.full_, false);
    }
    if (look(full)) continue;
    std::unique_lock lock(s.mutex_);
    s.changed_.wait_for(lock, stop, retry_after, [&] { return s.pending_; });
    if (stop.stop_requested()) return;
    s.pending_ = true;
    s.full_ = true;  // what failed is not known in detail: look at it all
  }
}

}  // namespace zkr::detail
