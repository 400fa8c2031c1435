// The Keeper over the ZooKeeper C client (libzookeeper-mt), and connect_keeper:
// the keeper's life, from the handle's creation to the close protocol, and
// what it reads of its session. The rest of CKeeper, and the facts about the
// C client every piece relies on: c_keeper_internals.hpp; the callbacks the
// C client's threads run (c_keeper_callbacks.cpp), sending
// (c_keeper_send.cpp), the multi (c_keeper_multi.cpp), nudges
// (c_keeper_nudge.cpp). Elsewhere: when to nudge (reply_watchdog.cpp), the
// argument checks and the host grammar, shared with the other Keepers
// (keeper_arguments.cpp), the error table checked against the C client's
// (c_error_codes.cpp), and its log bridge (c_client_log.cpp).
#include "c_keeper.hpp"

#include <cerrno>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <utility>

#include "c_client_log.hpp"
#include "c_keeper_internals.hpp"
#include "keeper_arguments.hpp"
#include "log.hpp"

namespace zkr {
namespace ckeeper {
namespace {

// ---- Hosts.

// The host list as the C client reads it: "[::1]:2181" becomes "::1:2181"
// (it splits at the last ':'). Assumes validate_hosts passed.
std::string c_host_list(std::string_view hosts) {
  std::string out;
  for (const char c : hosts)
    if (c != '[' && c != ']') out += c;
  return out;
}

// The least time between two routine resolutions of the connect string's
// host names (see CKeeper::CKeeper).
constexpr int kHostResolutionWindowMs = 10'000;

// How long a close waits for the requests in flight. A healthy ensemble
// answers thousands well within it; a dead link fails them sooner or later
// (the C client gives up on a silent server after 2/3 of the session timeout).
constexpr std::chrono::milliseconds kDrainBudget{2000};

}  // namespace

// Closes the handle, then answers what the C client left unanswered.
//
// It first lets the requests in flight come back (while connected, and within
// kDrainBudget): zookeeper_close() stops waiting for the server's reply to the
// close as soon as the socket is readable, which replies to earlier requests
// make it, then closes the socket with those replies unread. The reset that
// sends can make the server drop the close, and the session (with its
// ephemeral nodes) then lives on until it expires. Seen in tests: 300 creates
// in flight at close, ephemerals still there 10 s later.
void close_session(zhandle_t* zh, const std::shared_ptr<Shared>& shared) {
  {
    std::unique_lock lock(shared->mutex);
    if (shared->state == SessionState::connected ||
        shared->state == SessionState::connected_read_only)
      shared->drained.wait_for(lock, kDrainBudget, [&] { return shared->pending.empty(); });
  }
  const int rc = zookeeper_close(zh);
  // The C client's threads are joined: nothing else touches the registries.
  std::unordered_set<Pending*> pending;
  std::unordered_set<WatchContext*> watches;
  std::int64_t id = 0;
  {
    std::lock_guard lock(shared->mutex);
    pending.swap(shared->pending);
    watches.swap(shared->watches);
    shared->state = SessionState::closed;
    shared->host.clear();
    id = shared->session_id;
  }
  for (Pending* p : pending) {
    if (!p->answered) p->fail(Errc::closing);
    // A request answered with an error sets no watch, here as anywhere.
    if (p->watch && watches.erase(p->watch)) delete p->watch;
    delete p;
  }
  for (WatchContext* w : watches) {
    deliver(*w, EventType::session_ended, w->path);
    delete w;
  }
  shared->log->debug(
      "session {:#x} closed (zookeeper_close: {}); the C client answered {} request(s) with "
      "closing, we answered {} it dropped, and ended {} watch(es)",
      id, zerror(rc), shared->closing_answers.load(), pending.size(), watches.size());
  notify(*shared, SessionState::closed);
}

}  // namespace ckeeper

using namespace ckeeper;

// ---- CKeeper.

CKeeper::CKeeper(const KeeperConfig& config, SessionCallback on_state) {
  detail::check_keeper_config(config);
  std::string connect = c_host_list(config.hosts);
  // the C client takes the chroot as a host list suffix
  if (!config.chroot.empty() && config.chroot != "/") connect += config.chroot;
  const auto timeout = config.session_timeout.count();
  clientid_t client{};
  if (config.session_id != 0) {
    if (config.session_password.size() != sizeof client.passwd)
      throw std::invalid_argument("session_password must be the " +
                                  std::to_string(sizeof client.passwd) +
                                  " bytes that session_password() returned");
    client.client_id = config.session_id;
    std::memcpy(client.passwd, config.session_password.data(), sizeof client.passwd);
  }

  shared_ = std::make_shared<Shared>(detail::make_logger(config.logging), std::move(on_state),
                                     config.default_acl, config.session_timeout);
  // Process-wide in the C client: the last keeper to connect sets it.
  zoo_set_debug_level(detail::c_log_level(detail::default_logger()->level()));
  handle_ = zookeeper_init2(connect.c_str(), &on_session_event, static_cast<int>(timeout),
                            config.session_id != 0 ? &client : nullptr, shared_.get(),
                            ZOO_NO_LOG_CLIENTENV, &detail::forward_c_log);
  if (!handle_) {
    const int error = errno;
    throw KeeperError(
        Errc::system_error, "",
        "zookeeper_init(\"" + detail::printable(connect) + "\") failed: " + std::strerror(error));
  }
  // By default the C client resolves every host of the connect string again
  // each time it polls its socket: a getaddrinfo per host per reply, about a
  // third of the client's CPU under load (measured in W3). Once
  // per window is enough to follow a DNS change; a connection loss still
  // resolves at once.
  if (zoo_set_servers_resolution_delay(handle_, kHostResolutionWindowMs) != ZOK)
    shared_->log->warn("zookeeper client: could not set the host resolution delay");
  if (config.auth) {
    // Sent first on every connection, ahead of any request.
    const std::string credentials = config.auth->user + ":" + config.auth->password;
    const int rc = zoo_add_auth(handle_, "digest", credentials.data(),
                                static_cast<int>(credentials.size()), nullptr, nullptr);
    if (rc != ZOK) {
      close_session(handle_, shared_);
      throw KeeperError(errc_from_int(rc), "", "zoo_add_auth(digest) failed");
    }
  }
  try {
    watchdog_thread_ = std::thread([this] { watch_replies(); });
  } catch (const std::system_error&) {
    close_session(handle_, shared_);  // the destructor will not run
    throw;
  }
}

CKeeper::~CKeeper() { close(); }

void CKeeper::close() noexcept {
  // First, so that nothing nudges a handle that is going away.
  stop_watchdog();
  _zhandle* handle = nullptr;
  {
    // Taken away under the lock, closed outside it: closing waits for the
    // requests in flight, whose completions may call back into us.
    std::unique_lock lock(handle_mutex_);
    handle = std::exchange(handle_, nullptr);
  }
  if (!handle) return;
  if (shared_->event_thread.load(std::memory_order_relaxed) == std::this_thread::get_id()) {
    // Called from a watcher or completion: zookeeper_close() would join the
    // thread we are on, and then free the handle under the C client's feet.
    // The detached thread owns the shared state it needs.
    shared_->log->debug("keeper closed on the event thread: closing on another thread");
    try {
      std::thread(close_session, handle, shared_).detach();
    } catch (const std::system_error& e) {
      shared_->log->error("cannot start a thread to close the session ({}); leaking it", e.what());
    }
    return;
  }
  close_session(handle, shared_);
}

std::int64_t CKeeper::session_id() const {
  std::lock_guard lock(shared_->mutex);
  return shared_->session_id;
}

std::string CKeeper::session_password() const {
  std::lock_guard lock(shared_->mutex);
  return shared_->password;
}

SessionState CKeeper::session_state() const {
  {
    // The C client knows of an end before its event reaches on_session_event,
    // and fails requests from then on: say so as soon as it does.
    std::shared_lock lock(handle_mutex_);
    if (handle_) {
      const int state = zoo_state(handle_);
      if (state == ZOO_EXPIRED_SESSION_STATE) return SessionState::expired;
      if (state == ZOO_AUTH_FAILED_STATE) return SessionState::auth_failed;
    }
  }
  std::lock_guard lock(shared_->mutex);
  return shared_->state;
}

std::chrono::milliseconds CKeeper::session_timeout() const {
  std::lock_guard lock(shared_->mutex);
  return shared_->negotiated.count() > 0 ? shared_->negotiated : shared_->requested_timeout;
}

std::string CKeeper::connected_host() const {
  std::lock_guard lock(shared_->mutex);
  return shared_->host;
}

// ---- Free functions of zkr/keeper.hpp.

std::shared_ptr<Keeper> connect_keeper(const KeeperConfig& config, SessionCallback on_state) {
  return std::make_shared<CKeeper>(config, std::move(on_state));
}

}  // namespace zkr
