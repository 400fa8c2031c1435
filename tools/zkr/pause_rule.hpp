// tools/zkr/pause_rule.hpp: when the command of `zkr lock` may run, as a pure
// function of what zkr last proved to the guard and of the time.
//
// A lock held through a ZooKeeper session is only as good as the session, and
// a supervisor that is stopped (SIGSTOP, ^Z, a starved or swapped-out
// process) cannot tell its command that the session has expired. So the
// command may run only while zkr can *prove* that the session is alive:
//
//   - zkr reads its lock node every T/6 (T: the session timeout the server
//     granted). A reply that shows the node, owned by our session, to a
//     request sent at time t0 proves that the server still had our session
//     when it received the request, and the request renewed it: from then on,
//     the server expires it no earlier than T later, and the next waiter is
//     granted only after that. So the grant is safe until t0 + T.
//   - The command's group is stopped (SIGSTOP, which it cannot catch) at
//     t0 + T/2, half way: the other half is the margin for the guard's own
//     lateness (it is woken by a timer, and may be scheduled late on a busy
//     host). The interval T/6 leaves a read T/3 to come back before a
//     healthy run is stopped; if it takes longer, the group is stopped and
//     goes on as soon as a proof comes.
//   - Stopped, the group goes on (SIGCONT) only on a proof that is again
//     within its half: a resumed zkr must first prove its grant.
//   - At t0 + 2T the group is killed: by then the session has expired unless
//     zkr's connection lived on without it for a whole session timeout, and
//     a stopped group still holds files, ports and locks that the next
//     holder's command may need.
//   - While zkr itself is stopped on purpose (^Z), the group stays stopped
//     whatever proofs are pending: it goes on once zkr has resumed.
//   - Once zkr has found the lock lost and told the group to end (SIGTERM,
//     sent only while the session cannot have expired yet), the group is no
//     longer stopped, so that it can act on it; zkr kills it after
//     --kill-after, and the guard still at t0 + 2T.
//
// Times are CLOCK_BOOTTIME nanoseconds: unlike CLOCK_MONOTONIC, it counts a
// machine's suspend, during which the servers' clocks run on.
//
// No allocation, no library call: the guard process runs it after a fork from
// a threaded process, where only async-signal-safe calls are allowed.
#pragma once

#include <time.h>

#include <cstdint>
#include <limits>

namespace zkr::cli {

// CLOCK_BOOTTIME in nanoseconds. Async-signal-safe.
inline std::int64_t boottime_ns() noexcept {
  timespec now{};
  ::clock_gettime(CLOCK_BOOTTIME, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

class PauseRule {
 public:
  enum class Action { none, stop, resume, kill };
  static constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

  // `session_timeout_ns`: the timeout the server granted (T). `proven_ns`: the
  // send time of a first proof.
  constexpr PauseRule(std::int64_t session_timeout_ns, std::int64_t proven_ns) noexcept
      : timeout_(session_timeout_ns), proven_(proven_ns) {}

  // How often zkr should prove its grant, for a session timeout T: T/6.
  static constexpr std::int64_t proof_interval(std::int64_t session_timeout_ns) noexcept {
    return session_timeout_ns / 6;
  }

  // zkr proved its grant with a request sent at `sent_ns`.
  constexpr void proved(std::int64_t sent_ns) noexcept {
    if (sent_ns > proven_) proven_ = sent_ns;
  }
  // zkr stopped the group (^Z), and stops itself.
  constexpr void hold() noexcept {
    held_ = true;
    stopped_ = true;
  }
  // zkr runs again.
  constexpr void release() noexcept { held_ = false; }
  // zkr found the lock lost, and told the group to end.
  constexpr void terminating() noexcept { terminating_ = true; }

  // The next thing to do at `now`; call again until it says none.
  constexpr Action next(std::int64_t now) noexcept {
    if (killed_) return Action::none;
    if (now >= kill_at()) {
      killed_ = true;
      return Action::kill;
    }
    if (terminating_) return Action::none;
    if (now >= stop_at()) {
      if (stopped_) return Action::none;
      stopped_ = true;
      return Action::stop;
    }
    if (stopped_ && !held_) {
      stopped_ = false;
      return Action::resume;
    }
    return Action::none;
  }

  // When next() may next have something to do (kNever: not before a message).
  constexpr std::int64_t wake_at() const noexcept {
    if (killed_) return kNever;
    return stopped_ || terminating_ ? kill_at() : stop_at();
  }

  // Whether the group may run at `now`: zkr not held, and a proof in its half.
  constexpr bool may_run(std::int64_t now) const noexcept { return !held_ && now < stop_at(); }

  // Whether the server cannot have expired the session by `now`: the last
  // proof is less than a whole session timeout old.
  constexpr bool unexpired(std::int64_t now) const noexcept {
    return now < saturating_add(proven_, timeout_);
  }

  constexpr std::int64_t stop_at() const noexcept { return saturating_add(proven_, timeout_ / 2); }
  constexpr std::int64_t kill_at() const noexcept { return saturating_add(proven_, 2 * timeout_); }

 private:
  static constexpr std::int64_t saturating_add(std::int64_t a, std::int64_t b) noexcept {
    return a > kNever - b ? kNever : a + b;
  }

  std::int64_t timeout_;
  std::int64_t proven_;
  bool held_ = false;
  bool stopped_ = false;  // by us, or by zkr for ^Z
  bool killed_ = false;
  bool terminating_ = false;
};

}  // namespace zkr::cli
