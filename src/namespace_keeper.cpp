#include "namespace_keeper.hpp"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

#include <spdlog/spdlog.h>

namespace zkr::detail {
namespace {

using std::chrono::milliseconds;

// Pauses between attempts to create a namespace that could not be made: from
// the first to the last, doubling. A refusal (no_auth) costs the ensemble a
// session each time, so the pause grows; a fix by an operator is still seen
// within half a minute.
constexpr milliseconds kRetryFirst{1000};
constexpr milliseconds kRetryLast{30000};

}  // namespace

NamespaceKeeper::NamespaceKeeper(const ClientOptions& options, KeeperConfig config,
                                 std::shared_ptr<SessionInbox> inbox,
                                 std::shared_ptr<spdlog::logger> log, std::function<void()> changed)
    : options_(options),
      config_(std::move(config)),
      inbox_(std::move(inbox)),
      log_(std::move(log)),
      changed_(std::move(changed)),
      retry_delay_(kRetryFirst) {}

bool NamespaceKeeper::admit(SessionState connection, const Client::Session& session) {
  if (!config_.chroot.empty() && !ensure(session)) {
    // Not announced until the namespace exists: nothing could be served.
    withheld_ = connection;
    schedule_retry();
    return false;
  }
  on_other_event();
  return true;
}

void NamespaceKeeper::on_other_event() {
  withheld_.reset();
  retry_at_.reset();
}

void NamespaceKeeper::on_changed(bool connected, const Client::Session& session) {
  watch_epoch_ = 0;                     // a watch fires once
  if (!connected || withheld_) return;  // the next connection looks anyway
  if (!ensure(session)) schedule_retry();
}

std::optional<SessionState> NamespaceKeeper::on_retry(bool connected,
                                                      const Client::Session& session) {
  retry_at_.reset();
  if (!withheld_ && !connected) return std::nullopt;  // the next connection looks anyway
  if (!ensure(session)) {
    schedule_retry();
    return std::nullopt;
  }
  return std::exchange(withheld_, std::nullopt);
}

void NamespaceKeeper::on_session_ended() {
  // A connection held back for its namespace belonged to the session.
  withheld_.reset();
  retry_at_.reset();
}

void NamespaceKeeper::schedule_retry() {
  retry_at_ = Clock::now() + retry_delay_;
  retry_delay_ = std::min(retry_delay_ * 2, kRetryLast);
}

std::optional<KeeperError> NamespaceKeeper::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

bool NamespaceKeeper::failed() const {
  std::lock_guard lock(mutex_);
  return error_.has_value();
}

// The namespace exists, or was just created: true. Else false, with the
// reason kept for callers unless it was only the link (then they wait for a
// connection as usual). Blocks up to two connection timeouts.
bool NamespaceKeeper::ensure(const Client::Session& session) {
  const auto& path = config_.chroot;
  const auto timeout = options_.connection_timeout;
  const auto for_epoch = session.epoch;
  try {
    // Through the session's own handle "/" is the namespace node. The watch
    // (one per session; exists leaves it whether or not the node exists)
    // brings us back here when the node is deleted.
    Watcher watcher;
    if (watch_epoch_ != for_epoch) {
      watcher = [inbox = inbox_, for_epoch](const WatchEvent& e) {
        if (e.type != EventType::session_ended) inbox->push_namespace_changed(for_epoch);
      };
    }
    const auto stat =
        await_reply(session.keeper->async_exists("/", std::move(watcher)), timeout, path);
    if (stat.error() != Errc::ok && stat.error() != Errc::no_node)
      throw KeeperError(stat.error(), path, "looking for the namespace");
    watch_epoch_ = for_epoch;
    if (!stat.ok()) create();
  } catch (const std::exception& e) {
    const auto* keeper_error = dynamic_cast<const KeeperError*>(&e);
    const Errc code = keeper_error ? keeper_error->errc() : Errc::system_error;
    const std::string why = "the namespace " + path + " could not be created (" + e.what() + ")";
    log_->error("{}; trying again in {} ms", why, retry_delay_.count());
    // A lost link says nothing about the namespace: callers keep waiting for
    // a connection. Anything else (no_auth, invalid_acl, ...) is the answer.
    {
      std::lock_guard lock(mutex_);
      if (!is_connection_error(code))
        error_ = KeeperError(code, path, why + "; the client goes on trying");
    }
    changed_();
    return false;
  }
  retry_delay_ = kRetryFirst;
  {
    std::lock_guard lock(mutex_);
    error_.reset();
  }
  changed_();
  return true;
}

// Creates the namespace node and its parents under namespace_acl, through a
// handle without chroot, which it closes. Throws what went wrong.
void NamespaceKeeper::create() {
  struct Connected {
    std::mutex mutex;
    std::condition_variable cv;
    std::optional<bool> up;  // true: connected; false: the handle died
  };
  const auto signal = std::make_shared<Connected>();
  auto bootstrap_config = config_;
  bootstrap_config.chroot.clear();
  // The parents are shared with whoever else uses them: they must not get
  // the creator-only default of a Client with auth, which would lock every
  // other identity out of them.
  bootstrap_config.default_acl = *options_.namespace_acl;
  const auto& path = config_.chroot;
  const auto timeout = options_.connection_timeout;
  auto k = options_.keeper_factory(bootstrap_config, [signal](SessionState s) {
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
  log_->info("created namespace {}", path);
}

}  // namespace zkr::detail
