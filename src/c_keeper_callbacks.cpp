// CKeeper's side of the C client's threads (c_keeper_internals.hpp): the
// conversions of its replies, the registries of what it holds (requests in
// flight, armed watches), and the callbacks it runs for completions, watches
// and session events. Apart because all of it runs on the C client's
// completion thread, under the rules below, and nothing else does.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <exception>
#include <optional>
#include <string>
#include <utility>

#include "c_keeper_internals.hpp"

namespace zkr::ckeeper {
namespace {

std::optional<EventType> node_event(int type) {
  if (type == ZOO_CREATED_EVENT) return EventType::created;
  if (type == ZOO_DELETED_EVENT) return EventType::deleted;
  if (type == ZOO_CHANGED_EVENT) return EventType::changed;
  if (type == ZOO_CHILD_EVENT) return EventType::child;
  return std::nullopt;
}

SessionState session_state_of(int state) {
  if (state == ZOO_CONNECTED_STATE) return SessionState::connected;
  if (state == ZOO_READONLY_STATE) return SessionState::connected_read_only;
  if (state == ZOO_EXPIRED_SESSION_STATE) return SessionState::expired;
  if (state == ZOO_AUTH_FAILED_STATE) return SessionState::auth_failed;
  return SessionState::connecting;  // connecting, associating, not connected
}

// "127.0.0.1:2181" or "[::1]:2181" of the server the handle is connected to.
// Read on the completion thread right after the connected event: the C client
// keeps no lock around its socket.
std::string connected_peer(zhandle_t* zh) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (!zookeeper_get_connected_host(zh, reinterpret_cast<sockaddr*>(&address), &length)) return {};
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(address);
    if (!inet_ntop(AF_INET, &in.sin_addr, text, sizeof text)) return {};
    return std::string(text) + ":" + std::to_string(ntohs(in.sin_port));
  }
  if (address.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(address);
    if (!inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof text)) return {};
    return "[" + std::string(text) + "]:" + std::to_string(ntohs(in6.sin6_port));
  }
  return {};
}

}  // namespace

// ---- Conversions.

Stat to_stat(const ::Stat& s) {
  return Stat{.czxid = s.czxid,
              .mzxid = s.mzxid,
              .pzxid = s.pzxid,
              .ctime = s.ctime,
              .mtime = s.mtime,
              .version = s.version,
              .cversion = s.cversion,
              .aversion = s.aversion,
              .ephemeral_owner = s.ephemeralOwner,
              .data_length = s.dataLength,
              .num_children = s.numChildren};
}

// ---- The registries of what the C client holds.

// With shared.mutex held, after telling the watchdog something: wakes the
// nudging thread if a nudge may now be due before it would look by itself.
void wake_watchdog_if_sooner(Shared& shared) {
  const auto deadline = shared.watchdog.next_deadline();
  if (!deadline || *deadline >= shared.watchdog_wakes_at) return;
  shared.watchdog_wakes_at = *deadline;
  shared.watchdog_wakeup.notify_one();
}

void track(Shared& shared, Pending* p) {
  const auto now = WatchdogClock::now();
  std::lock_guard lock(shared.mutex);
  shared.pending.insert(p);
  shared.watchdog.on_sent(now);
  wake_watchdog_if_sooner(shared);
}

// A watch event came: the session is not silent.
void heard_event(Shared& shared) {
  const auto now = WatchdogClock::now();
  std::lock_guard lock(shared.mutex);
  shared.watchdog.on_event(now);
}

WatchContext* arm(Shared& shared, const std::string& path, Watcher watcher, bool exists_watch) {
  if (!watcher) return nullptr;
  auto* w = new WatchContext{&shared, path, exists_watch, std::move(watcher)};
  std::lock_guard lock(shared.mutex);
  shared.watches.insert(w);
  return w;
}

void drop(Shared& shared, WatchContext* w) {
  {
    std::lock_guard lock(shared.mutex);
    shared.watches.erase(w);
  }
  delete w;
}

void deliver(WatchContext& w, EventType type, std::string path) {
  if (w.fired) return;
  w.fired = true;
  // Moved out so that its captures go when this call ends, even if the context
  // itself waits for close() (after expiry).
  const Watcher watcher = std::move(w.watcher);
  w.watcher = nullptr;
  try {
    watcher(WatchEvent{type, std::move(path)});
  } catch (const std::exception& e) {
    w.shared->log->error("watcher for {} threw: {}", w.path, e.what());
  } catch (...) {
    w.shared->log->error("watcher for {} threw", w.path);
  }
}

void notify(const Shared& shared, SessionState state) {
  if (!shared.on_state) return;
  try {
    shared.on_state(state);
  } catch (const std::exception& e) {
    shared.log->error("session state callback threw: {}", e.what());
  } catch (...) {
    shared.log->error("session state callback threw");
  }
}

// ---- C client callbacks. They run on its completion thread, never block, and
// ---- never call the C client.

// The common part of every completion: the watch stays with the C client only
// if the server set it. Returns false if reject() already answered.
bool settle(Pending& p, int rc, bool watch_set) {
  if (rc == ZCLOSING) p.shared->closing_answers.fetch_add(1, std::memory_order_relaxed);
  if (p.watch && !watch_set) drop(*p.shared, p.watch);
  return !p.answered;
}

void on_created(int rc, const char* path, const ::Stat* stat, const void* data) {
  auto c = claim<Completion<Created>>(data);
  if (!settle(*c, rc, false)) return;
  if (rc == ZOK) c->answer(Created{path ? path : "", stat ? to_stat(*stat) : Stat{}});
  else c->fail(errc_from_int(rc));
}

void on_void(int rc, const void* data) {
  auto c = claim<Completion<Empty>>(data);
  if (!settle(*c, rc, false)) return;
  if (rc == ZOK) c->answer(Empty{});
  else c->fail(errc_from_int(rc));
}

void on_synced(int rc, const char*, const void* data) { on_void(rc, data); }

// For exists() and set(); only exists() asks for a watch, and the server sets
// it on no_node too.
void on_stat(int rc, const ::Stat* stat, const void* data) {
  auto c = claim<Completion<Stat>>(data);
  if (!settle(*c, rc, rc == ZOK || rc == ZNONODE)) return;
  if (rc == ZOK && stat) c->answer(to_stat(*stat));
  else c->fail(rc == ZOK ? Errc::marshalling_error : errc_from_int(rc));
}

void on_data(int rc, const char* value, int length, const ::Stat* stat, const void* data) {
  auto c = claim<Completion<NodeData>>(data);
  if (!settle(*c, rc, rc == ZOK)) return;
  if (rc == ZOK && stat)  // length is -1 for a node whose data is null
    c->answer(NodeData{value && length > 0 ? std::string(value, length) : "", to_stat(*stat)});
  else c->fail(rc == ZOK ? Errc::marshalling_error : errc_from_int(rc));
}

void on_children(int rc, const String_vector* names, const ::Stat* stat, const void* data) {
  auto c = claim<Completion<Children>>(data);
  if (!settle(*c, rc, rc == ZOK)) return;
  if (rc != ZOK || !stat) {
    c->fail(rc == ZOK ? Errc::marshalling_error : errc_from_int(rc));
    return;
  }
  Children out{{}, to_stat(*stat)};
  if (names) out.names.assign(names->data, names->data + names->count);
  c->answer(std::move(out));
}

void on_watch(zhandle_t*, int type, int state, const char* path, void* context) {
  auto* w = static_cast<WatchContext*>(context);
  Shared& shared = *w->shared;
  shared.on_event_thread();
  if (type == ZOO_SESSION_EVENT) {
    // Connecting and connected come and go while the watch stays armed on the
    // server; only the end of the session ends the watch.
    if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE)
      deliver(*w, EventType::session_ended, w->path);
    return;
  }
  const auto event = node_event(type);
  if (!event) {
    shared.log->debug("ignored watch event type {} for {}", type, w->path);
    return;
  }
  heard_event(shared);
  deliver(*w, *event, path ? path : w->path);
  drop(shared, w);  // the C client has forgotten it: this was its last call
}

void on_session_event(zhandle_t* zh, int type, int state, const char*, void* context) {
  if (type != ZOO_SESSION_EVENT) return;  // node events go to per-watch contexts
  auto& shared = *static_cast<Shared*>(context);
  shared.on_event_thread();
  const SessionState mapped = session_state_of(state);
  std::int64_t id = 0;
  std::string host;
  {
    std::lock_guard lock(shared.mutex);
    shared.state = mapped;
    // Whatever the change, the silence is measured anew; and the nudging
    // thread, which nudges only while connected, looks again.
    shared.watchdog.on_event(WatchdogClock::now());
    shared.watchdog_wakeup.notify_one();
    if (mapped == SessionState::connected || mapped == SessionState::connected_read_only) {
      const clientid_t* client = zoo_client_id(zh);
      shared.session_id = client->client_id;
      shared.password.assign(client->passwd, sizeof client->passwd);
      shared.negotiated = std::chrono::milliseconds(zoo_recv_timeout(zh));
      shared.watchdog.set_quiet_limit(detail::ReplyWatchdog::quiet_limit_for(shared.negotiated));
      shared.host = connected_peer(zh);
    } else {
      shared.host.clear();
    }
    id = shared.session_id;
    host = shared.host;
  }
  if (mapped == SessionState::auth_failed)
    shared.log->error("session {:#x}: authentication failed", id);
  else if (mapped == SessionState::expired) shared.log->info("session {:#x} expired", id);
  else
    shared.log->debug("session {:#x}: {}{}{}", id, to_string(mapped), host.empty() ? "" : " to ",
                      host);
  notify(shared, mapped);
}

}  // namespace zkr::ckeeper
