// The lock a W2 or W5 holder takes: ours (InterProcessMutex), or with
// --no-lock none at all. The second is the control of the exclusion checks:
// the same workload, the same critical section, no exclusion, so the checker
// must report overlaps and lost updates; if it does not, the checks of the
// real runs prove nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "zkr/client.hpp"
#include "zkr/lock.hpp"

namespace zkr::bench {

class HolderLock {
 public:
  HolderLock(Client& client, const std::string& path, bool no_lock) {
    if (!no_lock) mutex_ = std::make_unique<InterProcessMutex>(client, path);
  }
  // Always true without a lock: it grants at once and excludes nobody.
  bool try_acquire_for(std::chrono::milliseconds timeout) {
    return !mutex_ || mutex_->try_acquire_for(timeout);
  }
  void release() {
    if (mutex_) mutex_->release();
  }
  // The grant's fencing token; 0 without a lock.
  std::int64_t token() const { return mutex_ ? mutex_->grant().fencing_token() : 0; }
  const char* kind() const { return mutex_ ? "mutex" : "none"; }

 private:
  std::unique_ptr<InterProcessMutex> mutex_;
};

}  // namespace zkr::bench
