// src/connection_state_machine.hpp (internal): which ConnectionState to announce.
//
// The Keeper reports what happens to one handle (connecting, connected,
// expired, ...). Listeners want something coarser and about the Client as a
// whole, which outlives handles: connected once, then suspended / reconnected /
// lost / read_only, never the same state twice in a row. This class is that
// mapping and nothing else: no threads, no clock, no Keeper. The Client feeds
// it the events of its current session (it drops those of sessions it has
// replaced) and the expiry of its "suspended too long" timer, and does what
// each Transition says.
//
//   ConnectionStateMachine m(/*lost_when_suspended_too_long=*/true);
//   m.on_session(SessionState::connected);   // announce connected
//   m.on_session(SessionState::connecting);  // announce suspended; timer_wanted()
//   m.on_suspended_too_long();               // announce lost; open a new session
#pragma once

#include <optional>

#include "zkr/connection_state.hpp"
#include "zkr/types.hpp"

namespace zkr::detail {

struct Transition {
  std::optional<ConnectionState> announce;  // nullopt: nothing for listeners
  // The current session is dead (or must be treated as dead): close its handle
  // and open a new session.
  bool open_new_session = false;
  friend bool operator==(const Transition&, const Transition&) = default;
};

class ConnectionStateMachine {
 public:
  explicit ConnectionStateMachine(bool lost_when_suspended_too_long)
      : lost_when_suspended_too_long_(lost_when_suspended_too_long) {}

  // An event of the current session's handle.
  Transition on_session(SessionState s);
  // The Client's timer fired: suspended has lasted a whole session timeout.
  // By then the ensemble has expired the session, even if we cannot hear it.
  Transition on_suspended_too_long();

  // The last announced state; nullopt before the first connection.
  std::optional<ConnectionState> current() const { return current_; }
  // True in connected, reconnected and read_only: requests can be served.
  bool is_connected() const;
  // The Client should run its timer: suspended with the rule enabled. Once
  // false, a pending timer is stale and must be cancelled.
  bool timer_wanted() const;
  // auth_failed was reported: opening new sessions with the same credentials
  // would fail the same way, so the Client stops trying.
  bool auth_failed() const { return auth_failed_; }

 private:
  Transition on_connected(bool read_only);
  Transition announce(ConnectionState s);

  bool lost_when_suspended_too_long_;
  std::optional<ConnectionState> current_;
  // connected is announced once per Client, on its first read-write connection;
  // every later one is reconnected.
  bool announced_connected_ = false;
  bool auth_failed_ = false;
};

}  // namespace zkr::detail
