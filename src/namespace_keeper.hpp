// src/namespace_keeper.hpp (internal): the Client's namespace, made before a
// connection is announced and made again when it goes.
//
// The session's handle is opened with the namespace as its chroot, so the C
// client adds and strips the prefix on every path, watch and result. A chroot
// must exist, and it cannot be created through the chrooted handle (its
// parents are out of its sight). So on every connection of a session, before
// it is announced, the session's own handle looks at "/" (the namespace node
// itself: one read, which also leaves a watch on it); only if it is missing
// does a short-lived handle without chroot create it, with its parents, under
// namespace_acl. A connection whose namespace cannot be made is not announced:
// the error is kept for callers (they get it at once, not a misleading no_node
// from every call), and the attempt is repeated with a growing pause while the
// session lasts. The watch brings the session thread back when the node is
// deleted (an operator, a cleanup), so that it is created again at once rather
// than never.
//
// Everything but error() is for the session thread (session_thread.hpp),
// which feeds it its session's events and asks it which connections may be
// announced:
//
//   if (up && !ns.admit(state, session)) return;          // held back
//   if (auto s = ns.on_retry(connected, session)) announce(*s);  // at retry_at()
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "session_inbox.hpp"
#include "zkr/client.hpp"
#include "zkr/keeper.hpp"

namespace spdlog {
class logger;
}

namespace zkr::detail {

class NamespaceKeeper {
 public:
  using Clock = std::chrono::steady_clock;

  // `config` is the sessions' (its chroot is the namespace; none: there is
  // nothing to make, and every connection is admitted). Watch events go to
  // `inbox`, for the session thread. `changed` is called (no lock of ours
  // held) after each look at the namespace, whether error() changed or not:
  // the Client wakes its waits with it.
  NamespaceKeeper(const ClientOptions& options, KeeperConfig config,
                  std::shared_ptr<SessionInbox> inbox, std::shared_ptr<spdlog::logger> log,
                  std::function<void()> changed);
  NamespaceKeeper(const NamespaceKeeper&) = delete;
  NamespaceKeeper& operator=(const NamespaceKeeper&) = delete;

  // A connection of `session` (connected or connected_read_only): true if it
  // may be announced, the namespace being there (or made now). Else it is
  // held back, and a retry is due at retry_at().
  bool admit(SessionState connection, const Client::Session& session);
  // Any other event of the session: a connection held back is outdated.
  void on_other_event();
  // The watch on the namespace node fired (a SessionInbox event): it was
  // deleted, or changed. `connected`: the Client's connection is announced.
  void on_changed(bool connected, const Client::Session& session);
  // Once retry_at() has come: tries again. Returns the connection held back
  // once it may be announced.
  std::optional<SessionState> on_retry(bool connected, const Client::Session& session);
  // The session ended: what was held back or due for it is void.
  void on_session_ended();
  // When on_retry() is due; nullopt: not due.
  std::optional<Clock::time_point> retry_at() const { return retry_at_; }

  // Why the namespace cannot be made, for callers; nullopt while it exists,
  // or while only the link failed. Any thread; the lock it takes is taken
  // with no other held, or under the Client's (never the other way round).
  std::optional<KeeperError> error() const;
  // error() has a value, without copying it.
  bool failed() const;

 private:
  bool ensure(const Client::Session& session);
  void create();
  void schedule_retry();

  const ClientOptions& options_;  // the Client's, which outlives us
  const KeeperConfig config_;
  const std::shared_ptr<SessionInbox> inbox_;
  const std::shared_ptr<spdlog::logger> log_;
  const std::function<void()> changed_;

  // Session thread only.
  // A connection of the current session, held back until its namespace exists.
  std::optional<SessionState> withheld_;
  std::optional<Clock::time_point> retry_at_;  // next attempt to make it
  std::chrono::milliseconds retry_delay_;
  std::uint64_t watch_epoch_ = 0;  // the session whose handle has the watch

  mutable std::mutex mutex_;
  std::optional<KeeperError> error_;  // guarded by mutex_
};

}  // namespace zkr::detail
