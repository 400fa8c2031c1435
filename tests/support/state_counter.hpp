// Hears the connection states a Client announces, so that a test can cause a
// fault and wait until it is announced (a suspension, an expiry), or wait
// for the Client to be back.
//
//   auto states = std::make_shared<test::StateCounter>(10s);
//   client.add_listener([states](ConnectionState s) { states->on(s); });
//   ASSERT_TRUE(states->announced_after(ConnectionState::lost, [&] { expire(session); }));
//
// Add its listener first: the Client calls every listener with one state
// before any hears the next, so once this one has heard the Client is back
// (caught_up), every later listener has dealt with the suspension before it.
// The Client's own state (block_until_connected) runs ahead of its
// listeners, and a check made on it alone may beat a listener's reaction.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>

#include "zkr/connection_state.hpp"

namespace zkr::test {

class StateCounter {
 public:
  // bound: how long each wait waits at most.
  explicit StateCounter(std::chrono::milliseconds bound) : bound_(bound) {}

  // The listener: records s and wakes the waiters.
  void on(ConnectionState s);
  // Runs `cause` (a fault: the link dropped, the session expired), then
  // true once s was announced after it; false at the bound.
  [[nodiscard]] bool announced_after(ConnectionState s, const std::function<void()>& cause);
  // True once the last state heard is connected or reconnected (or none was
  // heard: no suspension either); false at the bound.
  [[nodiscard]] bool caught_up();

 private:
  // How many times s was announced so far.
  int count(ConnectionState s);
  // True once s was announced more than `than` times; false at the bound.
  bool wait_more(ConnectionState s, int than);

  const std::chrono::milliseconds bound_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<ConnectionState, int> counts_;  // guarded by mutex_
  std::optional<ConnectionState> last_;    // guarded by mutex_
};

}  // namespace zkr::test
