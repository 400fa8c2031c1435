// src/reply_watchdog.hpp (internal): when to nudge a session whose server has
// gone silent on it.
//
// Why: ZooKeeper 3.6.0 to 3.8.0 servers have ZOOKEEPER-4537. Their
// CommitProcessor checks its queues outside its lock and then wait()s, so a
// commit that arrives in between is not applied until some other request or
// commit reaches that server. A session whose only outstanding requests wait on
// that commit hears nothing; the C client sends no pings while a request is
// outstanding, so after 2/3 of the session timeout it gives up on the server
// and reconnects elsewhere: a 10 s stall (15 s sessions) and a suspended
// connection. Any request reaching the server wakes its CommitProcessor, so
// CKeeper sends one cheap read on the same session (a "nudge") when requests
// are outstanding and nothing has come back for a while. Fixed upstream in
// 3.8.1 and 3.9.
//
// This class only decides when; no threads, no clock of its own, no Keeper.
// The owner tells it what was sent and what came back, with the time, and
// sends a nudge when take_nudge() says so:
//
//   ReplyWatchdog dog(std::chrono::seconds(1));
//   dog.on_sent(now);                  // a request went out: the clock starts
//   dog.next_deadline();               // now + 1 s: sleep until then
//   if (dog.take_nudge(later)) send(); // nothing back for 1 s: nudge, once
//   dog.on_nudge_answered(later2);     // its answer: silence is measured anew
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>

namespace zkr::detail {

class ReplyWatchdog {
 public:
  using Clock = std::chrono::steady_clock;

  // quiet_limit: how long requests may be outstanding with nothing heard
  // from the server before a nudge is due.
  explicit ReplyWatchdog(std::chrono::milliseconds quiet_limit) : limit_(quiet_limit) {}

  // The limit CKeeper uses for a session timeout; see reply_watchdog.cpp for why.
  static std::chrono::milliseconds quiet_limit_for(std::chrono::milliseconds session_timeout);

  // Changes the limit (say, once the session timeout is negotiated); the
  // silence measured so far counts against the new limit.
  void set_quiet_limit(std::chrono::milliseconds quiet_limit) { limit_ = quiet_limit; }
  std::chrono::milliseconds quiet_limit() const { return limit_; }

  // A request was handed to the client. The silence is measured from the first
  // request sent with nothing outstanding: more sends do not reset it, since
  // what is missing is replies.
  void on_sent(Clock::time_point now);
  // A request was answered (by the server or by the client on its behalf,
  // which it does only on a connection or session event): we heard something.
  void on_reply(Clock::time_point now);
  // A request was taken back without an answer (the client refused it): one
  // less outstanding, but nothing was heard.
  void on_withdrawn();
  // A watch or session event arrived: the server (or the client's view of the
  // connection) moved, so the silence is measured anew.
  void on_event(Clock::time_point now);

  // The time at which a nudge becomes due, if one can: some request is
  // outstanding and no nudge is in flight. A waiter sleeps until then (or
  // until woken), and take_nudge() at or after it returns true.
  std::optional<Clock::time_point> next_deadline() const;
  // True if a nudge is due at `now`; then it counts as in flight, and no other
  // is due until on_nudge_answered().
  [[nodiscard]] bool take_nudge(Clock::time_point now);
  // The nudge came back, with any answer (or could not be sent): at most one
  // is in flight, and the next may come a whole limit after this.
  void on_nudge_answered(Clock::time_point now);

  std::size_t outstanding() const { return outstanding_; }
  bool nudge_in_flight() const { return nudge_in_flight_; }

 private:
  std::chrono::milliseconds limit_;
  std::size_t outstanding_ = 0;
  Clock::time_point quiet_since_{};  // meaningful while outstanding_ > 0
  bool nudge_in_flight_ = false;
};

}  // namespace zkr::detail
