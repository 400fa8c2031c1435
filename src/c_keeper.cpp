// The Keeper over the ZooKeeper C client (libzookeeper-mt), and connect_keeper:
// conversions, the callbacks the C client's threads run, sending, the close
// protocol, and nudges. Long because the callbacks, the registries of what the
// C client holds, the close protocol and the nudging thread (which must stop
// before the handle goes) share one set of facts about the C client (below),
// and each relies on the others keeping them. Elsewhere: when to nudge
// (reply_watchdog.cpp), the argument checks and the host grammar, shared with
// the other Keepers (keeper_arguments.cpp), the error table checked against
// the C client's (c_error_codes.cpp), and its log bridge (c_client_log.cpp).
//
// Facts about the C client (3.8) this file relies on, read from its sources:
// - It runs two threads per handle: an I/O thread, and a completion thread on
//   which every completion and every watcher runs, in the order the I/O thread
//   queued them. So a request's completion always runs before any watch event
//   it set, and one session's completions run in the order it sent them.
// - A zoo_a* call that returns an error did not queue its completion, except
//   ZMARSHALLINGERROR, which may come after the completion was queued (an
//   allocation failure); see reject().
// - A watch is kept only if the server set it: exists() on ZOK or ZNONODE,
//   get()/children() on ZOK. Faked answers (ZCONNECTIONLOSS, ZCLOSING, ...)
//   never set one.
// - On every session state change the C client calls every armed per-path
//   watcher with ZOO_SESSION_EVENT, without disarming it. A node event is the
//   last call: the watcher was taken out of the C client's tables first.
// - zookeeper_close() answers pending requests with ZCLOSING, but the
//   completion thread usually stops before it runs those answers, which are
//   then never run (nor freed: LeakSanitizer reports them). In tests, 299 of
//   300 pending requests were left so. It never calls armed watchers on close
//   either. Hence the registries in Shared: whatever the C client has not
//   answered when zookeeper_close() returns (its threads joined), we answer.
// - It sends a ping only when no request is outstanding, and gives up on a
//   server that has sent nothing for 2/3 of the session timeout. A server
//   sitting on a commit (ZOOKEEPER-4537, reply_watchdog.hpp) thus costs that
//   long, unless something else reaches it: hence the nudges.
// - A zoo_a* call only queues the request and wakes the I/O thread: it never
//   waits for the completion thread, so a thread that calls one can be joined
//   from the completion thread.
// - zoo_amulti() builds each operation's request in a local it does not
//   initialise, and frees that local's path when it differs from the
//   operation's. Once one operation fails to build (the handle is expired or
//   its authentication failed, as is_unrecoverable() says), the later ones are
//   not built, and their locals still hold an earlier operation's path: ours,
//   freed, often twice. Under a chroot even the failed one's own copy is freed
//   twice. See multi_refusal().
// - Its log level is one process-wide variable; its log callback gets a
//   formatted line and no context.
// - Its host parser takes the last ':' as the port separator, reads the port
//   with strtol(base 0) (so "02181" is octal), and knows no IPv6 brackets.
//   validate_hosts (keeper_arguments.cpp) refuses what it would misread.
#include "c_keeper.hpp"

#include <zookeeper/zookeeper.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <iterator>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <utility>

#include <spdlog/spdlog.h>

#include "c_client_log.hpp"
#include "keeper_arguments.hpp"
#include "log.hpp"
#include "reply_watchdog.hpp"

namespace zkr {
namespace {

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

int c_mode(CreateMode mode) {
  switch (mode) {
    case CreateMode::persistent: return ZOO_PERSISTENT;
    case CreateMode::persistent_sequential: return ZOO_PERSISTENT_SEQUENTIAL;
    case CreateMode::ephemeral: return ZOO_EPHEMERAL;
    case CreateMode::ephemeral_sequential: return ZOO_EPHEMERAL_SEQUENTIAL;
    case CreateMode::container: return ZOO_CONTAINER;
    case CreateMode::persistent_with_ttl: return ZOO_PERSISTENT_WITH_TTL;
    case CreateMode::persistent_sequential_with_ttl: return ZOO_PERSISTENT_SEQUENTIAL_WITH_TTL;
  }
  throw std::invalid_argument("unknown CreateMode " + std::to_string(static_cast<int>(mode)));
}

// An AclList as the C client's ACL_vector, which points into it. The C client
// serialises the ACL inside the zoo_a* call, so this only has to outlive it.
class CAclList {
 public:
  explicit CAclList(AclList acl) : acl_(std::move(acl)) {
    entries_.reserve(acl_.size());
    for (auto& a : acl_) entries_.push_back(ACL{a.perms, Id{a.scheme.data(), a.id.data()}});
    vector_.count = static_cast<std::int32_t>(entries_.size());
    vector_.data = entries_.data();
  }
  CAclList(const CAclList&) = delete;
  CAclList& operator=(const CAclList&) = delete;
  const ACL_vector* get() const { return &vector_; }

 private:
  AclList acl_;
  std::vector<ACL> entries_;
  ACL_vector vector_{};
};

// ---- Hosts.

// The host list as the C client reads it: "[::1]:2181" becomes "::1:2181"
// (it splits at the last ':'). Assumes validate_hosts passed.
std::string c_host_list(std::string_view hosts) {
  std::string out;
  for (const char c : hosts)
    if (c != '[' && c != ']') out += c;
  return out;
}

}  // namespace

// ---- What the C client's threads reach: completions, watch contexts, and the
// ---- state they share with the keeper.

namespace {
struct Pending;
struct WatchContext;
}  // namespace

struct CKeeper::Shared {
  Shared(std::shared_ptr<spdlog::logger> logger, SessionCallback callback, AclList acl,
         std::chrono::milliseconds timeout)
      : log(std::move(logger)),
        on_state(std::move(callback)),
        default_acl(std::move(acl)),
        requested_timeout(timeout),
        watchdog(detail::ReplyWatchdog::quiet_limit_for(timeout)) {}

  const std::shared_ptr<spdlog::logger> log;
  const SessionCallback on_state;
  const AclList default_acl;
  const std::chrono::milliseconds requested_timeout;

  // The C client's completion thread, once it has called us: the destructor
  // must not close the handle from it (see ~CKeeper).
  std::atomic<std::thread::id> event_thread{};
  // How many answers the C client itself gave with ZCLOSING (for the close log).
  std::atomic<int> closing_answers{0};

  mutable std::mutex mutex;
  std::condition_variable drained;                // pending became empty
  SessionState state = SessionState::connecting;  // guarded by mutex
  std::int64_t session_id = 0;                    // guarded by mutex
  std::string password;                           // guarded by mutex
  std::chrono::milliseconds negotiated{0};        // guarded by mutex
  std::string host;                               // guarded by mutex
  // Requests the C client has not answered yet, and watch contexts it may
  // still call: what close() must answer and free.
  std::unordered_set<Pending*> pending;       // guarded by mutex
  std::unordered_set<WatchContext*> watches;  // guarded by mutex

  // When to nudge (reply_watchdog.hpp): told of every request tracked in
  // `pending` and of everything heard from the C client. The nudging thread
  // (CKeeper::watch_replies) waits on watchdog_wakeup until the next deadline;
  // watchdog_wakes_at is when it will look again by itself (max: only when
  // woken), so that senders wake it only when a deadline comes sooner, not
  // once per request.
  detail::ReplyWatchdog watchdog;                               // guarded by mutex
  std::condition_variable watchdog_wakeup;                      //
  detail::ReplyWatchdog::Clock::time_point watchdog_wakes_at =  // guarded by mutex
      detail::ReplyWatchdog::Clock::time_point::max();          //
  bool watchdog_stop = false;                                   // guarded by mutex
  std::atomic<std::uint64_t> nudges{0};

  void on_event_thread() {
    event_thread.store(std::this_thread::get_id(), std::memory_order_relaxed);
  }
};

namespace {

using Shared = CKeeper::Shared;

// One request in flight. Owned by the C client from a successful zoo_a* call
// until its completion runs, which deletes it; close() deletes the ones never
// answered.
struct Pending {
  Pending(Shared* s, std::string p) : shared(s), path(std::move(p)) {}
  virtual ~Pending() = default;
  // Takes the handler out with the failure for it: the caller answers
  // (calls it) once it holds no lock, since a handler may send again.
  virtual std::function<void()> failure(Errc e) = 0;
  void fail(Errc e) { failure(e)(); }

  Shared* const shared;
  const std::string path;
  WatchContext* watch = nullptr;  // the watch this request asks for, if any
  bool answered = false;          // already answered by reject()
};

template <class T>
struct Completion final : Pending {
  Completion(Shared* s, std::string p, ReplyHandler<Result<T>> h)
      : Pending(s, std::move(p)), handler(std::move(h)) {}
  std::function<void()> failure(Errc e) override {
    return [h = std::move(handler), r = Result<T>(e, path)]() mutable { h(std::move(r)); };
  }
  void answer(Result<T> r) { std::exchange(handler, {})(std::move(r)); }
  ReplyHandler<Result<T>> handler;
};

struct MultiCompletion final : Pending {
  enum class Kind { create, remove, set, check };
  MultiCompletion(Shared* s, std::vector<Op> o, ReplyHandler<MultiResult> h)
      : Pending(s, {}),
        handler(std::move(h)),
        ops(std::move(o)),
        kinds(ops.size()),
        c_ops(ops.size()),
        results(ops.size()),
        created(ops.size()),
        stats(ops.size()) {}
  std::function<void()> failure(Errc e) override {
    MultiResult result;
    result.error = e;
    return [h = std::move(handler), r = std::move(result)]() mutable { h(std::move(r)); };
  }
  void answer(MultiResult r) { std::exchange(handler, {})(std::move(r)); }
  ReplyHandler<MultiResult> handler;
  std::vector<Op> ops;  // the strings c_ops point at
  std::vector<Kind> kinds;
  std::vector<zoo_op_t> c_ops;
  // Written by the C client until the completion runs:
  std::vector<zoo_op_result_t> results;
  std::vector<std::string> created;  // created paths, NUL-terminated in place
  std::vector<::Stat> stats;         // stats of set operations
};

// One watch. Delivers at most one event; freed by its node event (the C
// client's last call), by the completion when the server did not set it, or
// by close().
struct WatchContext {
  Shared* shared;
  std::string path;   // as the caller gave it, for session_ended
  bool exists_watch;  // armed even when the node is absent
  Watcher watcher;
  bool fired = false;  // touched on the completion thread, then by close()
};

using WatchdogClock = detail::ReplyWatchdog::Clock;

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

// Takes a completion back from the C client. The pointer was passed as the
// concrete type, so it comes back as that type.
template <class C>
std::unique_ptr<C> claim(const void* data) {
  auto* c = static_cast<C*>(const_cast<void*>(data));
  Shared& shared = *c->shared;
  shared.on_event_thread();
  const auto now = WatchdogClock::now();
  std::lock_guard lock(shared.mutex);
  shared.pending.erase(c);
  shared.watchdog.on_reply(now);
  if (shared.pending.empty()) shared.drained.notify_all();
  return std::unique_ptr<C>(c);
}

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

// Codes for which the server did not answer the multi operation by operation:
// the outcome is unknown (or, throttled, nothing was done).
bool multi_failed_as_a_whole(Errc e) {
  return is_connection_error(e) || e == Errc::throttled_op || e == Errc::marshalling_error ||
         e == Errc::system_error;
}

void on_multi(int rc, const void* data) {
  auto c = claim<MultiCompletion>(data);
  if (!settle(*c, rc, false)) return;
  MultiResult out;
  out.error = errc_from_int(rc);
  if (!multi_failed_as_a_whole(out.error)) {
    out.results.reserve(c->results.size());
    for (std::size_t i = 0; i < c->results.size(); ++i) {
      OpResult r;
      r.error = errc_from_int(c->results[i].err);
      // In a failed multi the server reports the operations before the failed
      // one as ok (and those after as runtime_inconsistency), though all were
      // rolled back. No result may say ok when nothing was applied.
      if (out.error != Errc::ok && r.error == Errc::ok) r.error = Errc::runtime_inconsistency;
      if (r.error == Errc::ok && c->kinds[i] == MultiCompletion::Kind::create)
        r.path = c->created[i].c_str();
      if (r.error == Errc::ok && c->kinds[i] == MultiCompletion::Kind::set)
        r.stat = to_stat(c->stats[i]);
      out.results.push_back(std::move(r));
    }
  }
  c->answer(std::move(out));
}

// A nudge's answer (data: the Shared). Whatever it says, ZNONODE included, the
// nudge has done its work or failed with the connection; the next may follow.
// It may run during zookeeper_close(), while the Shared is still alive.
void on_nudged(int, const ::Stat*, const void* data) {
  auto& shared = *static_cast<Shared*>(const_cast<void*>(data));
  shared.on_event_thread();
  const auto now = WatchdogClock::now();
  std::lock_guard lock(shared.mutex);
  shared.watchdog.on_nudge_answered(now);
  wake_watchdog_if_sooner(shared);
}

std::optional<EventType> node_event(int type) {
  if (type == ZOO_CREATED_EVENT) return EventType::created;
  if (type == ZOO_DELETED_EVENT) return EventType::deleted;
  if (type == ZOO_CHANGED_EVENT) return EventType::changed;
  if (type == ZOO_CHILD_EVENT) return EventType::child;
  return std::nullopt;
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

// ---- Sending.

// An error the C client returned from the zoo_a* call itself. ZINVALIDSTATE
// means the handle is dead; say why, as a request in flight would have heard.
Errc sync_error(zhandle_t* zh, int rc) {
  if (rc == ZINVALIDSTATE) {
    const int state = zoo_state(zh);
    if (state == ZOO_EXPIRED_SESSION_STATE) return Errc::session_expired;
    if (state == ZOO_AUTH_FAILED_STATE) return Errc::auth_failed;
  }
  return errc_from_int(rc);
}

// A zoo_a* call failed: its completion will not run, so answer now. Except
// that ZMARSHALLINGERROR can come after the completion was queued (an
// allocation failure in the C client): then we answer only if the completion
// has not claimed it yet, and leave freeing to the completion or to close().
// Returns the answer, for the caller to give once it holds no lock.
[[nodiscard]] std::function<void()> reject(zhandle_t* zh, Shared& shared, Pending* p, int rc) {
  const Errc error = sync_error(zh, rc);
  if (rc == ZMARSHALLINGERROR) {
    std::lock_guard lock(shared.mutex);
    if (!shared.pending.contains(p)) return {};  // its completion has it
    p->answered = true;
    return p->failure(error);
  }
  auto answer = p->failure(error);
  if (p->watch) drop(shared, p->watch);
  {
    std::lock_guard lock(shared.mutex);
    shared.pending.erase(p);
    shared.watchdog.on_withdrawn();
    if (shared.pending.empty()) shared.drained.notify_all();
  }
  delete p;
  return answer;
}

// Why zoo_amulti() must not be called now, as its return code, or ZOK. It
// corrupts memory on a handle whose session is over (see the facts above), so
// it is called only on a connected one: a session is found over only by a
// reconnection's handshake, which the C client's I/O thread would have to
// complete between this check and the call. While connecting, the handshake's
// answer may come at any moment, so a multi then is refused as not sent
// (connection loss) rather than queued.
int multi_refusal(zhandle_t* zh) {
  const int state = zoo_state(zh);
  if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE) return ZINVALIDSTATE;
  if (state != ZOO_CONNECTED_STATE && state != ZOO_READONLY_STATE) return ZCONNECTIONLOSS;
  return ZOK;
}

// Hands a completion to the C client: call(c) is the zoo_a* call; c may be
// answered and freed before call returns. Returns the answer to a request
// the C client refused, for the caller to give once it holds no lock.
template <class C, class Call>
[[nodiscard]] std::function<void()> send(zhandle_t* zh, Shared& shared, std::unique_ptr<C> c,
                                         Call&& call) {
  C* raw = c.release();
  track(shared, raw);
  if (const int rc = call(raw); rc != ZOK) return reject(zh, shared, raw, rc);
  return {};
}

// The least time between two routine resolutions of the connect string's
// host names (see CKeeper::CKeeper).
constexpr int kHostResolutionWindowMs = 10'000;

// How long a close waits for the requests in flight. A healthy ensemble
// answers thousands well within it; a dead link fails them sooner or later
// (the C client gives up on a silent server after 2/3 of the session timeout).
constexpr std::chrono::milliseconds kDrainBudget{2000};

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

}  // namespace

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

  shared_ =
      std::make_shared<Shared>(config.logger ? config.logger : detail::default_logger(),
                               std::move(on_state), config.default_acl, config.session_timeout);
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

std::uint64_t CKeeper::nudges_sent() const noexcept {
  return shared_->nudges.load(std::memory_order_relaxed);
}

// The nudging thread. It sleeps until the watchdog's next deadline, or without
// one until woken (nothing outstanding, a nudge in flight, or not connected:
// a nudge queued while the C client reconnects would only follow the requests
// it resends), so an idle or healthy session costs it nothing.
void CKeeper::watch_replies() {
  Shared& shared = *shared_;
  std::unique_lock lock(shared.mutex);
  while (!shared.watchdog_stop) {
    const bool connected = shared.state == SessionState::connected ||
                           shared.state == SessionState::connected_read_only;
    if (connected && shared.watchdog.take_nudge(WatchdogClock::now())) {
      lock.unlock();
      nudge();
      lock.lock();
      continue;
    }
    // take_nudge() said no, so any deadline is still ahead: no busy loop.
    const auto deadline = connected ? shared.watchdog.next_deadline() : std::nullopt;
    shared.watchdog_wakes_at = deadline.value_or(WatchdogClock::time_point::max());
    if (deadline) shared.watchdog_wakeup.wait_until(lock, *deadline);
    else shared.watchdog_wakeup.wait(lock);
  }
}

// One exists("/") on the session, without a watch: the cheapest request that
// reaches the server's CommitProcessor. With a chroot it reads the chroot;
// no_node would do as well. Called without shared->mutex.
void CKeeper::nudge() {
  int rc = ZCLOSING;
  {
    std::shared_lock lock(handle_mutex_);
    if (handle_) rc = zoo_aexists(handle_, "/", 0, &on_nudged, shared_.get());
  }
  std::int64_t id = 0;
  std::size_t outstanding = 0;
  std::chrono::milliseconds limit{};
  {
    std::lock_guard lock(shared_->mutex);
    id = shared_->session_id;
    outstanding = shared_->watchdog.outstanding();
    limit = shared_->watchdog.quiet_limit();
    if (rc != ZOK) shared_->watchdog.on_nudge_answered(WatchdogClock::now());
  }
  if (rc != ZOK) {
    shared_->log->debug("session {:#x}: could not send a nudge: {}", id, zerror(rc));
    return;
  }
  shared_->nudges.fetch_add(1, std::memory_order_relaxed);
  shared_->log->debug(
      "session {:#x}: no reply for {} ms with {} request(s) outstanding: nudged the server "
      "with exists(/) (ZOOKEEPER-4537)",
      id, limit.count(), outstanding);
}

void CKeeper::stop_watchdog() noexcept {
  std::lock_guard thread_lock(watchdog_thread_mutex_);
  if (!watchdog_thread_.joinable()) return;
  {
    std::lock_guard lock(shared_->mutex);
    shared_->watchdog_stop = true;
    shared_->watchdog_wakeup.notify_one();
  }
  // Never waits on the C client's threads: nudge() only queues a request.
  // So this may run on the C client's event thread too.
  watchdog_thread_.join();
}

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

template <class C, class Call>
void CKeeper::send_open(std::unique_ptr<C> c, Call&& call) {
  std::function<void()> refused;
  {
    std::shared_lock lock(handle_mutex_);
    if (handle_) {
      refused = send(handle_, *shared_, std::move(c), std::forward<Call>(call));
    } else {
      if (c->watch) drop(*shared_, c->watch);
      refused = c->failure(Errc::closing);
    }
  }
  if (refused) refused();  // the handler may send again: the handle's lock is free
}

void CKeeper::send_create(std::string path, std::string data, CreateMode mode,
                          CreateOptions options, ReplyHandler<Result<Created>> on_reply) {
  detail::check_create(path, data, mode, options);
  const int flags = c_mode(mode);
  const CAclList acl(options.acl ? *options.acl : shared_->default_acl);
  auto c = std::make_unique<Completion<Created>>(shared_.get(), path, std::move(on_reply));
  send_open(std::move(c), [&](Completion<Created>* raw) {
    const auto length = static_cast<int>(data.size());
    if (has_ttl(mode))
      return zoo_acreate2_ttl(handle_, path.c_str(), data.data(), length, acl.get(), flags,
                              options.ttl.count(), &on_created, raw);
    return zoo_acreate2(handle_, path.c_str(), data.data(), length, acl.get(), flags, &on_created,
                        raw);
  });
}

void CKeeper::send_remove(std::string path, Version version, ReplyHandler<Result<Empty>> on_reply) {
  detail::check_write_path(path);
  auto c = std::make_unique<Completion<Empty>>(shared_.get(), path, std::move(on_reply));
  send_open(std::move(c), [&](Completion<Empty>* raw) {
    return zoo_adelete(handle_, path.c_str(), version, &on_void, raw);
  });
}

// Reads may look at the reserved /zookeeper subtree (a tool listing the tree
// does); writes there are refused before they are sent.
void CKeeper::send_exists(std::string path, Watcher watcher, ReplyHandler<Result<Stat>> on_reply) {
  detail::check_read_path(path);
  auto c = std::make_unique<Completion<Stat>>(shared_.get(), path, std::move(on_reply));
  c->watch = arm(*shared_, path, std::move(watcher), /*exists_watch=*/true);
  WatchContext* w = c->watch;
  send_open(std::move(c), [&](Completion<Stat>* raw) {
    return zoo_awexists(handle_, path.c_str(), w ? &on_watch : nullptr, w, &on_stat, raw);
  });
}

void CKeeper::send_get(std::string path, Watcher watcher, ReplyHandler<Result<NodeData>> on_reply) {
  detail::check_read_path(path);
  auto c = std::make_unique<Completion<NodeData>>(shared_.get(), path, std::move(on_reply));
  c->watch = arm(*shared_, path, std::move(watcher), /*exists_watch=*/false);
  WatchContext* w = c->watch;
  send_open(std::move(c), [&](Completion<NodeData>* raw) {
    return zoo_awget(handle_, path.c_str(), w ? &on_watch : nullptr, w, &on_data, raw);
  });
}

void CKeeper::send_set(std::string path, std::string data, Version version,
                       ReplyHandler<Result<Stat>> on_reply) {
  detail::check_set(path, data);
  const auto length = static_cast<int>(data.size());
  auto c = std::make_unique<Completion<Stat>>(shared_.get(), path, std::move(on_reply));
  send_open(std::move(c), [&](Completion<Stat>* raw) {
    return zoo_aset(handle_, path.c_str(), data.data(), length, version, &on_stat, raw);
  });
}

void CKeeper::send_children(std::string path, Watcher watcher,
                            ReplyHandler<Result<Children>> on_reply) {
  detail::check_read_path(path);
  auto c = std::make_unique<Completion<Children>>(shared_.get(), path, std::move(on_reply));
  c->watch = arm(*shared_, path, std::move(watcher), /*exists_watch=*/false);
  WatchContext* w = c->watch;
  send_open(std::move(c), [&](Completion<Children>* raw) {
    return zoo_awget_children2(handle_, path.c_str(), w ? &on_watch : nullptr, w, &on_children,
                               raw);
  });
}

void CKeeper::send_multi(std::vector<Op> ops, ReplyHandler<MultiResult> on_reply) {
  detail::check_multi(ops);
  auto c = std::make_unique<MultiCompletion>(shared_.get(), std::move(ops), std::move(on_reply));
  std::vector<std::unique_ptr<CAclList>> acls;  // serialised inside zoo_amulti
  for (std::size_t i = 0; i < c->ops.size(); ++i) {
    zoo_op_t* out = &c->c_ops[i];
    if (auto* create = std::get_if<op::Create>(&c->ops[i])) {
      c->kinds[i] = MultiCompletion::Kind::create;
      acls.push_back(std::make_unique<CAclList>(create->options.acl ? *create->options.acl
                                                                    : shared_->default_acl));
      // Room for the sequence suffix: 10 digits, or 11 once the counter wraps.
      c->created[i].assign(create->path.size() + 16, '\0');
      zoo_create_op_init(out, create->path.c_str(), create->data.data(),
                         static_cast<int>(create->data.size()), acls.back()->get(),
                         c_mode(create->mode), c->created[i].data(),
                         static_cast<int>(c->created[i].size()));
    } else if (auto* remove = std::get_if<op::Remove>(&c->ops[i])) {
      c->kinds[i] = MultiCompletion::Kind::remove;
      zoo_delete_op_init(out, remove->path.c_str(), remove->version);
    } else if (auto* set = std::get_if<op::Set>(&c->ops[i])) {
      c->kinds[i] = MultiCompletion::Kind::set;
      zoo_set_op_init(out, set->path.c_str(), set->data.data(), static_cast<int>(set->data.size()),
                      set->version, &c->stats[i]);
    } else {
      const auto& check = std::get<op::Check>(c->ops[i]);
      c->kinds[i] = MultiCompletion::Kind::check;
      zoo_check_op_init(out, check.path.c_str(), check.version);
    }
  }
  send_open(std::move(c), [&](MultiCompletion* raw) {
    if (const int refused = multi_refusal(handle_); refused != ZOK) return refused;
    return zoo_amulti(handle_, static_cast<int>(raw->c_ops.size()), raw->c_ops.data(),
                      raw->results.data(), &on_multi, raw);
  });
}

void CKeeper::send_sync(std::string path, ReplyHandler<Result<Empty>> on_reply) {
  detail::check_read_path(path);
  auto c = std::make_unique<Completion<Empty>>(shared_.get(), path, std::move(on_reply));
  send_open(std::move(c), [&](Completion<Empty>* raw) {
    return zoo_async(handle_, path.c_str(), &on_synced, raw);
  });
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
