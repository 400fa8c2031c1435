// src/c_keeper.hpp (internal): the Keeper over the ZooKeeper C client
// (libzookeeper-mt). Everything else in zkrecipes sees only zkr::Keeper; this is
// the one class that knows the C client, and its c_keeper*.cpp files (through
// c_keeper_internals.hpp) are the only ones that include <zookeeper/zookeeper.h>.
//
//   auto keeper = zkr::connect_keeper({.hosts = "127.0.0.1:2181"}, on_state);
//
// How it maps the C client (details and reasons in c_keeper*.cpp):
// - Requests: every send_* checks its arguments with keeper_arguments.hpp,
//   as every Keeper does (std::invalid_argument, nothing sent), then calls
//   the matching zoo_a* function with a heap completion that owns the reply
//   handler. The C client answers one session's requests in order, on its
//   completion thread, where the handler runs; a request it refuses at once
//   is answered on the calling thread, once no lock of ours is held.
// - Watches: one heap context per watch, which delivers exactly one WatchEvent.
//   The C client also calls per-path watchers with connecting/connected session
//   events; those are ignored and the watch stays armed. Expiry and auth failure
//   give session_ended.
// - Close (the destructor): first the requests in flight may finish (up to
//   2 s, while connected), then zookeeper_close, then every request still
//   pending is answered with Errc::closing, every watch still armed gets
//   session_ended (a request that failed never armed one), and on_state gets
//   SessionState::closed. Those last three happen on the thread that destroys
//   the keeper, after the C client's threads have stopped: a watcher or
//   on_state must not call this keeper then (it is going away) nor take a lock
//   the destroying thread may hold. So the destructor can block: about 2 s for
//   the drain plus what the C client allows itself (~4.5 s) on a bad link.
//   If the last reference is dropped on the C client's own event thread (say,
//   by a watcher that owned it), the close runs on a detached thread instead,
//   since the C client cannot join the thread it is called from.
// - Nudges: a server hit by ZOOKEEPER-4537 (3.6.0 to 3.8.0) can sit on a
//   commit until some other request reaches it, and the C client, which
//   sends no pings while a request is outstanding, waits 2/3 of the session
//   timeout before it gives up on that server. So a thread of the keeper's
//   own sends one exists("/") on the session when requests are outstanding
//   and nothing has come back for a tenth of the session timeout (200 ms to
//   1 s; details in reply_watchdog.hpp): at most one in flight, none on an
//   idle or healthy session. It is joined in close(), before the handle goes.
// - Logging: the C client's own log lines go to the "zkr" logger; its level
//   (process-wide in the C client) follows that logger's at each connect, and
//   the C client's INFO chatter appears only when the logger is at debug.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "zkr/keeper.hpp"

// The C client's handle (zhandle_t), kept opaque so that this header does not
// drag in <zookeeper/zookeeper.h>.
struct _zhandle;

namespace zkr {

class CKeeper final : public Keeper {
 public:
  // Validates the configuration (std::invalid_argument naming what is wrong)
  // and starts connecting. Throws KeeperError(system_error) if the C client
  // cannot start (for example, no host name resolves).
  CKeeper(const KeeperConfig& config, SessionCallback on_state);
  ~CKeeper() override;
  CKeeper(const CKeeper&) = delete;
  CKeeper& operator=(const CKeeper&) = delete;

  void close() noexcept override;
  std::int64_t session_id() const override;
  std::string session_password() const override;
  SessionState session_state() const override;
  std::chrono::milliseconds session_timeout() const override;
  std::string connected_host() const override;

  // How many nudges this keeper has sent (see above): for tests and logs.
  std::uint64_t nudges_sent() const noexcept;

  // State the C client's threads reach through callback data; it outlives the
  // handle. Defined in c_keeper_internals.hpp.
  struct Shared;

 protected:
  void send_create(std::string path, std::string data, CreateMode mode, CreateOptions options,
                   ReplyHandler<Result<Created>> on_reply) override;
  void send_remove(std::string path, Version version,
                   ReplyHandler<Result<Empty>> on_reply) override;
  void send_exists(std::string path, Watcher watcher, ReplyHandler<Result<Stat>> on_reply) override;
  void send_get(std::string path, Watcher watcher,
                ReplyHandler<Result<NodeData>> on_reply) override;
  void send_set(std::string path, std::string data, Version version,
                ReplyHandler<Result<Stat>> on_reply) override;
  void send_children(std::string path, Watcher watcher,
                     ReplyHandler<Result<Children>> on_reply) override;
  void send_multi(std::vector<Op> ops, ReplyHandler<MultiResult> on_reply) override;
  void send_sync(std::string path, ReplyHandler<Result<Empty>> on_reply) override;

 private:
  // Calls the C client with the handle under a shared lock, or answers
  // closing at once if it was closed; a refusal is answered once the lock is
  // released.
  template <class C, class Call>
  void send_open(std::unique_ptr<C> c, Call&& call);
  // The nudging thread's loop, one nudge, and stopping it (idempotent).
  void watch_replies();
  void nudge();
  void stop_watchdog() noexcept;

  std::shared_ptr<Shared> shared_;
  // Shared while a call uses the handle, exclusive while close() takes it
  // away: the C client frees the handle in zookeeper_close().
  mutable std::shared_mutex handle_mutex_;
  _zhandle* handle_ = nullptr;  // guarded by handle_mutex_; null once closed
  // Runs watch_replies(); joined by the first close().
  std::mutex watchdog_thread_mutex_;
  std::thread watchdog_thread_;  // guarded by watchdog_thread_mutex_
};

}  // namespace zkr
