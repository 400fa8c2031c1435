// zkr/client.hpp: the connection manager. One Client owns one ZooKeeper session
// at a time, reports its connection state to listeners, opens a new session
// after expiry, and runs operations under a retry policy.
//
//   zkr::ClientOptions options;
//   options.connect_string = "127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183";
//   zkr::Client client(options);
//   if (!client.block_until_connected(5s)) throw ...;
//   client.add_listener([](zkr::ConnectionState s) { log(zkr::to_string(s)); });
//   auto data = client.with_retry([](zkr::Keeper& k) { return k.get("/config"); });
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>

#include "zkr/connection_state.hpp"
#include "zkr/keeper.hpp"
#include "zkr/log.hpp"
#include "zkr/observer.hpp"
#include "zkr/retry.hpp"

namespace zkr {

// Builds the Keeper for each new session. Tests pass one that builds in-memory
// keepers; unset means the ZooKeeper C client (connect_keeper).
using KeeperFactory = std::function<std::shared_ptr<Keeper>(const KeeperConfig&, SessionCallback)>;

struct ClientOptions {
  std::string connect_string;  // "host:port[,host:port...]", validated
  std::chrono::milliseconds session_timeout{15000};
  // How long a blocking operation waits for a connection before it fails with
  // connection_loss (and the retry policy decides what comes next).
  std::chrono::milliseconds connection_timeout{5000};
  // "" or "app/locks": every path is relative to /app/locks. Before a
  // connection is announced (connected, reconnected, read_only) the Client
  // makes sure the namespace node exists, creating it and its missing parents
  // (persistent, with namespace_acl) if not; it does so again when the node
  // is deleted while connected. If it cannot be made (no_auth on a parent,
  // say), the connection is not announced, block_until_connected() returns
  // false at once, and keeper_when_connected(), with_retry() and every lock
  // throw at once KeeperError with the server's code (no_auth, ...), the
  // namespace path, and a message naming both; the Client tries again with a
  // growing pause (1 s to 30 s) while the session lasts, and on each new
  // connection, and the error goes once it succeeds. If only the link fails
  // meanwhile, callers wait for a connection as usual.
  std::string namespace_path;
  // The ACL of the namespace node and of the parents it creates. Unset:
  // open_acl_unsafe(), whatever default_acl says: parents outside the
  // namespace are shared with other applications and identities (two apps
  // with namespaces /shared/a and /shared/b share /shared), and a creator-only
  // parent would lock them out. Nodes inside the namespace get default_acl.
  std::optional<AclList> namespace_acl;
  std::optional<DigestAuth> auth;
  // Unset: creator_all_acl() when auth is set, else open_acl_unsafe().
  std::optional<AclList> default_acl;
  // Unset: ExponentialBackoffRetry(100 ms, 5 retries, 2 s).
  std::shared_ptr<const RetryPolicy> retry_policy;
  // Unset: RealSleeper.
  std::shared_ptr<Sleeper> sleeper;
  // Where the library's log lines go, and from what level (zkr/log.hpp).
  Logging logging;
  // Raise lost when suspended has lasted a whole session timeout: by then the
  // ensemble has expired the session, though we cannot hear it yet.
  bool lost_when_suspended_too_long = true;
  KeeperFactory keeper_factory;
  // Told of waits, grants, holds, losses, retries, connection states and
  // requests (zkr/observer.hpp), on library threads. Unset: nobody, at the
  // cost of a null check.
  std::shared_ptr<Observer> observer;
};

namespace detail {
class CallbackThread;
class ClientService;
class WorkerThread;  // the timer thread (src/timer_thread.hpp)

class ClientLifeline;
struct ClientInternals;
}  // namespace detail

class Client {
 public:
  using Listener = std::function<void(ConnectionState)>;
  using ListenerId = std::uint64_t;

  // Validates the options (std::invalid_argument naming the bad one) and starts
  // connecting in the background.
  explicit Client(ClientOptions options);
  // Closes the session: its ephemeral nodes go at once, lock nodes included,
  // even if someone still holds the Keeper. Locks may outlive their Client:
  // an acquire waiting in another thread fails with closing (naming the lock)
  // and ~Client waits for it to return; afterwards a lock's release() and
  // destructor only clear its own state (the session took its nodes), and its
  // acquire throws closing. Joins the Client's threads.
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // True once connected (or reconnected), false if the timeout passed first.
  [[nodiscard]] bool block_until_connected(std::chrono::milliseconds timeout);

  // The current session's Keeper. After lost a new one replaces it; holders of
  // the old one get session_expired from it.
  std::shared_ptr<Keeper> keeper() const;
  // 1 for the first session, +1 each time a session ends (expired, or given
  // up after suspended outlasted the session timeout), the moment it ends,
  // before the next one is opened and whether or not opening it succeeds.
  // Also +1, with no new session, when the Client's sessions end for good
  // (the ensemble refused our credentials, or ~Client began): `lost` always
  // comes with a new epoch, and whoever waits for a session after the old one
  // stops waiting and hears why from keeper_when_connected().
  std::uint64_t session_epoch() const;
  ConnectionState state() const;
  bool is_connected() const;

  // Listeners run on the Client's own thread, in the order states occurred.
  // A listener may call the Client (but should not block for long: every
  // other listener waits, the lost signals of held locks included).
  // Locks in a listener: release() works (a NonReentrantMutex's; an InterProcessMutex is
  // only released by the thread that acquired it, never this one), and every
  // acquire form throws std::logic_error at once, sending nothing: waiting
  // for a lock there would hold up the very states the wait needs (and those
  // that tell other holders their lock is lost). Hand that work to a thread
  // of your own. Destroying the Client inside a listener is not allowed.
  ListenerId add_listener(Listener listener);
  // After it returns the listener is not running and will not run again
  // (unless called from inside a listener, where it only prevents later calls).
  void remove_listener(ListenerId id);

  // Runs op(keeper) under the retry policy, waiting up to connection_timeout
  // for a connection before each attempt. Only for operations that are safe to
  // repeat (see zkr/retry.hpp).
  template <class Op>
  auto with_retry(Op&& op, RetryOptions options = {}) -> decltype(op(std::declval<Keeper&>())) {
    // call_with_retry's loop, with each retry told to the observer.
    RetryBudget budget(retry_policy(), sleeper());
    for (;;) {
      try {
        auto k = keeper_when_connected();
        return op(*k);
      } catch (const KeeperError& e) {
        if (!detail::should_retry(e.errc(), options)) throw;
        const auto step = budget.next();
        if (step.verdict != RetryBudget::Verdict::retry) throw;
        if (observed()) retrying(budget.retries(), step.delay);
        budget.sleep(step);
      }
    }
  }

  const RetryPolicy& retry_policy() const;
  Sleeper& sleeper() const;
  const ClientOptions& options() const;

  // The Keeper, once connected within connection_timeout; else throws
  // KeeperError(connection_loss) saying how long it waited and for what hosts,
  // or at once auth_failed (the ensemble refused the credentials: final) or
  // closing (the Client is being destroyed).
  std::shared_ptr<Keeper> keeper_when_connected() const;
  // The same, but waits no later than `deadline` either: for timed acquires.
  std::shared_ptr<Keeper> keeper_when_connected(
      std::chrono::steady_clock::time_point deadline) const;

  // The connected session's Keeper and its epoch, read together (a session
  // change between two separate reads would pair a Keeper with the wrong
  // epoch). Waits and throws as keeper_when_connected(deadline); a stop of
  // `stop` ends the wait too, as connection_loss.
  struct Session {
    std::shared_ptr<Keeper> keeper;
    std::uint64_t epoch = 0;
  };
  Session session_when_connected(std::optional<std::chrono::steady_clock::time_point> deadline = {},
                                 std::stop_token stop = {}) const;

 private:
  // What recipes need of a Client and users do not: src/client_internals.hpp.
  friend struct detail::ClientInternals;
  void remove_in_background(std::string path, std::uint64_t epoch, bool by_name_prefix,
                            std::int64_t czxid) noexcept;
  using ChangeCallback = std::shared_ptr<std::function<void()>>;
  std::optional<Session> session_now(const ChangeCallback& on_change) const;
  bool on_listener_thread() const noexcept;
  std::shared_ptr<detail::CallbackThread> callback_thread() const noexcept;
  std::shared_ptr<detail::ClientLifeline> lifeline() const noexcept;
  std::shared_ptr<detail::ClientService> service(
      const void* key, const std::function<std::shared_ptr<detail::ClientService>()>& make) const;
  std::pair<Session, bool> background_session() const;
  std::shared_ptr<detail::WorkerThread> timers() const noexcept;
  std::uint64_t suspensions() const;
  bool observed() const noexcept;
  void retrying(int retry, std::chrono::milliseconds delay) const noexcept;

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace zkr
