// src/session_thread.hpp (internal): the Client's session thread. It reads
// the inbox that the keepers' event threads append session events to, runs
// the connection state machine, keeps the "suspended too long" timer (the
// inbox's wait with a deadline), closes a session that is over and opens the
// next one, and has the namespace made before a connection is announced.
//
// Apart from the keepers' event threads because those must never block, and
// a handle cannot be closed from its own event thread. What it decides goes
// to CurrentSession (current_session.hpp) before listeners hear it, so that
// a listener sees the new session's epoch.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <thread>

#include "connection_state_machine.hpp"
#include "session_inbox.hpp"
#include "zkr/client.hpp"

namespace spdlog {
class logger;
}

namespace zkr::detail {

class CurrentSession;
class NamespaceKeeper;

class SessionThread {
 public:
  using Clock = std::chrono::steady_clock;

  // What the rest of the Client does when the thread decides.
  struct Hooks {
    std::function<void()> connected;                // a serving state was recorded
    std::function<void(ConnectionState)> announce;  // for the listeners
  };

  // Opens the first session (a failure throws, and no thread starts), makes
  // it current, and starts the thread. Every reference outlives this object;
  // `config` is every session's (its chroot is the namespace).
  SessionThread(const ClientOptions& options, const KeeperConfig& config,
                std::shared_ptr<SessionInbox> inbox, std::shared_ptr<spdlog::logger> log,
                CurrentSession& current, NamespaceKeeper& ns, Hooks hooks);
  ~SessionThread();
  SessionThread(const SessionThread&) = delete;
  SessionThread& operator=(const SessionThread&) = delete;

  // For ~Client, once the Client is closing: ends the thread, then the
  // session for good (the epoch moves on, and its handle is closed even if a
  // caller still holds it). Once only.
  void stop();

 private:
  std::shared_ptr<Keeper> open_keeper(std::uint64_t for_epoch);
  void run();
  std::optional<Clock::time_point> next_deadline() const;
  void on_event(const SessionInbox::Event& event);
  void on_deadline();
  void apply(const Transition& t);
  void end_sessions_for_good();
  void record(ConnectionState s);
  void announce(ConnectionState s);
  void update_timer();
  void replace_session();
  void end_current_session();

  const ClientOptions& options_;
  const KeeperConfig& config_;
  const std::shared_ptr<SessionInbox> inbox_;
  const std::shared_ptr<spdlog::logger> log_;
  CurrentSession& current_;
  NamespaceKeeper& ns_;
  const Hooks hooks_;

  // The thread's own.
  ConnectionStateMachine machine_;
  std::optional<Clock::time_point> timer_;      // suspended too long, when it fires
  std::optional<Clock::time_point> reopen_at_;  // retry of a failed replace_session
  bool current_ended_ = false;  // the epoch moved on, and no session is open for it yet
  std::thread thread_;          // last: starts once the rest exists
};

}  // namespace zkr::detail
