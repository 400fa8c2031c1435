// The Client: one session at a time, its connection states, and new sessions
// after expiry, and the namespace each session is opened in. Long because
// what is left here is one piece: the session thread's loop, which opens,
// announces, suspends, expires and closes sessions, and makes the namespace
// before a connection is announced; split, its invariants would be spread.
// Its other parts live in files of their own: session_inbox.hpp (events from
// keeper threads), listener_dispatcher.hpp (Curator's connection state
// manager: listeners on a thread of their own), client_options.hpp (checks
// and defaults), client_internals.hpp (what recipes need of a Client).
//
// Six kinds of threads meet here:
//  - the keeper's event thread (the C client's), which reports session events.
//    It only appends them to an inbox: it must never block, and a handle cannot
//    be closed from its own event thread.
//  - the Client's session thread, which reads the inbox, runs the state machine,
//    keeps the "suspended too long" timer (a condition-variable wait with a
//    deadline), and opens and closes sessions.
//  - the Client's listener thread, which calls listeners in order. It is not the
//    session thread so that a listener may block in the Client (with_retry after
//    lost, say) while the session thread goes on and brings the connection back.
//  - the background remover's thread (remove_in_background), which waits on
//    requests, so it is neither of the two above.
//  - the callback thread (callback_thread.hpp), where lease callbacks run.
//  - the timer thread (timer_thread.hpp), which runs the deadlines and retry
//    delays of acquires that park no thread, and resumes them after a state
//    or a stop.
//
// Namespace: the session's handle is opened with the namespace as its chroot,
// so the C client adds and strips the prefix on every path, watch and result.
// A chroot must exist, and it cannot be created through the chrooted handle
// (its parents are out of its sight). So on every connection of a session,
// before it is announced, the session's own handle looks at "/" (the
// namespace node itself: one read, which also leaves a watch on it); only if
// it is missing does a short-lived handle without chroot create it, with its
// parents, under namespace_acl. A connection whose namespace cannot be made
// is not announced: the error is kept for callers (they get it at once, not a
// misleading no_node from every call), and the attempt is repeated with a
// growing pause while the session lasts. The watch brings the session thread
// back when the node is deleted (an operator, a cleanup), so that it is
// created again at once rather than never.

#include "zkr/client.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "background_remover.hpp"
#include "callback_thread.hpp"
#include "client_internals.hpp"
#include "client_options.hpp"
#include "client_service.hpp"
#include "connection_state_machine.hpp"
#include "listener_dispatcher.hpp"
#include "log.hpp"
#include "session_inbox.hpp"
#include "timer_thread.hpp"
#include "zkr/path.hpp"

namespace zkr {

std::string_view to_string(ConnectionState s) noexcept {
  switch (s) {
    case ConnectionState::connected: return "connected";
    case ConnectionState::suspended: return "suspended";
    case ConnectionState::reconnected: return "reconnected";
    case ConnectionState::lost: return "lost";
    case ConnectionState::read_only: return "read_only";
  }
  return "unknown";
}

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// After a failed attempt to open a new session (the factory threw), the
// session thread tries again this much later.
constexpr milliseconds kReopenDelay{1000};

// Pauses between attempts to create a namespace that could not be made: from
// the first to the last, doubling. A refusal (no_auth) costs the ensemble a
// session each time, so the pause grows; a fix by an operator is still seen
// within half a minute.
constexpr milliseconds kNamespaceRetryFirst{1000};
constexpr milliseconds kNamespaceRetryLast{30000};

// ~Client waits for the lock calls still inside it (they fail fast once the
// session is closed); it says so this often while it waits.
constexpr milliseconds kVisitWarning{5000};

}  // namespace

struct Client::Impl {
  explicit Impl(ClientOptions o)
      : options(detail::validated_options(std::move(o))),
        log(options.logger),
        config(session_config(options)),
        machine(options.lost_when_suspended_too_long),
        remover([this] { return remover_session(); }, options.connection_timeout, log),
        listeners(log),
        callbacks(std::make_shared<detail::CallbackThread>(log)) {
    auto first = open_keeper(config, 1);  // a failure here fails the constructor
    {
      std::lock_guard lock(mutex);
      keeper = std::move(first);
      epoch = 1;
    }
    session_thread = std::thread([this] { run(); });
  }

  // Locks may outlive the Client, and an acquire may be waiting in another
  // thread: new lock calls are refused first; then the session is closed, even
  // if a waiting acquire holds its keeper, which fails what it waits for, and
  // the epoch moves on, so that none waits for a later session; then we wait
  // for the lock calls in progress to return, before anything they use goes.
  ~Impl() {
    lifeline->close();
    // While the session still serves: the recipes' services finish now
    // (unused lock directories go).
    close_services();
    {
      std::lock_guard lock(mutex);
      closing = true;
      connected = false;
    }
    changed();
    remover.stop();
    inbox->close();
    if (session_thread.joinable()) session_thread.join();
    end_sessions_for_good();
    if (auto last = current_keeper()) last->close();
    while (!lifeline->wait_for_visits(kVisitWarning))
      log->warn("client of {} closing: waiting for lock calls in other threads to return",
                options.connect_string);
    listeners.stop();   // listeners may still use the Client while they drain
    callbacks->stop();  // so may lease callbacks, some posted by the listeners
    std::shared_ptr<Keeper> last;
    {
      std::lock_guard lock(mutex);
      last = std::move(keeper);
    }
    last.reset();
  }

  static KeeperConfig session_config(const ClientOptions& o) {
    KeeperConfig c;
    c.hosts = o.connect_string;
    c.chroot = o.namespace_path.empty() ? "" : "/" + o.namespace_path;
    c.session_timeout = o.session_timeout;
    c.auth = o.auth;
    c.default_acl = *o.default_acl;
    c.logger = o.logger;
    return c;
  }

  std::shared_ptr<Keeper> open_keeper(const KeeperConfig& c, std::uint64_t for_epoch) {
    auto k = options.keeper_factory(
        c, [inbox = inbox, for_epoch](SessionState s) { inbox->push(for_epoch, s); });
    if (!k) throw std::runtime_error("ClientOptions::keeper_factory returned no keeper");
    return k;
  }

  // ---- The session thread.

  void run() {
    for (;;) {
      detail::SessionInbox::Event event;
      const auto wake = inbox->wait(next_deadline(), event);
      if (wake == detail::SessionInbox::Wake::closed) return;
      if (wake == detail::SessionInbox::Wake::event) {
        on_event(event);
      } else {
        on_deadline();
      }
      update_timer();
    }
  }

  std::optional<Clock::time_point> next_deadline() const {
    std::optional<Clock::time_point> next;
    for (const auto& d : {timer, reopen_at, namespace_retry_at})
      if (d && (!next || *d < *next)) next = d;
    return next;
  }

  void on_event(const detail::SessionInbox::Event& event) {
    if (event.epoch != session_epoch()) return;  // from a session we replaced
    if (event.namespace_changed) {
      on_namespace_changed();
      return;
    }
    log->debug("session event {} (epoch {})", to_string(event.state), event.epoch);
    const bool up =
        event.state == SessionState::connected || event.state == SessionState::connected_read_only;
    if (up && !config.chroot.empty() && !ensure_namespace()) {
      // Not announced until the namespace exists: nothing could be served.
      withheld = event.state;
      schedule_namespace_retry();
      return;
    }
    withheld.reset();
    namespace_retry_at.reset();
    apply(machine.on_session(event.state));
  }

  // The watch on the namespace node fired: it was deleted (or changed).
  void on_namespace_changed() {
    namespace_watch_epoch = 0;                        // a watch fires once
    if (!machine.is_connected() || withheld) return;  // the next connection looks anyway
    if (!ensure_namespace()) schedule_namespace_retry();
  }

  void schedule_namespace_retry() {
    namespace_retry_at = Clock::now() + namespace_retry_delay;
    namespace_retry_delay = std::min(namespace_retry_delay * 2, kNamespaceRetryLast);
  }

  void retry_namespace() {
    if (!withheld && !machine.is_connected()) return;  // the next connection looks anyway
    if (!ensure_namespace()) {
      schedule_namespace_retry();
      return;
    }
    if (withheld) {
      const auto s = *withheld;
      withheld.reset();
      apply(machine.on_session(s));
    }
  }

  void on_deadline() {
    const auto now = Clock::now();
    if (namespace_retry_at && now >= *namespace_retry_at) {
      namespace_retry_at.reset();
      retry_namespace();
    }
    if (reopen_at && now >= *reopen_at) {
      reopen_at.reset();
      replace_session();
    }
    if (timer && now >= *timer) {
      timer.reset();
      log->warn("suspended for a whole session timeout: treating session {:#x} as lost",
                current_keeper()->session_id());
      apply(machine.on_suspended_too_long());
    }
  }

  // The new session is opened before listeners hear lost, so that they see
  // its epoch, and keeper_when_connected() waits for it rather than the old one.
  // After auth_failed no new session comes, but lost still moves the epoch
  // on, as recipes expect of it.
  void apply(const detail::Transition& t) {
    if (t.announce) record(*t.announce);
    if (t.open_new_session && !machine.auth_failed()) replace_session();
    else if (machine.auth_failed() && t.announce == ConnectionState::lost) end_sessions_for_good();
    if (t.announce) announce(*t.announce);
  }

  // The current session is over and no other will follow (auth failed, or
  // the Client is closing). The epoch moves on all the same: leases of the
  // old session see it ended, and an acquire waiting for a session after it
  // stops waiting and learns why from keeper_when_connected().
  void end_sessions_for_good() {
    std::lock_guard lock(mutex);
    ++epoch;
  }

  void record(ConnectionState s) {
    {
      std::lock_guard lock(mutex);
      state = s;
      if (s == ConnectionState::suspended) ++suspensions;
      connected = machine.is_connected();
      auth_failed = machine.auth_failed();
    }
    changed();
    if (machine.is_connected()) remover.on_connected();
  }

  void announce(ConnectionState s) {
    const auto level = s == ConnectionState::lost ? spdlog::level::warn : spdlog::level::info;
    log->log(level, "connection to {}: {}", options.connect_string, to_string(s));
    if (machine.auth_failed())
      log->error("authentication failed on {}: no new session will be opened",
                 options.connect_string);
    listeners.post(s);
  }

  // Runs the timer while the machine wants it; measured from the moment it was
  // first wanted, by the session timeout the server granted.
  void update_timer() {
    if (!machine.timer_wanted()) {
      timer.reset();
    } else if (!timer) {
      auto timeout = current_keeper()->session_timeout();
      if (timeout <= milliseconds::zero()) timeout = options.session_timeout;
      timer = Clock::now() + timeout;
    }
  }

  // The current session is dead, or must be taken as dead: end it, then open
  // a new one. Ending it comes first and cannot fail: the epoch moves on and
  // the old handle is closed whatever happens when the next session is opened
  // (a host name that does not resolve during an outage makes the factory
  // throw), because every lease of the old session is lost from this moment.
  void replace_session() {
    if (!current_ended) end_current_session();
    std::shared_ptr<Keeper> fresh;
    const auto for_epoch = session_epoch();
    try {
      fresh = open_keeper(config, for_epoch);
    } catch (const std::exception& e) {
      log->error("could not open a new session to {}: {}; trying again in {} ms",
                 options.connect_string, e.what(), kReopenDelay.count());
      reopen_at = Clock::now() + kReopenDelay;
      return;
    }
    // The handle replaced is dropped outside the mutex: the last reference
    // may be this one, and closing a keeper waits for its callbacks, which
    // may be taking the mutex (a lock attempt asking for the epoch).
    std::shared_ptr<Keeper> replaced;
    {
      std::lock_guard lock(mutex);
      replaced = std::exchange(keeper, std::move(fresh));
    }
    replaced.reset();
    current_ended = false;
    log->info("opening session epoch {} to {}", for_epoch, options.connect_string);
  }

  // Close the old handle even if a caller still holds it. When it was only
  // suspended (the whole ensemble stalled, say), the server may still have the
  // session: left open, the handle would reconnect and keep its ephemeral
  // nodes, lock nodes included, alive forever, while we announce it lost.
  // Closed, its nodes go at once, or when the server expires it. Until a new
  // session opens, `keeper` is this closed handle: its calls fail with closing.
  void end_current_session() {
    // A connection held back for its namespace belonged to this session.
    withheld.reset();
    namespace_retry_at.reset();
    std::shared_ptr<Keeper> old;
    {
      std::lock_guard lock(mutex);
      old = keeper;
      ++epoch;
    }
    current_ended = true;
    if (old) old->close();
  }

  // The namespace exists, or was just created: true. Else false, with the
  // reason kept for callers unless it was only the link (then they wait for a
  // connection as usual). Session thread only; blocks up to two
  // connection timeouts.
  bool ensure_namespace() {
    const auto& path = config.chroot;
    const auto timeout = options.connection_timeout;
    const auto k = current_keeper();
    const auto for_epoch = session_epoch();
    try {
      // Through the session's own handle "/" is the namespace node. The watch
      // (one per session; exists leaves it whether or not the node exists)
      // brings us back here when the node is deleted.
      Watcher watcher;
      if (namespace_watch_epoch != for_epoch) {
        watcher = [inbox = inbox, for_epoch](const WatchEvent& e) {
          if (e.type != EventType::session_ended) inbox->push_namespace_changed(for_epoch);
        };
      }
      const auto stat = await_reply(k->async_exists("/", std::move(watcher)), timeout, path);
      if (stat.error() != Errc::ok && stat.error() != Errc::no_node)
        throw KeeperError(stat.error(), path, "looking for the namespace");
      namespace_watch_epoch = for_epoch;
      if (!stat.ok()) create_namespace();
    } catch (const std::exception& e) {
      const auto* keeper_error = dynamic_cast<const KeeperError*>(&e);
      const Errc code = keeper_error ? keeper_error->errc() : Errc::system_error;
      const std::string why = "the namespace " + path + " could not be created (" + e.what() + ")";
      log->error("{}; trying again in {} ms", why, namespace_retry_delay.count());
      // A lost link says nothing about the namespace: callers keep waiting for
      // a connection. Anything else (no_auth, invalid_acl, ...) is the answer.
      {
        std::lock_guard lock(mutex);
        if (!is_connection_error(code))
          namespace_error = KeeperError(code, path, why + "; the client goes on trying");
      }
      changed();
      return false;
    }
    namespace_retry_delay = kNamespaceRetryFirst;
    {
      std::lock_guard lock(mutex);
      namespace_error.reset();
    }
    changed();
    return true;
  }

  // Creates the namespace node and its parents under namespace_acl, through a
  // handle without chroot, which it closes. Throws what went wrong.
  void create_namespace() {
    struct Connected {
      std::mutex mutex;
      std::condition_variable cv;
      std::optional<bool> up;  // true: connected; false: the handle died
    };
    const auto signal = std::make_shared<Connected>();
    auto bootstrap_config = config;
    bootstrap_config.chroot.clear();
    // The parents are shared with whoever else uses them: they must not get
    // the creator-only default of a Client with auth, which would lock every
    // other identity out of them.
    bootstrap_config.default_acl = *options.namespace_acl;
    const auto& path = config.chroot;
    const auto timeout = options.connection_timeout;
    auto k = options.keeper_factory(bootstrap_config, [signal](SessionState s) {
      std::lock_guard lock(signal->mutex);
      if (s == SessionState::connected) signal->up = true;
      if (s == SessionState::expired || s == SessionState::auth_failed || s == SessionState::closed)
        signal->up = signal->up.value_or(false);
      signal->cv.notify_all();
    });
    if (!k) throw std::runtime_error("keeper_factory returned no keeper");
    {
      std::unique_lock lock(signal->mutex);
      signal->cv.wait_for(lock, timeout, [&] { return signal->up.has_value(); });
      if (signal->up != true)
        throw KeeperError(Errc::connection_loss, path, "could not connect without chroot");
    }
    k->create_parents(path, CreateMode::persistent, timeout);
    auto created = k->try_create(path, {}, CreateMode::persistent, {}, timeout);
    if (!created.ok() && created.error() != Errc::node_exists)
      throw KeeperError(created.error(), path);
    log->info("created namespace {}", path);
  }

  // ---- Shared state.

  std::shared_ptr<Keeper> current_keeper() const {
    std::lock_guard lock(mutex);
    return keeper;
  }
  std::uint64_t session_epoch() const {
    std::lock_guard lock(mutex);
    return epoch;
  }

  // Waits up to connection_timeout, or until `deadline` if that is sooner.
  std::shared_ptr<Keeper> wait_connected(std::optional<Clock::time_point> deadline = {}) const {
    return wait_session(deadline).keeper;
  }
  // The same, with the epoch read under the same lock as the keeper.
  Client::Session wait_session(std::optional<Clock::time_point> deadline = {},
                               std::stop_token stop = {}) const {
    const auto start = Clock::now();
    auto until = detail::deadline_after(options.connection_timeout, start);
    if (deadline && *deadline < until) until = *deadline;
    std::unique_lock lock(mutex);
    // A handle learns that its session is over before its event reaches us
    // (the C client sets its state, then queues the event), and meanwhile
    // fails every request at once: a caller that retried on it would spin.
    // So wait past it, for the session thread to replace it. Asked without
    // our mutex, since the Keeper's own lock is taken by its event thread.
    std::optional<std::uint64_t> dead_epoch;
    const auto usable = [&] { return connected && epoch != dead_epoch; };
    for (;;) {
      connected_cv.wait_until(
          lock, stop, until, [&] { return usable() || closing || auth_failed || namespace_error; });
      if (!usable() || closing || namespace_error) break;
      const auto candidate = keeper;
      const auto candidate_epoch = epoch;
      lock.unlock();
      const auto said = candidate->session_state();
      lock.lock();
      if (said != SessionState::expired && said != SessionState::auth_failed) {
        if (candidate_epoch == epoch && usable()) return {candidate, candidate_epoch};
        continue;  // replaced meanwhile: look at the new one
      }
      dead_epoch = candidate_epoch;
    }
    if (auto final = final_error()) throw *final;
    if (stop.stop_requested())
      throw KeeperError(Errc::connection_loss, "", "stopped while waiting for a connection");
    const auto waited = std::chrono::duration_cast<milliseconds>(until - start);
    throw KeeperError(Errc::connection_loss, "",
                      "not connected to " + options.connect_string + " within " +
                          std::to_string(std::max(waited, milliseconds::zero()).count()) + " ms");
  }

  // Why no session will serve (mutex held): the Client is closing, the
  // namespace cannot be made, or the ensemble refused the credentials.
  std::optional<KeeperError> final_error() const {
    if (closing) return KeeperError(Errc::closing, "", "the client is closing");
    // Before connected: the namespace may have gone, and failed to come back,
    // while the session stayed up.
    if (namespace_error) return *namespace_error;
    if (auth_failed)
      return KeeperError(
          Errc::auth_failed, "",
          "authentication failed on " + options.connect_string +
              " (the ensemble refused the credentials; no new session will be opened)");
    return std::nullopt;
  }

  // wait_session() without the wait: the session if it serves now, else
  // nullopt, and on_change is called at the next change. Throws as
  // wait_session() does when no session will serve.
  std::optional<Client::Session> session_now(const ChangeCallback& on_change) const {
    std::unique_lock lock(mutex);
    for (;;) {
      if (closing || namespace_error || !connected)
        if (auto final = final_error()) throw *final;
      if (!connected) break;
      // As in wait_session(): a handle that already knows its session ended
      // is not handed out; the session thread's replacement of it is a change.
      const auto candidate = keeper;
      const auto candidate_epoch = epoch;
      const auto seen = changes;
      lock.unlock();
      const auto said = candidate->session_state();
      lock.lock();
      // A change came meanwhile (or the epoch moved on): look again.
      if (changes != seen || candidate_epoch != epoch || !connected) continue;
      if (said != SessionState::expired && said != SessionState::auth_failed)
        return Client::Session{candidate, candidate_epoch};
      break;
    }
    if (on_change) {
      std::erase_if(change_waiters, [](const auto& w) { return w.expired(); });
      change_waiters.push_back(on_change);
    }
    return std::nullopt;
  }

  // After connected, auth_failed, closing or namespace_error changed (mutex
  // not held): wakes the blocking waits, and calls session_now()'s callers back.
  void changed() {
    std::vector<std::weak_ptr<std::function<void()>>> waiters;
    {
      std::lock_guard lock(mutex);
      ++changes;
      waiters.swap(change_waiters);
    }
    connected_cv.notify_all();
    for (const auto& waiter : waiters)
      if (const auto call = waiter.lock()) (*call)();
  }

  std::shared_ptr<detail::ClientService> service(
      const void* key, const std::function<std::shared_ptr<detail::ClientService>()>& make) {
    std::lock_guard lock(services_mutex);
    auto& slot = services[key];
    if (!slot) {
      slot = make();
      if (services_closed) slot->close();
    }
    return slot;
  }

  void close_services() {
    std::map<const void*, std::shared_ptr<detail::ClientService>> to_close;
    {
      std::lock_guard lock(services_mutex);
      services_closed = true;
      to_close = services;
    }
    for (auto& [key, service] : to_close) service->close();
  }

  detail::BackgroundRemover::Session remover_session() const {
    std::lock_guard lock(mutex);
    return {keeper, epoch, connected && !closing};
  }

  bool block_until_connected(milliseconds timeout) const {
    std::unique_lock lock(mutex);
    connected_cv.wait_until(lock, zkr::deadline_after(timeout),
                            [&] { return connected || closing || auth_failed || namespace_error; });
    return connected && !closing && !namespace_error;
  }

  const std::shared_ptr<detail::ClientLifeline> lifeline =
      std::make_shared<detail::ClientLifeline>();
  // Before everything that may resume an acquire (the keepers' event
  // threads, the listeners), so that it goes after them.
  const std::shared_ptr<detail::TimerThread> timers = std::make_shared<detail::TimerThread>();
  const ClientOptions options;  // validated, defaults filled in
  const std::shared_ptr<spdlog::logger> log;
  const KeeperConfig config;  // of every session; chroot = the namespace
  const std::shared_ptr<detail::SessionInbox> inbox = std::make_shared<detail::SessionInbox>();

  // Session thread only.
  detail::ConnectionStateMachine machine;
  // A connection of the current session, held back from the machine until
  // its namespace exists.
  std::optional<SessionState> withheld;
  std::optional<Clock::time_point> namespace_retry_at;  // next attempt to make it
  milliseconds namespace_retry_delay = kNamespaceRetryFirst;
  std::uint64_t namespace_watch_epoch = 0;     // the session whose handle has the watch
  std::optional<Clock::time_point> timer;      // suspended too long, when it fires
  std::optional<Clock::time_point> reopen_at;  // retry of a failed replace_session
  bool current_ended = false;  // the epoch moved on, and no session is open for it yet

  mutable std::mutex mutex;
  // connected, auth_failed or closing changed; _any: a wait may also end on a stop_token
  mutable std::condition_variable_any connected_cv;
  std::shared_ptr<Keeper> keeper;              // guarded by mutex
  std::uint64_t epoch = 0;                     // guarded by mutex
  std::optional<ConnectionState> state;        // guarded by mutex; nullopt before connected
  bool connected = false;                      // guarded by mutex
  bool auth_failed = false;                    // guarded by mutex
  bool closing = false;                        // guarded by mutex
  std::optional<KeeperError> namespace_error;  // guarded by mutex: why it cannot be made
  std::uint64_t changes = 0;                   // guarded by mutex: calls of changed()
  std::uint64_t suspensions = 0;               // guarded by mutex: suspended announced so far
  // session_now()'s callers that found no session; a caller drops its
  // callback to cancel.
  mutable std::vector<std::weak_ptr<std::function<void()>>> change_waiters;  // guarded by mutex

  detail::BackgroundRemover remover;
  detail::ListenerDispatcher listeners;
  const std::shared_ptr<detail::CallbackThread> callbacks;
  // The recipes' services (ClientService), by their key. They may outlive
  // the Client (locks hold them); closed by ~Impl, after which they never
  // call back into us. One made after that is closed at once.
  std::mutex services_mutex;
  std::map<const void*, std::shared_ptr<detail::ClientService>> services;  // guarded
  bool services_closed = false;  // guarded by services_mutex
  std::thread session_thread;    // last: starts once the rest exists
};

Client::Client(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Client::~Client() = default;

bool Client::block_until_connected(std::chrono::milliseconds timeout) {
  return impl_->block_until_connected(timeout);
}

std::shared_ptr<Keeper> Client::keeper() const { return impl_->current_keeper(); }

std::uint64_t Client::session_epoch() const { return impl_->session_epoch(); }

ConnectionState Client::state() const {
  std::lock_guard lock(impl_->mutex);
  // Before the first connection nothing may be trusted yet: that is suspended.
  return impl_->state.value_or(ConnectionState::suspended);
}

bool Client::is_connected() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->connected;
}

Client::ListenerId Client::add_listener(Listener listener) {
  return impl_->listeners.add(std::move(listener));
}

void Client::remove_listener(ListenerId id) { impl_->listeners.remove(id); }

const RetryPolicy& Client::retry_policy() const { return *impl_->options.retry_policy; }

Sleeper& Client::sleeper() const { return *impl_->options.sleeper; }

spdlog::logger& Client::logger() const { return *impl_->log; }

const ClientOptions& Client::options() const { return impl_->options; }

void Client::remove_in_background(std::string path, std::uint64_t epoch, bool by_name_prefix,
                                  std::int64_t czxid) noexcept {
  impl_->remover.add(std::move(path), epoch, by_name_prefix, czxid);
}

std::shared_ptr<Keeper> Client::keeper_when_connected() const { return impl_->wait_connected(); }

std::shared_ptr<Keeper> Client::keeper_when_connected(
    std::chrono::steady_clock::time_point deadline) const {
  return impl_->wait_connected(deadline);
}

Client::Session Client::session_when_connected(
    std::optional<std::chrono::steady_clock::time_point> deadline, std::stop_token stop) const {
  return impl_->wait_session(deadline, std::move(stop));
}

std::optional<Client::Session> Client::session_now(const ChangeCallback& on_change) const {
  return impl_->session_now(on_change);
}

bool Client::on_listener_thread() const noexcept { return impl_->listeners.on_thread(); }

std::shared_ptr<detail::CallbackThread> Client::callback_thread() const noexcept {
  return impl_->callbacks;
}

std::shared_ptr<detail::ClientLifeline> Client::lifeline() const noexcept {
  return impl_->lifeline;
}

std::shared_ptr<detail::ClientService> Client::service(
    const void* key, const std::function<std::shared_ptr<detail::ClientService>()>& make) const {
  return impl_->service(key, make);
}

std::pair<Client::Session, bool> Client::background_session() const {
  const auto s = impl_->remover_session();
  return {Session{s.keeper, s.epoch}, s.connected};
}

std::shared_ptr<detail::TimerThread> Client::timers() const noexcept { return impl_->timers; }

std::uint64_t Client::suspensions() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->suspensions;
}

}  // namespace zkr
