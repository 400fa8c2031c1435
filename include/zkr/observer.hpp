// zkr/observer.hpp: what a service may watch of its locks, as events: waits
// and how they ended, grants (and hand-offs), holds and how they ended,
// losses by reason, retries, connection states, and the requests each recipe
// sends. Counters and histograms are built over it (the zkrecipes-prometheus
// component, zkr/prometheus.hpp, is one); the library keeps none itself.
//
//   struct Waits : zkr::Observer {
//     std::atomic<int> timed_out{0};
//     void wait_ended(const zkr::WaitEnded& e) override {
//       if (e.outcome == zkr::WaitOutcome::timed_out) ++timed_out;
//     }
//   };
//   zkr::ClientOptions options{.connect_string = "127.0.0.1:2181"};
//   options.observer = std::make_shared<Waits>();
//   zkr::Client client(options);
//
// Unset (the default), an event costs one null check where it happens.
//
// The methods are called on library threads (the ZooKeeper event thread, the
// timer thread, the listener thread, a thread blocked in an acquire), never
// under a lock a caller of the library could be waiting for, and possibly on
// several threads at once: keep them cheap and thread-safe, and do not call
// into the Client from them. One that throws is logged and ignored.
#pragma once

#include <chrono>
#include <string_view>

#include "zkr/connection_state.hpp"
#include "zkr/lost_reason.hpp"

namespace zkr {

// Which recipe's queue an event is about. A semaphore's internal mutex
// (<path>/locks) and a leader selector's mutex are `mutex`; a semaphore's
// leases are `semaphore`. `client`: the Client's own retried calls
// (Client::with_retry), which no recipe makes.
enum class Recipe { mutex, read, write, semaphore, latch, client };
std::string_view to_string(Recipe recipe) noexcept;

// How a wait for a grant ended.
enum class WaitOutcome {
  granted,
  timed_out,  // the deadline passed first (try_acquire_for, ...)
  cancelled,  // a stop token was stopped first
  failed,     // an error the retry policy would not retry; the acquire threw
};
std::string_view to_string(WaitOutcome outcome) noexcept;

// How a hold ended.
enum class HoldOutcome {
  released,  // given back by its holder
  lost,      // no longer safe (see LostReason); the release after it is not counted again
};
std::string_view to_string(HoldOutcome outcome) noexcept;

// The kind of a request sent to ZooKeeper.
enum class Request { create, remove, get, exists, children };
std::string_view to_string(Request request) noexcept;

// `path` in these events is the lock's directory (the queue), valid only
// during the call.
struct WaitEnded {
  Recipe recipe;
  std::string_view path;
  WaitOutcome outcome;
  std::chrono::nanoseconds duration;  // from the call to the outcome
};

struct Granted {
  Recipe recipe;
  std::string_view path;
  // Granted after waiting for a node before ours to go (another holder
  // handed it on), rather than at once on our first listing.
  bool hand_off;
};

struct HoldEnded {
  Recipe recipe;
  std::string_view path;
  HoldOutcome outcome;
  std::chrono::nanoseconds duration;  // from the grant to the release or the loss
};

struct Lost {
  Recipe recipe;
  std::string_view path;
  LostReason reason;  // never none
};

// A retry decided by the retry policy: a lock attempt that resumes after a
// link error, an acquire that queues again in a new session, or a call of
// Client::with_retry (Recipe::client, empty path).
struct Retried {
  Recipe recipe;
  std::string_view path;
  int retry;                        // 1 for the first retry of that operation
  std::chrono::milliseconds delay;  // the policy's pause before it
};

struct RequestSent {
  Recipe recipe;
  Request request;
};

class Observer {
 public:
  virtual ~Observer() = default;
  virtual void wait_ended(const WaitEnded& /*event*/) {}
  virtual void granted(const Granted& /*event*/) {}
  virtual void hold_ended(const HoldEnded& /*event*/) {}
  virtual void lost(const Lost& /*event*/) {}
  virtual void retried(const Retried& /*event*/) {}
  // Each state as the Client's listeners get it, on the listener thread.
  virtual void connection_state(ConnectionState /*state*/) {}
  virtual void request_sent(const RequestSent& /*event*/) {}
};

}  // namespace zkr
