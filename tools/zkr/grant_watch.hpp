// tools/zkr/grant_watch.hpp: keeping the command of `zkr lock` or `zkr elect`
// from running longer than zkr can prove that its grant (a lock, a
// leadership term: any Grant) is still held.
//
// A thread reads the grant's node every T/6 (T: the session timeout the server
// granted). Each reply that shows the node, owned by the grant's session, is
// a proof dated by the request's send time, passed on to the group guard
// (group_guard.hpp), which stops the command's group when the latest proof
// is too old and lets it go on with a fresh one (pause_rule.hpp has the
// arithmetic and why it is safe). So a zkr that is stopped, or starved, stops
// its command too, before its session can expire; once it runs again, the
// command goes on only after zkr has proved its grant anew.
//
// ^Z (SIGTSTP) is zkr's to handle (supervisor.hpp): stop_with_command() stops
// the group, then zkr, and returns once zkr is continued; the group goes on
// if the grant is still proved.
//
//   GrantWatch watch(client.keeper(), grant, log);
//   if (!watch.prove_first()) ...;                 // lost before the command
//   spawn_command(..., [&](pid_t pgid) { watch.arm(pgid); });
//   supervise(...);                                // may_run(), stop_with_command()
//   watch.disarm();                                // once the group is empty
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "group_guard.hpp"

namespace spdlog {
class logger;
}

namespace zkr {
class Keeper;
class Grant;
}  // namespace zkr

namespace zkr::cli {

class GrantWatch {
 public:
  // `keeper`: the session `grant` was granted in. A node that exists, owned
  // by that session, proves the grant: a lock's or a latch's node is ours
  // until deleted, and no node can come back before it in the queue.
  GrantWatch(std::shared_ptr<Keeper> keeper, const Grant& grant, spdlog::logger& log);
  // Stops proving and disarms the guard (see disarm()).
  ~GrantWatch();
  GrantWatch(const GrantWatch&) = delete;
  GrantWatch& operator=(const GrantWatch&) = delete;

  // The session timeout the server granted.
  std::chrono::milliseconds session_timeout() const noexcept { return session_timeout_; }

  // Proves the grant once, before the command runs; false if the server does
  // not show our node, owned by our session, within half a session timeout.
  [[nodiscard]] bool prove_first();

  // Forks the guard for the command's group, and starts proving every T/6.
  // After prove_first() returned true. Throws std::system_error.
  void arm(pid_t pgid);

  // Whether the command's group may run now: zkr has a proof young enough,
  // and is not stopping; or it is ending for a lost grant (may_end_gently()).
  // The guard's own view lags behind it, never ahead.
  bool may_run() const noexcept;

  // The grant is lost. True if the group may still act on a SIGTERM: the
  // server cannot have expired the session yet (the last proof is less than
  // a session timeout old), and the guard is told to stop it no more. False
  // if zkr was stopped or starved past that point: the next holder may be
  // running, and the group must be killed at once.
  bool may_end_gently() noexcept;

  // ^Z: stops the group, then zkr itself; returns once zkr is continued. The
  // group goes on as soon as the grant is proved again (at once if the last
  // proof is still young enough). Main thread.
  void stop_with_command(pid_t pgid);

  // Stops proving, and disarms the guard (it exits without signalling). Only
  // once the group is empty. Idempotent; never throws.
  void disarm() noexcept;

 private:
  std::optional<std::int64_t> prove_once() noexcept;
  void prove_every(std::stop_token stop);

  std::shared_ptr<Keeper> keeper_;
  std::string node_path_;
  spdlog::logger& log_;
  std::chrono::milliseconds session_timeout_;
  std::atomic<std::int64_t> proven_ns_{0};  // latest proof's send time (boottime_ns)
  std::atomic<bool> holding_{false};        // zkr is stopping for ^Z
  std::atomic<bool> ending_{false};         // may_end_gently() said yes
  std::optional<GroupGuard> guard_;
  std::jthread prover_;
};

}  // namespace zkr::cli
