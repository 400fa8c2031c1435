// src/c_keeper_internals.hpp (internal): what the pieces of CKeeper share
// (c_keeper.hpp): the state the C client's threads reach (CKeeper::Shared),
// the completions and watch contexts handed to the C client, and the
// functions each piece calls in another. Only the c_keeper*.cpp files
// include it, and with it <zookeeper/zookeeper.h>. Apart so that each piece
// (the keeper's life and close, callbacks, sending, multi, nudges) is a file
// of its own while all of them keep the facts below.
//
// Facts about the C client (3.8) these files rely on, read from its sources:
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
#pragma once

#include <zookeeper/zookeeper.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "c_keeper.hpp"
#include "reply_watchdog.hpp"

// What the C client's threads reach: completions, watch contexts, and the
// state they share with the keeper.

namespace zkr::ckeeper {
struct Pending;
struct WatchContext;
}  // namespace zkr::ckeeper

namespace zkr {

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
  std::unordered_set<ckeeper::Pending*> pending;       // guarded by mutex
  std::unordered_set<ckeeper::WatchContext*> watches;  // guarded by mutex

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

}  // namespace zkr

namespace zkr::ckeeper {

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

// ---- Conversions (c_keeper_send.cpp, c_keeper_callbacks.cpp).

Stat to_stat(const ::Stat& s);
int c_mode(CreateMode mode);

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

// ---- The registries and the watchdog's clock (c_keeper_callbacks.cpp).

void wake_watchdog_if_sooner(Shared& shared);
void track(Shared& shared, Pending* p);
void heard_event(Shared& shared);
WatchContext* arm(Shared& shared, const std::string& path, Watcher watcher, bool exists_watch);
void drop(Shared& shared, WatchContext* w);
void deliver(WatchContext& w, EventType type, std::string path);
void notify(const Shared& shared, SessionState state);

// ---- C client callbacks. They run on its completion thread, never block, and
// ---- never call the C client (c_keeper_callbacks.cpp).

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

bool settle(Pending& p, int rc, bool watch_set);

void on_created(int rc, const char* path, const ::Stat* stat, const void* data);
void on_void(int rc, const void* data);
void on_synced(int rc, const char*, const void* data);
void on_stat(int rc, const ::Stat* stat, const void* data);
void on_data(int rc, const char* value, int length, const ::Stat* stat, const void* data);
void on_children(int rc, const String_vector* names, const ::Stat* stat, const void* data);
void on_watch(zhandle_t*, int type, int state, const char* path, void* context);
void on_session_event(zhandle_t* zh, int type, int state, const char*, void* context);
// (c_keeper_nudge.cpp)
void on_nudged(int, const ::Stat*, const void* data);

// ---- Sending (c_keeper_send.cpp).

[[nodiscard]] std::function<void()> reject(zhandle_t* zh, Shared& shared, Pending* p, int rc);

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

// ---- Closing (c_keeper.cpp).

void close_session(zhandle_t* zh, const std::shared_ptr<Shared>& shared);

}  // namespace zkr::ckeeper

namespace zkr {

template <class C, class Call>
void CKeeper::send_open(std::unique_ptr<C> c, Call&& call) {
  std::function<void()> refused;
  {
    std::shared_lock lock(handle_mutex_);
    if (handle_) {
      refused = ckeeper::send(handle_, *shared_, std::move(c), std::forward<Call>(call));
    } else {
      if (c->watch) ckeeper::drop(*shared_, c->watch);
      refused = c->failure(Errc::closing);
    }
  }
  if (refused) refused();  // the handler may send again: the handle's lock is free
}

}  // namespace zkr
