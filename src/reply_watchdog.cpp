// When a silent session gets a nudge; the why is in reply_watchdog.hpp.
#include "reply_watchdog.hpp"

#include <algorithm>

namespace zkr::detail {

// A tenth of the session timeout, between 200 ms and 1 s:
// - well inside the 2/3 of the session timeout after which the C client gives
//   up on a silent server, so that a nudge, and if needed a second and a third,
//   land before the connection is dropped and the session suspended;
// - at least 200 ms, so that a healthy server's slow moments (an fsync of tens
//   of milliseconds, a burst of writes ahead of ours) rarely earn a nudge,
//   though one would be harmless: a read of "/" is the cheapest request there is;
// - at most 1 s, so that with long session timeouts (60 s) a stuck commit
//   costs about a second, not the six a tenth would allow.
std::chrono::milliseconds ReplyWatchdog::quiet_limit_for(
    std::chrono::milliseconds session_timeout) {
  using std::chrono::milliseconds;
  return std::clamp(session_timeout / 10, milliseconds(200), milliseconds(1000));
}

void ReplyWatchdog::on_sent(Clock::time_point now) {
  if (outstanding_++ == 0) quiet_since_ = now;
}

void ReplyWatchdog::on_reply(Clock::time_point now) {
  if (outstanding_ > 0) --outstanding_;
  quiet_since_ = now;
}

void ReplyWatchdog::on_withdrawn() {
  if (outstanding_ > 0) --outstanding_;
}

void ReplyWatchdog::on_event(Clock::time_point now) { quiet_since_ = now; }

std::optional<ReplyWatchdog::Clock::time_point> ReplyWatchdog::next_deadline() const {
  if (outstanding_ == 0 || nudge_in_flight_) return std::nullopt;
  return quiet_since_ + limit_;
}

bool ReplyWatchdog::take_nudge(Clock::time_point now) {
  const auto deadline = next_deadline();
  if (!deadline || now < *deadline) return false;
  nudge_in_flight_ = true;
  return true;
}

void ReplyWatchdog::on_nudge_answered(Clock::time_point now) {
  nudge_in_flight_ = false;
  quiet_since_ = now;
}

}  // namespace zkr::detail
