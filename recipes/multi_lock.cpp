#include "zkr/multi_lock.hpp"

#include <algorithm>
#include <stdexcept>
#include <type_traits>
#include <variant>

#include <spdlog/spdlog.h>

#include "client_internals.hpp"
#include "lock_driver.hpp"
#include "zkr/path.hpp"

namespace zkr {

using Clock = std::chrono::steady_clock;

MultiLock::MultiLock(Client& client, std::vector<std::string> paths, LockOptions options)
    : client_(client), paths_(std::move(paths)) {
  if (paths_.empty()) throw std::invalid_argument("MultiLock needs at least one path");
  // The canonical order: every MultiLock takes shared paths in the same order.
  std::sort(paths_.begin(), paths_.end());
  paths_.erase(std::unique(paths_.begin(), paths_.end()), paths_.end());
  for (const auto& path : paths_)
    locks_.push_back(std::make_shared<InterProcessMutex>(client, path, options));
}

MultiLock::~MultiLock() = default;  // each InterProcessMutex releases what it holds

bool MultiLock::take(std::optional<Clock::time_point> deadline, std::stop_token stop) {
  // Each round ends holding all, holding none, or having found a grant lost
  // while we waited for a later lock: then it gives everything back and goes
  // again. A round is lost only to a session ending. With a deadline, rounds
  // go on until it passes; without one, as long as the retry policy allows,
  // as a single lock requeues after a lost session.
  RetryBudget budget(client_.retry_policy(), client_.sleeper());
  for (;;) {
    if (stop.stop_requested()) return false;
    switch (take_once(deadline, stop)) {
      case Outcome::held: return true;
      case Outcome::timed_out: return false;  // or stopped
      case Outcome::grant_lost: break;
    }
    if (deadline) {
      if (Clock::now() >= *deadline) return false;
      continue;
    }
    const auto step = budget.next();
    if (step.verdict != RetryBudget::Verdict::retry)
      throw KeeperError(Errc::session_expired, paths_.front(),
                        "MultiLock: a lock was lost before the last was granted in " +
                            std::to_string(budget.retries()) +
                            " rounds, and the retry policy gave up");
    budget.sleep(step);
  }
}

MultiLock::Outcome MultiLock::take_once(std::optional<Clock::time_point> deadline,
                                        const std::stop_token& stop) {
  std::size_t taken = 0;
  auto give_back = [&] {
    // Last first, so nobody waits on a partial set.
    while (taken > 0) locks_[--taken]->release();
  };
  try {
    for (; taken < locks_.size(); ++taken) {
      auto& lock = *locks_[taken];
      const bool got = deadline ? lock.try_acquire_until(*deadline, stop) : lock.acquire(stop);
      if (!got) {
        give_back();
        return Outcome::timed_out;
      }
      // While we waited for this one, our session may have ended and taken
      // the earlier locks' nodes with it: each lock requeues in the new
      // session on its own, so a set spanning two sessions is no set at all
      // (another process may hold an earlier lock by now).
      if (!all_current(taken + 1)) {
        detail::ClientInternals::log(client_)->info(
            "MultiLock: a lock was lost while taking the next; starting over");
        ++taken;
        give_back();
        return Outcome::grant_lost;
      }
    }
  } catch (...) {
    give_back();
    throw;
  }
  return Outcome::held;
}

bool MultiLock::all_current(std::size_t n) const {
  const auto epoch = client_.session_epoch();
  for (std::size_t i = 0; i < n; ++i) {
    const auto& grant = locks_[i]->grant();
    if (grant.lost() || grant.session_epoch() != epoch) return false;
  }
  return true;
}

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

std::vector<Grant> MultiLock::grants() const {
  std::vector<Grant> leases;
  for (const auto& lock : locks_) leases.push_back(lock->grant());
  return leases;
}

}  // namespace zkr
