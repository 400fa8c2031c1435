// The two public locks: ownership rules only. The queue is LockInternals'.
#include "zkr/lock.hpp"

#include <spdlog/spdlog.h>
#include <deque>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "zkr/multi_lock.hpp"
#include "zkr/path.hpp"

#include "acquire_calls.hpp"
#include "client_internals.hpp"
#include "grant_state.hpp"
#include "lock_internals.hpp"
#include "queue_lock.hpp"

namespace zkr {

using detail::Clock;
using detail::Deadline;
using detail::GrantState;

std::string_view to_string(LostReason reason) noexcept {
  switch (reason) {
    case LostReason::none: return "none";
    case LostReason::suspended: return "suspended";
    case LostReason::session_lost: return "session_lost";
    case LostReason::node_deleted: return "node_deleted";
  }
  return "unknown";
}

Grant::Grant(std::shared_ptr<GrantState> state) : state_(std::move(state)) {}
std::int64_t Grant::fencing_token() const noexcept { return state_->fencing_token; }
const std::string& Grant::node_path() const noexcept { return state_->node_path; }
std::uint64_t Grant::session_epoch() const noexcept { return state_->epoch; }
bool Grant::lost() const noexcept { return lost_reason() != LostReason::none; }
LostReason Grant::lost_reason() const noexcept {
  try {
    return state_->reason();
  } catch (...) {
    return LostReason::session_lost;  // cannot tell: assume the worst
  }
}
bool Grant::released() const noexcept { return state_->released(); }
bool Grant::revocation_requested() const noexcept {
  try {
    return state_->revocation_requested();
  } catch (...) {
    return false;
  }
}
void Grant::on_revocation_requested(std::function<void()> callback) const {
  state_->add_revocation_callback(std::move(callback));
}
std::stop_token Grant::lost_token() const noexcept {
  (void)lost_reason();  // a reply that says the node is gone stops it now
  return state_->token();
}
void Grant::on_lost(std::function<void(LostReason)> callback) const {
  state_->add_callback(std::move(callback));
}

namespace {
using Visit = detail::ClientLifeline::Visit;
using detail::acquire_when_connected;
using detail::check_may_acquire;
using detail::checked_lock_path;
using detail::give_back;
using detail::participant_nodes_naming;
}  // namespace

// ---- InterProcessMutex: reentrant per thread.

struct InterProcessMutex::Impl : detail::QueueLock {
  struct Hold {
    std::shared_ptr<GrantState> state;
    std::uint32_t count;
  };

  using QueueLock::QueueLock;

  bool take(Deadline deadline, const std::stop_token& stop) {
    Visit visit(*lifeline);
    check_may_acquire(visit, internals.client(), "InterProcessMutex", internals.dir());
    if (stop.stop_requested()) return false;
    {
      std::lock_guard lock(mutex);
      if (auto it = holds.find(std::this_thread::get_id()); it != holds.end()) {
        if (it->second.count >= kMaxReentrantHolds)
          throw std::overflow_error("InterProcessMutex " + internals.dir() +
                                    ": this thread already holds it " +
                                    std::to_string(kMaxReentrantHolds) +
                                    " times, the most allowed (acquires without releases?)");
        if (const auto why = it->second.state->reason(); why != LostReason::none)
          throw KeeperError(Errc::session_expired, internals.dir(),
                            "this thread's hold on the lock was lost (" +
                                std::string(to_string(why)) +
                                "); release it before acquiring again");
        ++it->second.count;
        return true;
      }
    }
    auto state = acquire_when_connected(internals, deadline, {}, stop);
    if (!state) return false;
    std::lock_guard lock(mutex);
    holds.emplace(std::this_thread::get_id(), Hold{state, 1});
    return true;
  }

  // Node-based: a thread's Hold stays put while others come and go.
  std::unordered_map<std::thread::id, Hold> holds;  // guarded by mutex
};

InterProcessMutex::InterProcessMutex(Client& client, std::string path, LockOptions options)
    : impl_(
          std::make_shared<Impl>(client, checked_lock_path(std::move(path)), std::move(options))) {}

InterProcessMutex::~InterProcessMutex() {
  std::unordered_map<std::thread::id, Impl::Hold> left;
  {
    std::lock_guard lock(impl_->mutex);
    left.swap(impl_->holds);
  }
  for (auto& [thread, hold] : left) {
    impl_->log->warn("InterProcessMutex {} destroyed while held; releasing",
                     impl_->internals.dir());
    give_back(*impl_->lifeline, impl_->internals, hold.state);
  }
}

bool InterProcessMutex::take(std::optional<Clock::time_point> deadline, std::stop_token stop) {
  return impl_->take(deadline, stop);
}
LockGuard InterProcessMutex::take_guard(std::optional<Clock::time_point> deadline,
                                        std::stop_token stop) {
  return detail::take_guard(*impl_, "InterProcessMutex", deadline, stop);
}

void InterProcessMutex::take_guard_async(std::optional<Clock::time_point> deadline,
                                         std::stop_token stop, detail::GuardHandler on_done) {
  detail::acquire_guard_async(impl_, impl_->internals, impl_->lifeline, deadline, std::move(stop),
                              std::move(on_done));
}

bool InterProcessMutex::release() noexcept {
  std::shared_ptr<GrantState> last;
  {
    std::lock_guard lock(impl_->mutex);
    const auto it = impl_->holds.find(std::this_thread::get_id());
    if (it == impl_->holds.end()) {
      impl_->log->error(
          "InterProcessMutex {}: release by a thread that does not hold it; nothing changed",
          impl_->internals.dir());
      return false;
    }
    if (--it->second.count > 0) return true;
    last = std::move(it->second.state);
    impl_->holds.erase(it);
  }
  give_back(*impl_->lifeline, impl_->internals, last);
  return true;
}

bool InterProcessMutex::is_acquired_in_this_process() const {
  std::lock_guard lock(impl_->mutex);
  return !impl_->holds.empty();
}
bool InterProcessMutex::is_owned_by_current_thread() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->holds.count(std::this_thread::get_id()) == 1;
}
Grant InterProcessMutex::grant() const {
  std::lock_guard lock(impl_->mutex);
  const auto it = impl_->holds.find(std::this_thread::get_id());
  if (it == impl_->holds.end())
    throw std::logic_error("InterProcessMutex " + impl_->internals.dir() +
                           ": grant() by a thread that does not hold the lock");
  return Grant(it->second.state);
}
std::vector<std::string> InterProcessMutex::participant_nodes() const {
  return participant_nodes_naming(*impl_->lifeline, impl_->internals);
}
const std::string& InterProcessMutex::path() const noexcept { return impl_->internals.dir(); }

// ---- NonReentrantMutex: one hold, any thread releases.

struct NonReentrantMutex::Impl : detail::QueueLock {
  using QueueLock::QueueLock;

  bool take(Deadline deadline, const std::stop_token& stop) {
    Visit visit(*lifeline);
    check_may_acquire(visit, internals.client(), "NonReentrantMutex", internals.dir());
    auto granted = acquire_when_connected(internals, deadline, {}, stop);
    if (!granted) return false;
    std::lock_guard lock(mutex);
    // A grant after ours means our node is gone: the server listed none
    // before the new one. Say so now, whatever the watch has told yet.
    for (const auto& older : grants) older->mark_lost(LostReason::node_deleted);
    grants.push_back(std::move(granted));
    return true;
  }

  // Grants not yet released, oldest first: only the newest can still hold.
  std::deque<std::shared_ptr<GrantState>> grants;  // guarded by mutex
};

NonReentrantMutex::NonReentrantMutex(Client& client, std::string path, LockOptions options)
    : impl_(
          std::make_shared<Impl>(client, checked_lock_path(std::move(path)), std::move(options))) {}

NonReentrantMutex::~NonReentrantMutex() {
  if (is_acquired_in_this_process())
    impl_->log->warn("NonReentrantMutex {} destroyed while held; releasing",
                     impl_->internals.dir());
  while (release()) {
  }
}

bool NonReentrantMutex::take(std::optional<Clock::time_point> deadline, std::stop_token stop) {
  return impl_->take(deadline, stop);
}
LockGuard NonReentrantMutex::take_guard(std::optional<Clock::time_point> deadline,
                                        std::stop_token stop) {
  return detail::take_guard(*impl_, "NonReentrantMutex", deadline, stop);
}

void NonReentrantMutex::take_guard_async(std::optional<Clock::time_point> deadline,
                                         std::stop_token stop, detail::GuardHandler on_done) {
  detail::acquire_guard_async(impl_, impl_->internals, impl_->lifeline, deadline, std::move(stop),
                              std::move(on_done));
}

bool NonReentrantMutex::release() noexcept {
  std::shared_ptr<GrantState> held;
  {
    std::lock_guard lock(impl_->mutex);
    if (impl_->grants.empty()) return false;
    held = std::move(impl_->grants.front());
    impl_->grants.pop_front();
  }
  give_back(*impl_->lifeline, impl_->internals, held);
  return true;
}

bool NonReentrantMutex::is_acquired_in_this_process() const {
  std::lock_guard lock(impl_->mutex);
  return !impl_->grants.empty();
}
Grant NonReentrantMutex::grant() const {
  std::lock_guard lock(impl_->mutex);
  if (impl_->grants.empty())
    throw std::logic_error("NonReentrantMutex " + impl_->internals.dir() +
                           ": grant() while not held");
  return Grant(impl_->grants.back());
}
std::vector<std::string> NonReentrantMutex::participant_nodes() const {
  return participant_nodes_naming(*impl_->lifeline, impl_->internals);
}
const std::string& NonReentrantMutex::path() const noexcept { return impl_->internals.dir(); }

}  // namespace zkr
