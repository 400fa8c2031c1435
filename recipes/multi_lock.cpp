#include "zkr/multi_lock.hpp"

#include <algorithm>
#include <stdexcept>

namespace zkr {

using Clock = std::chrono::steady_clock;

MultiLock::MultiLock(Client& client, std::vector<std::string> paths, LockOptions options)
    : paths_(std::move(paths)) {
  if (paths_.empty()) throw std::invalid_argument("MultiLock needs at least one path");
  // The canonical order: every MultiLock takes shared paths in the same order.
  std::sort(paths_.begin(), paths_.end());
  paths_.erase(std::unique(paths_.begin(), paths_.end()), paths_.end());
  for (const auto& path : paths_)
    locks_.push_back(std::make_unique<InterProcessMutex>(client, path, options));
}

MultiLock::~MultiLock() = default;  // each InterProcessMutex releases what it holds

bool MultiLock::take(std::optional<Clock::time_point> deadline) {
  std::size_t taken = 0;
  try {
    for (; taken < locks_.size(); ++taken) {
      auto& lock = *locks_[taken];
      const bool got = deadline ? lock.try_acquire_until(*deadline) : (lock.acquire(), true);
      if (!got) break;
    }
  } catch (...) {
    while (taken > 0) locks_[--taken]->release();
    throw;
  }
  if (taken == locks_.size()) return true;
  // Give back what we took, last first, so nobody waits on a partial set.
  while (taken > 0) locks_[--taken]->release();
  return false;
}

void MultiLock::acquire() { (void)take(std::nullopt); }
bool MultiLock::try_acquire() { return take(Clock::now()); }
bool MultiLock::try_acquire_for(std::chrono::milliseconds timeout) {
  return take(Clock::now() + std::max(timeout, std::chrono::milliseconds(0)));
}
bool MultiLock::try_acquire_until(Clock::time_point deadline) { return take(deadline); }

bool MultiLock::release() noexcept {
  bool any = false;
  for (auto it = locks_.rbegin(); it != locks_.rend(); ++it) {
    if ((*it)->is_owned_by_current_thread()) any = (*it)->release() || any;
  }
  return any;
}

bool MultiLock::is_acquired_in_this_process() const {
  return std::all_of(locks_.begin(), locks_.end(),
                     [](const auto& lock) { return lock->is_acquired_in_this_process(); });
}

const std::vector<std::string>& MultiLock::paths() const noexcept { return paths_; }

std::vector<LockLease> MultiLock::leases() const {
  std::vector<LockLease> leases;
  for (const auto& lock : locks_) leases.push_back(lock->lease());
  return leases;
}

MultiResult guarded_write(Keeper& keeper, const std::vector<LockLease>& leases,
                          std::vector<Op> ops, OptionalTimeout timeout) {
  std::vector<Op> guarded;
  guarded.reserve(leases.size() + ops.size());
  for (const auto& lease : leases) guarded.push_back(op::Check{lease.node_path(), kAnyVersion});
  for (auto& o : ops) guarded.push_back(std::move(o));
  return keeper.try_multi(std::move(guarded), timeout);
}

}  // namespace zkr
