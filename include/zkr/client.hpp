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
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "zkr/keeper.hpp"
#include "zkr/retry.hpp"

namespace zkr {

// What recipes need to know about the link to the ensemble.
enum class ConnectionState {
  connected,    // first connection of this Client
  suspended,    // link lost; the session may still live: trust nothing new
  reconnected,  // link back: the same session, or a new one after lost (see epoch)
  lost,         // the session expired (or suspended outlasted the session timeout):
                // every ephemeral node of it is gone or going
  read_only,    // connected to a server that has lost its quorum: reads only
};
std::string_view to_string(ConnectionState s) noexcept;

// Builds the Keeper for each new session. Tests pass one that builds in-memory
// keepers; unset means the ZooKeeper C client (connect_keeper).
using KeeperFactory =
    std::function<std::shared_ptr<Keeper>(const KeeperConfig&, SessionCallback)>;

struct ClientOptions {
  std::string connect_string;  // "host:port[,host:port...]", validated
  std::chrono::milliseconds session_timeout{15000};
  // How long a blocking operation waits for a connection before it fails with
  // connection_loss (and the retry policy decides what comes next).
  std::chrono::milliseconds connection_timeout{5000};
  // "" or "app/locks": every path is relative to /app/locks, which is created
  // (persistent) on first connection if missing.
  std::string namespace_path;
  std::optional<DigestAuth> auth;
  // Unset: creator_all_acl() when auth is set, else open_acl_unsafe().
  std::optional<AclList> default_acl;
  // Unset: ExponentialBackoffRetry(100 ms, 5 retries, 2 s).
  std::shared_ptr<const RetryPolicy> retry_policy;
  // Unset: RealSleeper.
  std::shared_ptr<Sleeper> sleeper;
  // Unset: the "zkr" logger (spdlog, level warn).
  std::shared_ptr<spdlog::logger> logger;
  // Raise lost when suspended has lasted a whole session timeout: by then the
  // ensemble has expired the session, though we cannot hear it yet.
  bool lost_when_suspended_too_long = true;
  KeeperFactory keeper_factory;
};

class Client {
 public:
  using Listener = std::function<void(ConnectionState)>;
  using ListenerId = std::uint64_t;

  // Validates the options (std::invalid_argument naming the bad one) and starts
  // connecting in the background.
  explicit Client(ClientOptions options);
  // Closes the session: its ephemeral nodes go at once. Joins the listener thread.
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // True once connected (or reconnected), false if the timeout passed first.
  [[nodiscard]] bool block_until_connected(std::chrono::milliseconds timeout);

  // The current session's Keeper. After lost a new one replaces it; holders of
  // the old one get session_expired from it.
  std::shared_ptr<Keeper> keeper() const;
  // 1 for the first session, +1 for each new session after expiry.
  std::uint64_t session_epoch() const;
  ConnectionState state() const;
  bool is_connected() const;

  // Listeners run on the Client's own thread, in the order states occurred.
  // A listener may call the Client (but should not block for long).
  ListenerId add_listener(Listener listener);
  // After it returns the listener is not running and will not run again
  // (unless called from inside a listener, where it only prevents later calls).
  void remove_listener(ListenerId id);

  // Runs op(keeper) under the retry policy, waiting up to connection_timeout
  // for a connection before each attempt. Only for operations that are safe to
  // repeat (see zkr/retry.hpp).
  template <class Op>
  auto with_retry(Op&& op, RetryOptions options = {}) -> decltype(op(std::declval<Keeper&>())) {
    return call_with_retry(
        retry_policy(), sleeper(),
        [&] {
          auto k = keeper_when_connected();
          return op(*k);
        },
        options);
  }

  // Deletes a node that belongs to session `epoch` (a lock node, a lease) and
  // returns at once. If the reply is lost it keeps trying in the background
  // after each reconnection, until the node is gone or that session has ended
  // (which removes an ephemeral node anyway). With by_name_prefix, `path` is
  // parent + "/" + a name prefix, and the child with that prefix is deleted:
  // for a protected create whose reply was lost, so its name is unknown.
  // Never throws.
  void remove_in_background(std::string path, std::uint64_t epoch,
                            bool by_name_prefix = false) noexcept;

  const RetryPolicy& retry_policy() const;
  Sleeper& sleeper() const;
  spdlog::logger& logger() const;
  const ClientOptions& options() const;

  // The Keeper, once connected within connection_timeout; else throws
  // KeeperError(connection_loss) saying how long it waited and for what hosts.
  std::shared_ptr<Keeper> keeper_when_connected() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace zkr
