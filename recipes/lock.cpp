// The two public locks: ownership rules only. The queue is LockInternals'.
#include "zkr/lock.hpp"

#include <limits>
#include <spdlog/spdlog.h>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "lease_state.hpp"
#include "lock_internals.hpp"

namespace zkr {

using detail::Clock;
using detail::Deadline;
using detail::LeaseState;

std::string_view to_string(LostReason reason) noexcept {
  switch (reason) {
    case LostReason::none: return "none";
    case LostReason::suspended: return "suspended";
    case LostReason::session_lost: return "session_lost";
    case LostReason::node_deleted: return "node_deleted";
  }
  return "unknown";
}

LockLease::LockLease(std::shared_ptr<LeaseState> state) : state_(std::move(state)) {}
std::int64_t LockLease::fencing_token() const noexcept { return state_->czxid; }
const std::string& LockLease::node_path() const noexcept { return state_->node_path; }
std::uint64_t LockLease::session_epoch() const noexcept { return state_->epoch; }
bool LockLease::lost() const noexcept { return lost_reason() != LostReason::none; }
LostReason LockLease::lost_reason() const noexcept {
  try {
    return state_->reason();
  } catch (...) {
    return LostReason::session_lost;  // cannot tell: assume the worst
  }
}
std::stop_token LockLease::lost_token() const noexcept { return state_->token(); }
void LockLease::on_lost(std::function<void(LostReason)> callback) const {
  state_->add_callback(std::move(callback));
}

MultiResult guarded_write(Keeper& keeper, const LockLease& lease, std::vector<Op> ops,
                          OptionalTimeout timeout) {
  // Version -1: the check asks only that the node exists. results[0] is it.
  ops.insert(ops.begin(), op::Check{lease.node_path(), kAnyVersion});
  return keeper.try_multi(std::move(ops), timeout);
}

namespace {

Deadline deadline_after(std::chrono::milliseconds timeout) {
  return Clock::now() + std::max(timeout, std::chrono::milliseconds(0));
}

Deadline to_deadline(std::chrono::steady_clock::time_point deadline) { return deadline; }

}  // namespace

// ---- InterProcessMutex: reentrant per thread.

struct InterProcessMutex::Impl {
  struct Hold {
    std::shared_ptr<LeaseState> state;
    LockLease lease;
    std::uint32_t count;
  };
  static constexpr std::uint32_t kMaxHolds = std::numeric_limits<std::uint32_t>::max();

  Impl(Client& client, std::string path, LockOptions options)
      : internals(client, std::move(path), std::move(options)) {}

  bool take(Deadline deadline) {
    {
      std::lock_guard lock(mutex);
      if (auto it = holds.find(std::this_thread::get_id()); it != holds.end()) {
        if (it->second.count == kMaxHolds)
          throw std::overflow_error("InterProcessMutex " + internals.dir() +
                                    ": reentrant acquires past " + std::to_string(kMaxHolds));
        if (it->second.lease.lost())
          throw KeeperError(Errc::session_expired, internals.dir(),
                            "this thread's hold on the lock was lost (" +
                                std::string(to_string(it->second.lease.lost_reason())) +
                                "); release it before acquiring again");
        ++it->second.count;
        return true;
      }
    }
    auto state = internals.acquire(deadline);
    if (!state) return false;
    std::lock_guard lock(mutex);
    holds.emplace(std::this_thread::get_id(), Hold{state, LockLease(state), 1});
    return true;
  }

  detail::LockInternals internals;
  mutable std::mutex mutex;
  // Node-based: a thread's Hold stays put while others come and go.
  std::unordered_map<std::thread::id, Hold> holds;  // guarded by mutex
};

InterProcessMutex::InterProcessMutex(Client& client, std::string path, LockOptions options)
    : impl_(std::make_unique<Impl>(client, std::move(path), std::move(options))) {}

InterProcessMutex::~InterProcessMutex() {
  std::unordered_map<std::thread::id, Impl::Hold> left;
  {
    std::lock_guard lock(impl_->mutex);
    left.swap(impl_->holds);
  }
  for (auto& [thread, hold] : left) {
    impl_->internals.client().logger().warn("InterProcessMutex {} destroyed while held; releasing",
                                            impl_->internals.dir());
    impl_->internals.release(hold.state);
  }
}

void InterProcessMutex::acquire() {
  if (!impl_->take(std::nullopt))
    throw KeeperError(Errc::operation_timeout, impl_->internals.dir(), "acquire gave up");
}
bool InterProcessMutex::try_acquire() { return impl_->take(Clock::now()); }
bool InterProcessMutex::try_acquire_for(std::chrono::milliseconds timeout) {
  return impl_->take(deadline_after(timeout));
}
bool InterProcessMutex::try_acquire_until(std::chrono::steady_clock::time_point deadline) {
  return impl_->take(to_deadline(deadline));
}

bool InterProcessMutex::release() noexcept {
  std::shared_ptr<LeaseState> last;
  {
    std::lock_guard lock(impl_->mutex);
    const auto it = impl_->holds.find(std::this_thread::get_id());
    if (it == impl_->holds.end()) {
      impl_->internals.client().logger().error(
          "InterProcessMutex {}: release by a thread that does not hold it; nothing changed",
          impl_->internals.dir());
      return false;
    }
    if (--it->second.count > 0) return true;
    last = std::move(it->second.state);
    impl_->holds.erase(it);
  }
  impl_->internals.release(last);
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
const LockLease& InterProcessMutex::lease() const {
  std::lock_guard lock(impl_->mutex);
  const auto it = impl_->holds.find(std::this_thread::get_id());
  if (it == impl_->holds.end())
    throw std::logic_error("InterProcessMutex " + impl_->internals.dir() +
                           ": lease() by a thread that does not hold the lock");
  return it->second.lease;
}
std::vector<std::string> InterProcessMutex::participant_nodes() const {
  return impl_->internals.participant_nodes();
}
const std::string& InterProcessMutex::path() const noexcept { return impl_->internals.dir(); }

// ---- InterProcessSemaphoreMutex: one hold, any thread releases.

struct InterProcessSemaphoreMutex::Impl {
  Impl(Client& client, std::string path, LockOptions options)
      : internals(client, std::move(path), std::move(options)) {}

  bool take(Deadline deadline) {
    auto granted = internals.acquire(deadline);
    if (!granted) return false;
    std::lock_guard lock(mutex);
    state = granted;
    lease.emplace(granted);
    return true;
  }

  detail::LockInternals internals;
  mutable std::mutex mutex;
  std::shared_ptr<LeaseState> state;  // guarded by mutex
  std::optional<LockLease> lease;     // guarded by mutex
};

InterProcessSemaphoreMutex::InterProcessSemaphoreMutex(Client& client, std::string path,
                                                       LockOptions options)
    : impl_(std::make_unique<Impl>(client, std::move(path), std::move(options))) {}

InterProcessSemaphoreMutex::~InterProcessSemaphoreMutex() {
  if (is_acquired_in_this_process())
    impl_->internals.client().logger().warn(
        "InterProcessSemaphoreMutex {} destroyed while held; releasing", impl_->internals.dir());
  (void)release();
}

void InterProcessSemaphoreMutex::acquire() {
  if (!impl_->take(std::nullopt))
    throw KeeperError(Errc::operation_timeout, impl_->internals.dir(), "acquire gave up");
}
bool InterProcessSemaphoreMutex::try_acquire() { return impl_->take(Clock::now()); }
bool InterProcessSemaphoreMutex::try_acquire_for(std::chrono::milliseconds timeout) {
  return impl_->take(deadline_after(timeout));
}
bool InterProcessSemaphoreMutex::try_acquire_until(std::chrono::steady_clock::time_point deadline) {
  return impl_->take(to_deadline(deadline));
}

bool InterProcessSemaphoreMutex::release() noexcept {
  std::shared_ptr<LeaseState> held;
  {
    std::lock_guard lock(impl_->mutex);
    held = std::move(impl_->state);
    impl_->state.reset();
    // The lease object stays readable: a caller may still hold a reference.
  }
  if (!held) return false;
  impl_->internals.release(held);
  return true;
}

bool InterProcessSemaphoreMutex::is_acquired_in_this_process() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->state != nullptr;
}
const LockLease& InterProcessSemaphoreMutex::lease() const {
  std::lock_guard lock(impl_->mutex);
  if (!impl_->state)
    throw std::logic_error("InterProcessSemaphoreMutex " + impl_->internals.dir() +
                           ": lease() while not held");
  return *impl_->lease;
}
std::vector<std::string> InterProcessSemaphoreMutex::participant_nodes() const {
  return impl_->internals.participant_nodes();
}
const std::string& InterProcessSemaphoreMutex::path() const noexcept {
  return impl_->internals.dir();
}

}  // namespace zkr
