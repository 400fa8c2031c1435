// zkr/keeper.hpp: the seam between zkrecipes and ZooKeeper.
//
// A Keeper is one ZooKeeper session. Its core is asynchronous: every call sends
// its request at once and returns a future, so several requests can be in
// flight on one session, and ZooKeeper answers them in the order they were sent.
// Blocking forms wait with a deadline (by default the session timeout) and
// never longer.
//
// Arguments are checked before anything is sent: a bad path throws
// std::invalid_argument from the call itself.
//
//   auto keeper = zkr::connect_keeper({.hosts = "127.0.0.1:2181"}, nullptr);
//   auto created = keeper->async_create("/a", "x", zkr::CreateMode::ephemeral);
//   auto listed  = keeper->async_children("/");        // pipelined behind the create
//   created.get().value(); listed.get().value();
//
// Recipes use this interface only; the one implementation over the ZooKeeper C
// client lives in src/, and tests add an in-memory one.
#pragma once

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zkr/types.hpp"

namespace spdlog {
class logger;
}

namespace zkr {

using OptionalTimeout = std::optional<std::chrono::milliseconds>;

class Keeper {
 public:
  virtual ~Keeper() = default;

  // ---- Asynchronous core. Futures are always fulfilled: with the result, or
  // ---- with closing / session_expired / connection_loss when the session ends.

  virtual std::future<Result<Created>> async_create(std::string path, std::string data,
                                                    CreateMode mode,
                                                    CreateOptions options = {}) = 0;
  virtual std::future<Result<Empty>> async_remove(std::string path,
                                                  Version version = kAnyVersion) = 0;
  // no_node when absent; the watch (if given) is set either way and fires on create.
  virtual std::future<Result<Stat>> async_exists(std::string path, Watcher watcher = {}) = 0;
  virtual std::future<Result<NodeData>> async_get(std::string path, Watcher watcher = {}) = 0;
  virtual std::future<Result<Stat>> async_set(std::string path, std::string data,
                                              Version version = kAnyVersion) = 0;
  virtual std::future<Result<Children>> async_children(std::string path, Watcher watcher = {}) = 0;
  // Not queued while the session is reconnecting: it fails at once with
  // connection_loss, not sent (the C client cannot build a multi safely on a
  // handle that a reconnection may find expired).
  virtual std::future<MultiResult> async_multi(std::vector<Op> ops) = 0;
  // Brings the connected server up to date with the leader for this path.
  virtual std::future<Result<Empty>> async_sync(std::string path) = 0;

  // ---- Session.
  // Ends the session now: the server deletes its ephemeral nodes, pending
  // futures get closing, armed watches get session_ended, and later calls
  // fail with closing. Idempotent; the destructor does it too. A Client calls
  // it on a session it gave up on, so that one still held by someone cannot
  // come back to life holding ephemeral nodes.
  virtual void close() noexcept = 0;
  virtual std::int64_t session_id() const = 0;       // 0 until first connected
  virtual std::string session_password() const = 0;  // for tests that expire a session
  virtual SessionState session_state() const = 0;
  virtual std::chrono::milliseconds session_timeout() const = 0;  // negotiated
  // "127.0.0.1:2181" of the server this session is connected to, "" if none.
  virtual std::string connected_host() const = 0;
  // Deadline of the blocking forms when none is given.
  virtual std::chrono::milliseconds default_timeout() const { return session_timeout(); }

  // ---- Blocking forms. The plain ones throw KeeperError; try_* return every
  // ---- ZooKeeper error as a Result. A wait past the timeout is operation_timeout.

  Created create(const std::string& path, std::string data = {},
                 CreateMode mode = CreateMode::persistent, CreateOptions options = {},
                 OptionalTimeout timeout = {});
  Result<Created> try_create(const std::string& path, std::string data = {},
                             CreateMode mode = CreateMode::persistent, CreateOptions options = {},
                             OptionalTimeout timeout = {});
  void remove(const std::string& path, Version version = kAnyVersion, OptionalTimeout timeout = {});
  Result<Empty> try_remove(const std::string& path, Version version = kAnyVersion,
                           OptionalTimeout timeout = {});
  // nullopt when the node does not exist.
  std::optional<Stat> exists(const std::string& path, Watcher watcher = {},
                             OptionalTimeout timeout = {});
  NodeData get(const std::string& path, Watcher watcher = {}, OptionalTimeout timeout = {});
  Result<NodeData> try_get(const std::string& path, Watcher watcher = {},
                           OptionalTimeout timeout = {});
  Stat set(const std::string& path, std::string data, Version version = kAnyVersion,
           OptionalTimeout timeout = {});
  Result<Stat> try_set(const std::string& path, std::string data, Version version = kAnyVersion,
                       OptionalTimeout timeout = {});
  Children children(const std::string& path, Watcher watcher = {}, OptionalTimeout timeout = {});
  Result<Children> try_children(const std::string& path, Watcher watcher = {},
                                OptionalTimeout timeout = {});
  // Throws KeeperError naming the path of the operation that failed.
  MultiResult multi(std::vector<Op> ops, OptionalTimeout timeout = {});
  MultiResult try_multi(std::vector<Op> ops, OptionalTimeout timeout = {});
  void sync(const std::string& path, OptionalTimeout timeout = {});

  // Creates every missing ancestor of path (not path itself) as `mode`
  // (persistent or container); existing ones are left alone.
  void create_parents(const std::string& path, CreateMode mode = CreateMode::persistent,
                      OptionalTimeout timeout = {});
};

// The reply of an asynchronous call, or operation_timeout (naming `path`) if
// it has not come by `deadline`. The request stays in flight: it may still be
// applied, and its late reply is dropped with the future. The one wait with a
// deadline that the library and its tools use:
//   auto listed = zkr::await_reply(keeper->async_children("/a"), 2s, "/a");
template <class T>
Result<T> await_reply(std::future<Result<T>> reply, std::chrono::steady_clock::time_point deadline,
                      std::string path = {}) {
  if (reply.wait_until(deadline) != std::future_status::ready)
    return Result<T>(Errc::operation_timeout, std::move(path));
  return reply.get();
}
template <class T>
Result<T> await_reply(std::future<Result<T>> reply, std::chrono::milliseconds timeout,
                      std::string path = {}) {
  return await_reply(std::move(reply), std::chrono::steady_clock::now() + timeout, std::move(path));
}

struct DigestAuth {
  std::string user;
  std::string password;
};

// How to open a session with the ZooKeeper C client.
struct KeeperConfig {
  std::string hosts;   // "127.0.0.1:2181,127.0.0.1:2182" (validated)
  std::string chroot;  // "" or "/app": every path is relative to it; it must exist
  std::chrono::milliseconds session_timeout{15000};
  std::optional<DigestAuth> auth;
  AclList default_acl = open_acl_unsafe();
  std::int64_t session_id = 0;  // with password: join an existing session
  std::string session_password;
  std::shared_ptr<spdlog::logger> logger;  // unset: the "zkr" logger
};

// Opens a session (connecting goes on in the background; requests queue until
// it is up). on_state runs on the C client's event thread and must not block.
// Throws std::invalid_argument for a bad host list or chroot.
std::shared_ptr<Keeper> connect_keeper(const KeeperConfig& config, SessionCallback on_state);

// Throws std::invalid_argument unless hosts is "host:port[,host:port...]" with
// ports 1..65535 and no chroot suffix.
void validate_hosts(std::string_view hosts);

}  // namespace zkr
