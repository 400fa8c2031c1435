#include "connection_state_machine.hpp"

namespace zkr::detail {

Transition ConnectionStateMachine::on_session(SessionState s) {
  switch (s) {
    case SessionState::connecting:
      // The C client reports connecting while it looks for a server: at start
      // (nothing to say yet), after a lost link (suspended), and for the new
      // session that follows lost (still lost until it connects).
      if (is_connected()) return announce(ConnectionState::suspended);
      return {};
    case SessionState::connected: return on_connected(false);
    case SessionState::connected_read_only: return on_connected(true);
    case SessionState::expired: {
      // Expired is final for this handle; even before a first connection
      // (a session joined by id) the Client needs a new one.
      Transition t = announce(ConnectionState::lost);
      t.open_new_session = true;
      return t;
    }
    case SessionState::auth_failed:
      // Final for this handle too, but a new session would fail the same way:
      // report lost and stay there.
      auth_failed_ = true;
      return announce(ConnectionState::lost);
    case SessionState::closed:
      // Only the Client closes handles, and it has replaced or is destroying
      // the one closed: nothing has happened that listeners do not know.
      return {};
  }
  return {};
}

Transition ConnectionStateMachine::on_connected(bool read_only) {
  if (read_only) return announce(ConnectionState::read_only);
  if (!announced_connected_) {
    announced_connected_ = true;
    return announce(ConnectionState::connected);
  }
  // Back from suspended (same session), lost (new session) or read_only.
  return announce(ConnectionState::reconnected);
}

Transition ConnectionStateMachine::on_suspended_too_long() {
  // A timer that fired after the link came back (or the rule being off) is
  // stale: the Client could not cancel it in time.
  if (!timer_wanted()) return {};
  Transition t = announce(ConnectionState::lost);
  t.open_new_session = true;
  return t;
}

bool ConnectionStateMachine::is_connected() const {
  return current_ == ConnectionState::connected || current_ == ConnectionState::reconnected ||
         current_ == ConnectionState::read_only;
}

bool ConnectionStateMachine::timer_wanted() const {
  return lost_when_suspended_too_long_ && current_ == ConnectionState::suspended;
}

Transition ConnectionStateMachine::announce(ConnectionState s) {
  // connected and reconnected are the same condition said twice: a second
  // "connected" event of one handle (the C client repeats it) is no news.
  const bool was_connected =
      current_ == ConnectionState::connected || current_ == ConnectionState::reconnected;
  const bool now_connected = s == ConnectionState::connected || s == ConnectionState::reconnected;
  if (current_ == s || (was_connected && now_connected)) return {};
  current_ = s;
  return {s, false};
}

}  // namespace zkr::detail
