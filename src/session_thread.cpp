#include "session_thread.hpp"

#include <exception>
#include <stdexcept>
#include <utility>

#include <spdlog/spdlog.h>

#include "current_session.hpp"
#include "namespace_keeper.hpp"

namespace zkr::detail {
namespace {

using std::chrono::milliseconds;

// After a failed attempt to open a new session (the factory threw), the
// session thread tries again this much later.
constexpr milliseconds kReopenDelay{1000};

}  // namespace

SessionThread::SessionThread(const ClientOptions& options, const KeeperConfig& config,
                             std::shared_ptr<SessionInbox> inbox,
                             std::shared_ptr<spdlog::logger> log, CurrentSession& current,
                             NamespaceKeeper& ns, Hooks hooks)
    : options_(options),
      config_(config),
      inbox_(std::move(inbox)),
      log_(std::move(log)),
      current_(current),
      ns_(ns),
      hooks_(std::move(hooks)),
      machine_(options.lost_when_suspended_too_long) {
  current_.begin(open_keeper(1));  // a failure here fails the Client's constructor
  thread_ = std::thread([this] { run(); });
}

SessionThread::~SessionThread() {
  if (!thread_.joinable()) return;
  inbox_->close();
  thread_.join();
}

void SessionThread::stop() {
  inbox_->close();
  if (thread_.joinable()) thread_.join();
  end_sessions_for_good();
  if (auto last = current_.keeper()) last->close();
}

std::shared_ptr<Keeper> SessionThread::open_keeper(std::uint64_t for_epoch) {
  auto k = options_.keeper_factory(
      config_, [inbox = inbox_, for_epoch](SessionState s) { inbox->push(for_epoch, s); });
  if (!k) throw std::runtime_error("ClientOptions::keeper_factory returned no keeper");
  return k;
}

void SessionThread::run() {
  for (;;) {
    SessionInbox::Event event;
    const auto wake = inbox_->wait(next_deadline(), event);
    if (wake == SessionInbox::Wake::closed) return;
    if (wake == SessionInbox::Wake::event) {
      on_event(event);
    } else {
      on_deadline();
    }
    update_timer();
  }
}

std::optional<SessionThread::Clock::time_point> SessionThread::next_deadline() const {
  std::optional<Clock::time_point> next;
  for (const auto& d : {timer_, reopen_at_, ns_.retry_at()})
    if (d && (!next || *d < *next)) next = d;
  return next;
}

void SessionThread::on_event(const SessionInbox::Event& event) {
  if (event.epoch != current_.epoch()) return;  // from a session we replaced
  const Client::Session session{current_.keeper(), event.epoch};
  if (event.namespace_changed) {
    ns_.on_changed(machine_.is_connected(), session);
    return;
  }
  log_->debug("session event {} (epoch {})", to_string(event.state), event.epoch);
  const bool up =
      event.state == SessionState::connected || event.state == SessionState::connected_read_only;
  if (up) {
    if (!ns_.admit(event.state, session)) return;
  } else {
    ns_.on_other_event();
  }
  apply(machine_.on_session(event.state));
}

void SessionThread::on_deadline() {
  const auto now = Clock::now();
  if (const auto at = ns_.retry_at(); at && now >= *at) {
    const Client::Session session{current_.keeper(), current_.epoch()};
    if (const auto held = ns_.on_retry(machine_.is_connected(), session))
      apply(machine_.on_session(*held));
  }
  if (reopen_at_ && now >= *reopen_at_) {
    reopen_at_.reset();
    replace_session();
  }
  if (timer_ && now >= *timer_) {
    timer_.reset();
    log_->warn("suspended for a whole session timeout: treating session {:#x} as lost",
               current_.keeper()->session_id());
    apply(machine_.on_suspended_too_long());
  }
}

// The new session is opened before listeners hear lost, so that they see
// its epoch, and keeper_when_connected() waits for it rather than the old one.
// After auth_failed no new session comes, but lost still moves the epoch
// on, as recipes expect of it.
void SessionThread::apply(const Transition& t) {
  if (t.announce) record(*t.announce);
  if (t.open_new_session && !machine_.auth_failed()) replace_session();
  else if (machine_.auth_failed() && t.announce == ConnectionState::lost) end_sessions_for_good();
  if (t.announce) announce(*t.announce);
}

// The current session is over and no other will follow (auth failed, or
// the Client is closing). The epoch moves on all the same: leases of the
// old session see it ended, and an acquire waiting for a session after it
// stops waiting and learns why from keeper_when_connected().
void SessionThread::end_sessions_for_good() { current_.end_epoch(); }

void SessionThread::record(ConnectionState s) {
  current_.record(s, machine_.is_connected(), machine_.auth_failed());
  if (machine_.is_connected()) hooks_.connected();
}

void SessionThread::announce(ConnectionState s) {
  const auto level = s == ConnectionState::lost ? spdlog::level::warn : spdlog::level::info;
  log_->log(level, "connection to {}: {}", options_.connect_string, to_string(s));
  if (machine_.auth_failed())
    log_->error("authentication failed on {}: no new session will be opened",
                options_.connect_string);
  hooks_.announce(s);
}

// Runs the timer while the machine wants it; measured from the moment it was
// first wanted, by the session timeout the server granted.
void SessionThread::update_timer() {
  if (!machine_.timer_wanted()) {
    timer_.reset();
  } else if (!timer_) {
    auto timeout = current_.keeper()->session_timeout();
    if (timeout <= milliseconds::zero()) timeout = options_.session_timeout;
    timer_ = Clock::now() + timeout;
  }
}

// The current session is dead, or must be taken as dead: end it, then open
// a new one. Ending it comes first and cannot fail: the epoch moves on and
// the old handle is closed whatever happens when the next session is opened
// (a host name that does not resolve during an outage makes the factory
// throw), because every lease of the old session is lost from this moment.
void SessionThread::replace_session() {
  if (!current_ended_) end_current_session();
  std::shared_ptr<Keeper> fresh;
  const auto for_epoch = current_.epoch();
  try {
    fresh = open_keeper(for_epoch);
  } catch (const std::exception& e) {
    log_->error("could not open a new session to {}: {}; trying again in {} ms",
                options_.connect_string, e.what(), kReopenDelay.count());
    reopen_at_ = Clock::now() + kReopenDelay;
    return;
  }
  // The handle replaced is dropped outside the Client's lock: the last
  // reference may be this one, and closing a keeper waits for its
  // callbacks, which may be taking that lock (a lock attempt asking for the
  // epoch).
  auto replaced = current_.replace(std::move(fresh));
  replaced.reset();
  current_ended_ = false;
  log_->info("opening session epoch {} to {}", for_epoch, options_.connect_string);
}

// Close the old handle even if a caller still holds it. When it was only
// suspended (the whole ensemble stalled, say), the server may still have the
// session: left open, the handle would reconnect and keep its ephemeral
// nodes, lock nodes included, alive forever, while we announce it lost.
// Closed, its nodes go at once, or when the server expires it. Until a new
// session opens, the current keeper is this closed handle: its calls fail
// with closing.
void SessionThread::end_current_session() {
  ns_.on_session_ended();
  const auto old = current_.end_epoch();
  current_ended_ = true;
  if (old) old->close();
}

}  // namespace zkr::detail
