// The Client: one session at a time, its connection states, new sessions
// after expiry, and the namespace each session is opened in. This file puts
// the parts together and holds what ~Client must do in order; each part is a
// file of its own: session_thread.hpp (the session thread and its state
// machine), current_session.hpp (the session now, and the waits for one),
// namespace_keeper.hpp (making the namespace), session_inbox.hpp (events
// from keeper threads), listener_dispatcher.hpp (Curator's connection state
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

#include "zkr/client.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include <spdlog/spdlog.h>

#include "background_remover.hpp"
#include "callback_thread.hpp"
#include "client_internals.hpp"
#include "client_options.hpp"
#include "client_service.hpp"
#include "current_session.hpp"
#include "listener_dispatcher.hpp"
#include "log.hpp"
#include "namespace_keeper.hpp"
#include "observer_call.hpp"
#include "session_inbox.hpp"
#include "session_thread.hpp"
#include "timer_thread.hpp"

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

// ~Client waits for the lock calls still inside it (they fail fast once the
// session is closed); it says so this often while it waits.
constexpr std::chrono::milliseconds kVisitWarning{5000};

KeeperConfig session_config(const ClientOptions& o) {
  KeeperConfig c;
  c.hosts = o.connect_string;
  c.chroot = o.namespace_path.empty() ? "" : "/" + o.namespace_path;
  c.session_timeout = o.session_timeout;
  c.auth = o.auth;
  c.default_acl = *o.default_acl;
  c.logging = o.logging;
  return c;
}

}  // namespace

struct Client::Impl {
  explicit Impl(ClientOptions o)
      : options(detail::validated_options(std::move(o))),
        log(detail::make_logger(options.logging)),
        config(session_config(options)),
        ns(options, config, inbox, log, [this] { current.changed(); }),
        current(options.connect_string, options.connection_timeout, ns),
        remover([this] { return current.background(); }, options.connection_timeout, log),
        listeners(log, options.observer),
        callbacks(std::make_shared<detail::CallbackThread>(log)),
        session(options, config, inbox, log, current, ns,
                {[this] { remover.on_connected(); },
                 [this](ConnectionState s) { listeners.post(s); }}) {}

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
    current.close();
    remover.stop();
    session.stop();
    while (!lifeline->wait_for_visits(kVisitWarning))
      log->warn("client of {} closing: waiting for lock calls in other threads to return",
                options.connect_string);
    listeners.stop();   // listeners may still use the Client while they drain
    callbacks->stop();  // so may lease callbacks, some posted by the listeners
    current.take_keeper().reset();
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

  const std::shared_ptr<detail::ClientLifeline> lifeline =
      std::make_shared<detail::ClientLifeline>();
  // Before everything that may resume an acquire (the keepers' event
  // threads, the listeners), so that it goes after them.
  const std::shared_ptr<detail::TimerThread> timers = std::make_shared<detail::TimerThread>();
  const ClientOptions options;  // validated, defaults filled in
  const std::shared_ptr<spdlog::logger> log;
  const KeeperConfig config;  // of every session; chroot = the namespace
  const std::shared_ptr<detail::SessionInbox> inbox = std::make_shared<detail::SessionInbox>();
  detail::NamespaceKeeper ns;
  detail::CurrentSession current;
  detail::BackgroundRemover remover;
  detail::ListenerDispatcher listeners;
  const std::shared_ptr<detail::CallbackThread> callbacks;
  // The recipes' services (ClientService), by their key. They may outlive
  // the Client (locks hold them); closed by ~Impl, after which they never
  // call back into us. One made after that is closed at once.
  std::mutex services_mutex;
  std::map<const void*, std::shared_ptr<detail::ClientService>> services;  // guarded
  bool services_closed = false;   // guarded by services_mutex
  detail::SessionThread session;  // last: its thread starts once the rest exists
};

Client::Client(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Client::~Client() = default;

bool Client::block_until_connected(std::chrono::milliseconds timeout) {
  return impl_->current.block_until_connected(timeout);
}

std::shared_ptr<Keeper> Client::keeper() const { return impl_->current.keeper(); }

std::uint64_t Client::session_epoch() const { return impl_->current.epoch(); }

ConnectionState Client::state() const { return impl_->current.state(); }

bool Client::is_connected() const { return impl_->current.is_connected(); }

Client::ListenerId Client::add_listener(Listener listener) {
  return impl_->listeners.add(std::move(listener));
}

void Client::remove_listener(ListenerId id) { impl_->listeners.remove(id); }

const RetryPolicy& Client::retry_policy() const { return *impl_->options.retry_policy; }

Sleeper& Client::sleeper() const { return *impl_->options.sleeper; }

bool Client::observed() const noexcept { return impl_->options.observer != nullptr; }

void Client::retrying(int retry, std::chrono::milliseconds delay) const noexcept {
  detail::tell_observer(*impl_->log, [&] {
    impl_->options.observer->retried(
        {.recipe = Recipe::client, .path = {}, .retry = retry, .delay = delay});
  });
}

const ClientOptions& Client::options() const { return impl_->options; }

void Client::remove_in_background(std::string path, std::uint64_t epoch, bool by_name_prefix,
                                  std::int64_t czxid) noexcept {
  impl_->remover.add(std::move(path), epoch, by_name_prefix, czxid);
}

std::shared_ptr<Keeper> Client::keeper_when_connected() const {
  return impl_->current.wait().keeper;
}

std::shared_ptr<Keeper> Client::keeper_when_connected(
    std::chrono::steady_clock::time_point deadline) const {
  return impl_->current.wait(deadline).keeper;
}

Client::Session Client::session_when_connected(
    std::optional<std::chrono::steady_clock::time_point> deadline, std::stop_token stop) const {
  return impl_->current.wait(deadline, std::move(stop));
}

std::optional<Client::Session> Client::session_now(const ChangeCallback& on_change) const {
  return impl_->current.now(on_change);
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
  const auto s = impl_->current.background();
  return {Session{s.keeper, s.epoch}, s.connected};
}

std::shared_ptr<detail::TimerThread> Client::timers() const noexcept { return impl_->timers; }

std::uint64_t Client::suspensions() const { return impl_->current.suspensions(); }

const std::shared_ptr<spdlog::logger>& detail::ClientInternals::log(const Client& client) noexcept {
  return client.impl_->log;
}

}  // namespace zkr
