// src/current_session.hpp (internal): the session a Client serves now, what
// is known of its connection, and the waits for one that serves.
//
// One lock keeps the keeper, its epoch and the connection's state together,
// so that a caller never pairs a keeper with another session's epoch. Only
// the session thread (session_thread.hpp) and the Client's constructor and
// destructor write it; any thread reads and waits on it. Each change wakes
// the blocking waits (keeper_when_connected, with_retry) and calls back the
// acquires that park no thread (now()).
//
//   const auto [keeper, epoch] = current.wait(deadline, stop);  // or throws
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "background_remover.hpp"
#include "zkr/client.hpp"

namespace zkr::detail {

class NamespaceKeeper;

class CurrentSession {
 public:
  using Clock = std::chrono::steady_clock;

  // `ns` says why no connection is announced when the namespace cannot be
  // made; it outlives this object.
  CurrentSession(std::string connect_string, std::chrono::milliseconds connection_timeout,
                 const NamespaceKeeper& ns);
  CurrentSession(const CurrentSession&) = delete;
  CurrentSession& operator=(const CurrentSession&) = delete;

  // ---- Writers (the session thread, and the Client's constructor and destructor).

  // The first session, epoch 1.
  void begin(std::shared_ptr<Keeper> first);
  // The current session is over: the epoch moves on. Returns its keeper,
  // which stays current (its calls fail with closing once closed) until
  // replace().
  std::shared_ptr<Keeper> end_epoch();
  // Makes `fresh` current, for the epoch as it is; returns the one replaced,
  // for the caller to drop with no lock of ours held.
  [[nodiscard]] std::shared_ptr<Keeper> replace(std::shared_ptr<Keeper> fresh);
  // A state announced: recorded before listeners hear it. Wakes the waits.
  void record(ConnectionState s, bool connected, bool auth_failed);
  // The Client is closing: every wait ends, with closing. Wakes the waits.
  void close();
  // For the Client's destructor: the last keeper, taken out.
  std::shared_ptr<Keeper> take_keeper();
  // After anything a wait depends on changed, here or in the namespace (no
  // lock of ours held): wakes the blocking waits, and calls now()'s callers
  // back.
  void changed();

  // ---- Readers (any thread).

  std::shared_ptr<Keeper> keeper() const;
  std::uint64_t epoch() const;
  // Before the first connection nothing may be trusted yet: that is suspended.
  ConnectionState state() const;
  bool is_connected() const;
  // How many times suspended was recorded.
  std::uint64_t suspensions() const;
  // What background work runs on: the session now, and whether it serves.
  BackgroundRemover::Session background() const;

  // The connected session's keeper and epoch, read together. Waits up to the
  // connection timeout, or until `deadline` if that is sooner, or a stop;
  // then throws connection_loss, or at once what final_error() says.
  Client::Session wait(std::optional<Clock::time_point> deadline = {},
                       std::stop_token stop = {}) const;
  // wait() without the wait: the session if it serves now, else nullopt, and
  // *on_change (unless null; kept by weak reference) is called at the next
  // change. Throws as wait() does when no session will serve.
  std::optional<Client::Session> now(const std::shared_ptr<std::function<void()>>& on_change) const;
  // True once connected within `timeout`; false at the timeout, or at once
  // when no session will serve.
  bool block_until_connected(std::chrono::milliseconds timeout) const;

 private:
  std::optional<KeeperError> final_error(const std::optional<KeeperError>& ns_error) const;

  const std::string connect_string_;
  const std::chrono::milliseconds connection_timeout_;
  const NamespaceKeeper& ns_;

  mutable std::mutex mutex_;
  // connected, auth_failed or closing changed; _any: a wait may also end on a stop_token
  mutable std::condition_variable_any connected_cv_;
  std::shared_ptr<Keeper> keeper_;        // guarded by mutex_
  std::uint64_t epoch_ = 0;               // guarded by mutex_
  std::optional<ConnectionState> state_;  // guarded by mutex_; nullopt before connected
  bool connected_ = false;                // guarded by mutex_
  bool auth_failed_ = false;              // guarded by mutex_
  bool closing_ = false;                  // guarded by mutex_
  std::uint64_t changes_ = 0;             // guarded by mutex_: calls of changed()
  std::uint64_t suspensions_ = 0;         // guarded by mutex_: suspended recorded so far
  // now()'s callers that found no session; a caller drops its callback to
  // cancel.
  mutable std::vector<std::weak_ptr<std::function<void()>>> change_waiters_;  // guarded
};

}  // namespace zkr::detail
