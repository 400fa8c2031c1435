// CKeeper's nudges (c_keeper.hpp, reply_watchdog.hpp): the thread that sends
// an exists("/") to a server silent on outstanding requests, its answer, and
// stopping it. Apart because it is the one thread of the keeper's own; the
// keeper's close (c_keeper.cpp) stops it before the handle goes.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <shared_mutex>

#include "c_keeper_internals.hpp"

namespace zkr {
namespace ckeeper {

// A nudge's answer (data: the Shared). Whatever it says, ZNONODE included, the
// nudge has done its work or failed with the connection; the next may follow.
// It may run during zookeeper_close(), while the Shared is still alive.
void on_nudged(int, const ::Stat*, const void* data) {
  auto& shared = *static_cast<Shared*>(const_cast<void*>(data));
  shared.on_event_thread();
  const auto now = WatchdogClock::now();
  std::lock_guard lock(shared.mutex);
  shared.watchdog.on_nudge_answered(now);
  wake_watchdog_if_sooner(shared);
}

}  // namespace ckeeper

using namespace ckeeper;

std::uint64_t CKeeper::nudges_sent() const noexcept {
  return shared_->nudges.load(std::memory_order_relaxed);
}

// The nudging thread. It sleeps until the watchdog's next deadline, or without
// one until woken (nothing outstanding, a nudge in flight, or not connected:
// a nudge queued while the C client reconnects would only follow the requests
// it resends), so an idle or healthy session costs it nothing.
void CKeeper::watch_replies() {
  Shared& shared = *shared_;
  std::unique_lock lock(shared.mutex);
  while (!shared.watchdog_stop) {
    const bool connected = shared.state == SessionState::connected ||
                           shared.state == SessionState::connected_read_only;
    if (connected && shared.watchdog.take_nudge(WatchdogClock::now())) {
      lock.unlock();
      nudge();
      lock.lock();
      continue;
    }
    // take_nudge() said no, so any deadline is still ahead: no busy loop.
    const auto deadline = connected ? shared.watchdog.next_deadline() : std::nullopt;
    shared.watchdog_wakes_at = deadline.value_or(WatchdogClock::time_point::max());
    if (deadline) shared.watchdog_wakeup.wait_until(lock, *deadline);
    else shared.watchdog_wakeup.wait(lock);
  }
}

// One exists("/") on the session, without a watch: the cheapest request that
// reaches the server's CommitProcessor. With a chroot it reads the chroot;
// no_node would do as well. Called without shared->mutex.
void CKeeper::nudge() {
  int rc = ZCLOSING;
  {
    std::shared_lock lock(handle_mutex_);
    if (handle_) rc = zoo_aexists(handle_, "/", 0, &on_nudged, shared_.get());
  }
  std::int64_t id = 0;
  std::size_t outstanding = 0;
  std::chrono::milliseconds limit{};
  {
    std::lock_guard lock(shared_->mutex);
    id = shared_->session_id;
    outstanding = shared_->watchdog.outstanding();
    limit = shared_->watchdog.quiet_limit();
    if (rc != ZOK) shared_->watchdog.on_nudge_answered(WatchdogClock::now());
  }
  if (rc != ZOK) {
    shared_->log->debug("session {:#x}: could not send a nudge: {}", id, zerror(rc));
    return;
  }
  shared_->nudges.fetch_add(1, std::memory_order_relaxed);
  shared_->log->debug(
      "session {:#x}: no reply for {} ms with {} request(s) outstanding: nudged the server "
      "with exists(/) (ZOOKEEPER-4537)",
      id, limit.count(), outstanding);
}

void CKeeper::stop_watchdog() noexcept {
  std::lock_guard thread_lock(watchdog_thread_mutex_);
  if (!watchdog_thread_.joinable()) return;
  {
    std::lock_guard lock(shared_->mutex);
    shared_->watchdog_stop = true;
    shared_->watchdog_wakeup.notify_one();
  }
  // Never waits on the C client's threads: nudge() only queues a request.
  // So this may run on the C client's event thread too.
  watchdog_thread_.join();
}

}  // namespace zkr
