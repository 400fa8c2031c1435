#include "current_session.hpp"

#include <algorithm>
#include <utility>

#include "namespace_keeper.hpp"

namespace zkr::detail {

using std::chrono::milliseconds;

CurrentSession::CurrentSession(std::string connect_string, milliseconds connection_timeout,
                               const NamespaceKeeper& ns)
    : connect_string_(std::move(connect_string)),
      connection_timeout_(connection_timeout),
      ns_(ns) {}

void CurrentSession::begin(std::shared_ptr<Keeper> first) {
  std::lock_guard lock(mutex_);
  keeper_ = std::move(first);
  epoch_ = 1;
}

std::shared_ptr<Keeper> CurrentSession::end_epoch() {
  std::lock_guard lock(mutex_);
  ++epoch_;
  return keeper_;
}

std::shared_ptr<Keeper> CurrentSession::replace(std::shared_ptr<Keeper> fresh) {
  std::lock_guard lock(mutex_);
  return std::exchange(keeper_, std::move(fresh));
}

void CurrentSession::record(ConnectionState s, bool connected, bool auth_failed) {
  {
    std::lock_guard lock(mutex_);
    state_ = s;
    if (s == ConnectionState::suspended) ++suspensions_;
    connected_ = connected;
    auth_failed_ = auth_failed;
  }
  changed();
}

void CurrentSession::close() {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
    connected_ = false;
  }
  changed();
}

std::shared_ptr<Keeper> CurrentSession::take_keeper() {
  std::lock_guard lock(mutex_);
  return std::move(keeper_);
}

void CurrentSession::changed() {
  std::vector<std::weak_ptr<std::function<void()>>> waiters;
  {
    std::lock_guard lock(mutex_);
    ++changes_;
    waiters.swap(change_waiters_);
  }
  connected_cv_.notify_all();
  for (const auto& waiter : waiters)
    if (const auto call = waiter.lock()) (*call)();
}

std::shared_ptr<Keeper> CurrentSession::keeper() const {
  std::lock_guard lock(mutex_);
  return keeper_;
}

std::uint64_t CurrentSession::epoch() const {
  std::lock_guard lock(mutex_);
  return epoch_;
}

ConnectionState CurrentSession::state() const {
  std::lock_guard lock(mutex_);
  return state_.value_or(ConnectionState::suspended);
}

bool CurrentSession::is_connected() const {
  std::lock_guard lock(mutex_);
  return connected_;
}

std::uint64_t CurrentSession::suspensions() const {
  std::lock_guard lock(mutex_);
  return suspensions_;
}

BackgroundRemover::Session CurrentSession::background() const {
  std::lock_guard lock(mutex_);
  return {keeper_, epoch_, connected_ && !closing_};
}

Client::Session CurrentSession::wait(std::optional<Clock::time_point> deadline,
                                     std::stop_token stop) const {
  const auto start = Clock::now();
  auto until = detail::deadline_after(connection_timeout_, start);
  if (deadline && *deadline < until) until = *deadline;
  std::unique_lock lock(mutex_);
  // A handle learns that its session is over before its event reaches us
  // (the C client sets its state, then queues the event), and meanwhile
  // fails every request at once: a caller that retried on it would spin.
  // So wait past it, for the session thread to replace it. Asked without
  // our mutex, since the Keeper's own lock is taken by its event thread.
  std::optional<std::uint64_t> dead_epoch;
  std::optional<KeeperError> ns_error;
  const auto usable = [&] { return connected_ && epoch_ != dead_epoch; };
  for (;;) {
    connected_cv_.wait_until(lock, stop, until,
                             [&] { return usable() || closing_ || auth_failed_ || ns_.failed(); });
    // Read once, so that what is decided here and what is thrown agree.
    ns_error = ns_.error();
    if (!usable() || closing_ || ns_error) break;
    const auto candidate = keeper_;
    const auto candidate_epoch = epoch_;
    lock.unlock();
    const auto said = candidate->session_state();
    lock.lock();
    if (said != SessionState::expired && said != SessionState::auth_failed) {
      if (candidate_epoch == epoch_ && usable()) return {candidate, candidate_epoch};
      continue;  // replaced meanwhile: look at the new one
    }
    dead_epoch = candidate_epoch;
  }
  if (auto final = final_error(ns_error)) throw *final;
  if (stop.stop_requested())
    throw KeeperError(Errc::connection_loss, "", "stopped while waiting for a connection");
  const auto waited = std::chrono::duration_cast<milliseconds>(until - start);
  throw KeeperError(Errc::connection_loss, "",
                    "not connected to " + connect_string_ + " within " +
                        std::to_string(std::max(waited, milliseconds::zero()).count()) + " ms");
}

// Why no session will serve (mutex_ held): the Client is closing, the
// namespace cannot be made (`ns_error`, as just read), or the ensemble
// refused the credentials.
std::optional<KeeperError> CurrentSession::final_error(
    const std::optional<KeeperError>& ns_error) const {
  if (closing_) return KeeperError(Errc::closing, "", "the client is closing");
  // Before connected: the namespace may have gone, and failed to come back,
  // while the session stayed up.
  if (ns_error) return ns_error;
  if (auth_failed_)
    return KeeperError(
        Errc::auth_failed, "",
        "authentication failed on " + connect_string_ +
            " (the ensemble refused the credentials; no new session will be opened)");
  return std::nullopt;
}

std::optional<Client::Session> CurrentSession::now(
    const std::shared_ptr<std::function<void()>>& on_change) const {
  std::unique_lock lock(mutex_);
  for (;;) {
    const auto ns_error = ns_.error();
    if (closing_ || ns_error || !connected_)
      if (auto final = final_error(ns_error)) throw *final;
    if (!connected_) break;
    // As in wait(): a handle that already knows its session ended is not
    // handed out; the session thread's replacement of it is a change.
    const auto candidate = keeper_;
    const auto candidate_epoch = epoch_;
    const auto seen = changes_;
    lock.unlock();
    const auto said = candidate->session_state();
    lock.lock();
    // A change came meanwhile (or the epoch moved on): look again.
    if (changes_ != seen || candidate_epoch != epoch_ || !connected_) continue;
    if (said != SessionState::expired && said != SessionState::auth_failed)
      return Client::Session{candidate, candidate_epoch};
    break;
  }
  if (on_change) {
    std::erase_if(change_waiters_, [](const auto& w) { return w.expired(); });
    change_waiters_.push_back(on_change);
  }
  return std::nullopt;
}

bool CurrentSession::block_until_connected(milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  connected_cv_.wait_until(lock, zkr::deadline_after(timeout),
                           [&] { return connected_ || closing_ || auth_failed_ || ns_.failed(); });
  return connected_ && !closing_ && !ns_.failed();
}

}  // namespace zkr::detail
