// zkr/keeper.hpp: the seam between zkrecipes and ZooKeeper.
//
// A Keeper is one ZooKeeper session. Its core is asynchronous: every call sends
// its request at once, so several requests can be in flight on one session,
// and ZooKeeper answers them in the order they were sent. Each request comes
// in two forms: one returns a future, the other takes a handler that the
// reply is handed to (no thread waits for it). Blocking forms wait with a
// deadline (by default the session timeout) and never longer.
//
// Arguments are checked before anything is sent: a bad path throws
// std::invalid_argument from the call itself.
//
//   auto keeper = zkr::connect_keeper({.hosts = "127.0.0.1:2181"}, nullptr);
//   auto created = keeper->async_create("/a", "x", zkr::CreateMode::ephemeral);
//   auto listed  = keeper->async_children("/");        // pipelined behind the create
//   created.get().value(); listed.get().value();
//   keeper->async_exists("/a", {}, [](zkr::Result<zkr::Stat> r) { /* on the event thread */ });
//
// Recipes use this interface only; the one implementation over the ZooKeeper C
// client lives in src/, and tests add an in-memory one.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zkr/deadline.hpp"
#include "zkr/log.hpp"
#include "zkr/types.hpp"

namespace zkr {

using OptionalTimeout = std::optional<std::chrono::milliseconds>;

// Takes one reply. It is called exactly once, on the Keeper's event thread,
// after the replies to the session's earlier requests and after the watch
// events that came before it; except that a request refused before it was
// sent (the Keeper is closed, say) may be answered on the calling thread
// before the call returns, so a handler must not need a lock its caller
// holds. Like a Watcher it must not block nor call the blocking forms; it
// may send further requests. It must not throw: nothing could catch it.
template <class T>
using ReplyHandler = std::function<void(T)>;

class Keeper {
 public:
  virtual ~Keeper() = default;

  // ---- Asynchronous core. Every request is answered: with the result, or
  // ---- with closing / session_expired / connection_loss when the session ends.
  // ---- Each takes a handler, or returns a future (a handler that sets it).

  std::future<Result<Created>> async_create(std::string path, std::string data, CreateMode mode,
                                            CreateOptions options = {});
  void async_create(std::string path, std::string data, CreateMode mode, CreateOptions options,
                    ReplyHandler<Result<Created>> on_reply) {
    send_create(std::move(path), std::move(data), mode, std::move(options), std::move(on_reply));
  }
  std::future<Result<Empty>> async_remove(std::string path, Version version = kAnyVersion);
  void async_remove(std::string path, Version version, ReplyHandler<Result<Empty>> on_reply) {
    send_remove(std::move(path), version, std::move(on_reply));
  }
  // no_node when absent; the watch (if given) is set either way and fires on create.
  std::future<Result<Stat>> async_exists(std::string path, Watcher watcher = {});
  void async_exists(std::string path, Watcher watcher, ReplyHandler<Result<Stat>> on_reply) {
    send_exists(std::move(path), std::move(watcher), std::move(on_reply));
  }
  std::future<Result<NodeData>> async_get(std::string path, Watcher watcher = {});
  void async_get(std::string path, Watcher watcher, ReplyHandler<Result<NodeData>> on_reply) {
    send_get(std::move(path), std::move(watcher), std::move(on_reply));
  }
  std::future<Result<Stat>> async_set(std::string path, std::string data,
                                      Version version = kAnyVersion);
  void async_set(std::string path, std::string data, Version version,
                 ReplyHandler<Result<Stat>> on_reply) {
    send_set(std::move(path), std::move(data), version, std::move(on_reply));
  }
  std::future<Result<Children>> async_children(std::string path, Watcher watcher = {});
  void async_children(std::string path, Watcher watcher, ReplyHandler<Result<Children>> on_reply) {
    send_children(std::move(path), std::move(watcher), std::move(on_reply));
  }
  // Not queued while the session is reconnecting: it fails at once with
  // connection_loss, not sent (the C client cannot build a multi safely on a
  // handle that a reconnection may find expired).
  std::future<MultiResult> async_multi(std::vector<Op> ops);
  void async_multi(std::vector<Op> ops, ReplyHandler<MultiResult> on_reply) {
    send_multi(std::move(ops), std::move(on_reply));
  }
  // Brings the connected server up to date with the leader for this path.
  std::future<Result<Empty>> async_sync(std::string path);
  void async_sync(std::string path, ReplyHandler<Result<Empty>> on_reply) {
    send_sync(std::move(path), std::move(on_reply));
  }

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
  // (persistent or container) holding `data`; existing ones are left alone.
  // (zkr::create_marked_parents makes them this library's directories.)
  void create_parents(const std::string& path, CreateMode mode = CreateMode::persistent,
                      OptionalTimeout timeout = {}, std::string_view data = {});

 protected:
  // What an implementation sends; the async_* forms above all come here.
  virtual void send_create(std::string path, std::string data, CreateMode mode,
                           CreateOptions options, ReplyHandler<Result<Created>> on_reply) = 0;
  virtual void send_remove(std::string path, Version version,
                           ReplyHandler<Result<Empty>> on_reply) = 0;
  virtual void send_exists(std::string path, Watcher watcher,
                           ReplyHandler<Result<Stat>> on_reply) = 0;
  virtual void send_get(std::string path, Watcher watcher,
                        ReplyHandler<Result<NodeData>> on_reply) = 0;
  virtual void send_set(std::string path, std::string data, Version version,
                        ReplyHandler<Result<Stat>> on_reply) = 0;
  virtual void send_children(std::string path, Watcher watcher,
                             ReplyHandler<Result<Children>> on_reply) = 0;
  virtual void send_multi(std::vector<Op> ops, ReplyHandler<MultiResult> on_reply) = 0;
  virtual void send_sync(std::string path, ReplyHandler<Result<Empty>> on_reply) = 0;
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
  return await_reply(std::move(reply), zkr::deadline_after(timeout), std::move(path));
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
  Logging logging;  // zkr/log.hpp
};

// Opens a session (connecting goes on in the background; requests queue until
// it is up). on_state runs on the C client's event thread and must not block.
// Throws std::invalid_argument for a bad host list or chroot.
std::shared_ptr<Keeper> connect_keeper(const KeeperConfig& config, SessionCallback on_state);

// Throws std::invalid_argument unless hosts is "host:port[,host:port...]" with
// ports 1..65535 and no chroot suffix.
void validate_hosts(std::string_view hosts);

}  // namespace zkr
