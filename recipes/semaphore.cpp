// The counting semaphore on Curator's InterProcessSemaphoreV2 layout, its
// leases, and the semaphore mutex made of one lease.
#include "zkr/semaphore.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <stdexcept>

#include "acquire_calls.hpp"
#include "client_internals.hpp"
#include "lease_state.hpp"
#include "lock_directory.hpp"
#include "lock_driver.hpp"
#include "lock_internals.hpp"
#include "owned_delete.hpp"
#include "zkr/path.hpp"

namespace zkr {

SemaphoreLimit SemaphoreLimit::fixed(std::int32_t max_leases) {
  if (max_leases < 1)
    throw std::invalid_argument("a semaphore needs at least 1 lease, got " +
                                std::to_string(max_leases));
  SemaphoreLimit limit;
  limit.fixed_ = max_leases;
  return limit;
}

SemaphoreLimit SemaphoreLimit::shared_count(std::string path) {
  validate_path(path);
  SemaphoreLimit limit;
  limit.count_path_ = std::move(path);
  return limit;
}

namespace detail {
namespace {

constexpr std::string_view kLocksChild = "locks";
constexpr std::string_view kLeasesChild = "leases";

// Start over: the internal mutex was lost, or our lease node vanished.
struct StartOver {};

// Wakes a waiting contender: a watch on the leases (or the count) fired, or
// the internal mutex was lost.
class Wake {
 public:
  void raise() {
    {
      std::lock_guard lock(mutex_);
      raised_ = true;
    }
    cv_.notify_all();
  }
  // False if `until` came with nothing raised.
  bool wait_until(Clock::time_point until) {
    std::unique_lock lock(mutex_);
    const bool raised = cv_.wait_until(lock, until, [&] { return raised_; });
    raised_ = false;
    return raised;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool raised_ = false;  // guarded by mutex_
};

// The value of a Curator SharedCount: a 4-byte big-endian integer.
std::int32_t shared_count_value(const Result<NodeData>& node, const std::string& path) {
  if (node.error() == Errc::no_node)
    throw KeeperError(Errc::bad_arguments, path, "the semaphore's SharedCount node does not exist");
  if (!node.ok()) throw KeeperError(node.error(), path, "reading the semaphore's SharedCount");
  const std::string& data = node.value().data;
  if (data.size() != 4)
    throw KeeperError(Errc::bad_arguments, path,
                      "a SharedCount holds 4 bytes (a big-endian integer), this node " +
                          std::to_string(data.size()));
  std::uint32_t value = 0;
  for (const char byte : data) value = (value << 8) | static_cast<unsigned char>(byte);
  const auto count = static_cast<std::int32_t>(value);
  if (count < 1)
    throw KeeperError(
        Errc::bad_arguments, path,
        "the semaphore's SharedCount is " + std::to_string(count) + "; at least 1 lease is needed");
  return count;
}

}  // namespace

// A semaphore never shares its path with kazoo (whose semaphore has another
// layout): its internal mutex refuses kazoo's nodes whatever the options say.
LockOptions without_kazoo(LockOptions options) {
  options.share_with_kazoo = false;
  return options;
}

struct SemaphoreCore {
  SemaphoreCore(Client& c, std::string path, SemaphoreLimit l, const LockOptions& o)
      : client(c),
        dir(std::move(path)),
        leases_dir(join_path(dir, std::string(kLeasesChild))),
        limit(std::move(l)),
        options(o),
        holder(checked_holder_id(o.holder_id)),
        create_options{.acl = o.acl.value_or(open_acl_unsafe()), .ttl = {}},
        locks(c, join_path(dir, std::string(kLocksChild)), without_kazoo(o)),
        lifeline(detail::ClientInternals::lifeline(c)),
        log(c.options().logger) {}

  // One lease, or nullptr if the deadline or a stop came first.
  std::shared_ptr<LeaseState> acquire_one(Deadline deadline, const std::stop_token& stop) {
    RetryBudget budget(client.retry_policy(), client.sleeper(), deadline);
    for (;;) {
      auto mutex = acquire_naming(locks, deadline, {}, stop);
      if (!mutex) return nullptr;
      try {
        auto lease = grant_while_holding(*mutex, deadline, stop);
        locks.release(mutex);
        return lease;
      } catch (const StartOver&) {
        locks.release(mutex);
        log->debug("semaphore {}: starting over", dir);
      } catch (const KeeperError& e) {
        locks.release(mutex);
        // The session ended under us (its keeper says session_expired, or
        // closing once the Client has replaced it): its nodes are gone, and
        // a lock's waiter would queue again in the next one; so do we.
        const bool session_ended =
            options.requeue_after_session_loss && client.session_epoch() != mutex->epoch;
        const auto step =
            is_retryable(e.errc()) || session_ended ? budget.next() : RetryBudget::Step{};
        if (step.verdict == RetryBudget::Verdict::give_up) rethrow_naming(e, dir);
        if (step.verdict == RetryBudget::Verdict::past_deadline || stop.stop_requested())
          return nullptr;
        budget.sleep(step);
      } catch (...) {
        locks.release(mutex);
        throw;
      }
    }
  }

  // Gives a lease back, if the Client still can (else its session took it).
  void give_back(const std::shared_ptr<LeaseState>& lease) noexcept {
    ClientLifeline::Visit visit(*lifeline);
    if (visit) release_node(client, lease);
    else lease->mark_released();
  }

  std::vector<std::string> lease_nodes() {
    auto names = client.with_retry([&](Keeper& keeper) {
      auto listed = keeper.try_children(leases_dir);
      if (listed.error() == Errc::no_node) return std::vector<std::string>{};
      return std::move(listed).value().names;
    });
    std::erase_if(names, [](const std::string& n) { return !sequence_of(n); });
    std::sort(names.begin(), names.end(),
              [](const auto& a, const auto& b) { return *sequence_of(a) < *sequence_of(b); });
    for (auto& name : names) name = join_path(leases_dir, name);
    return names;
  }

  Client& client;
  const std::string dir;
  const std::string leases_dir;
  const SemaphoreLimit limit;
  const LockOptions options;
  const std::string holder;
  const CreateOptions create_options;
  LockInternals locks;  // the internal mutex, at <dir>/locks
  const std::shared_ptr<ClientLifeline> lifeline;
  const std::shared_ptr<spdlog::logger> log;

 private:
  static std::optional<std::string_view> sequence_of(std::string_view name) {
    const auto at = name.rfind(kLeaseName);
    if (at == std::string_view::npos || name.size() - at - kLeaseName.size() < 10)
      return std::nullopt;
    return name.substr(at + kLeaseName.size());
  }

  // A reply within a session timeout, and never more than one past the deadline.
  template <class T>
  Result<T> await(Keeper& keeper, std::future<Result<T>> reply, const std::string& path,
                  const Deadline& deadline) {
    auto until = Clock::now() + keeper.default_timeout();
    if (deadline) until = std::min(until, detail::later_by(*deadline, keeper.default_timeout()));
    return await_reply(std::move(reply), until, path);
  }

  // Holding the internal mutex: create our lease node, and wait until the
  // lease nodes are at most the limit. nullptr: the deadline or a stop came
  // first. Throws StartOver, or KeeperError; our node is deleted on every
  // way out but the grant.
  std::shared_ptr<LeaseState> grant_while_holding(LeaseState& mutex, const Deadline& deadline,
                                                  const std::stop_token& stop) {
    auto keeper = client.keeper();
    if (!keeper || client.session_epoch() != mutex.epoch) throw StartOver{};
    const auto epoch = mutex.epoch;
    const std::string prefix = join_path(
        leases_dir, std::string(kProtectedPrefix) + new_guid() + "-" + std::string(kLeaseName));
    auto created = await(
        *keeper,
        keeper->async_create(prefix, holder, CreateMode::ephemeral_sequential, create_options),
        prefix, deadline);
    if (created.error() == Errc::no_node) {
      const auto made = await(*keeper,
                              keeper->async_create(leases_dir, std::string(kLockDirectoryMark),
                                                   CreateMode::container, create_options),
                              leases_dir, deadline);
      if (!made.ok() && made.error() != Errc::node_exists)
        throw KeeperError(made.error(), leases_dir, "creating the semaphore's leases directory");
      created = await(
          *keeper,
          keeper->async_create(prefix, holder, CreateMode::ephemeral_sequential, create_options),
          prefix, deadline);
    }
    if (!created.ok()) {
      // A create whose reply was lost may still be applied: its node goes by name.
      if (is_connection_error(created.error()) || created.error() == Errc::operation_timeout)
        detail::ClientInternals::remove_in_background(client, prefix, epoch,
                                                      /*by_name_prefix=*/true);
      throw KeeperError(created.error(), prefix, "creating the lease node");
    }
    const std::string node = created.value().path;
    const std::string name(node_name(node));
    struct Abandon {
      SemaphoreCore& core;
      const std::string& node;
      std::uint64_t epoch;
      std::int64_t czxid;
      bool armed = true;
      ~Abandon() {
        if (armed) core.remove_now_or_later(node, epoch, czxid);
      }
    } abandon{*this, node, epoch, created.value().stat.czxid};

    auto wake = std::make_shared<Wake>();
    const auto watcher = [weak = std::weak_ptr<Wake>(wake)](const WatchEvent&) {
      if (auto w = weak.lock()) w->raise();
    };
    std::stop_callback on_mutex_lost(mutex.token(), [wake] { wake->raise(); });
    std::stop_callback on_stop(stop, [wake] { wake->raise(); });
    for (;;) {
      if (stop.stop_requested()) return nullptr;
      // Every listing we may be granted on comes with one of the semaphore's
      // path: another protocol's nodes there, arrived while we waited too.
      auto siblings_reply = keeper->async_children(dir);
      auto listed_reply = keeper->async_children(leases_dir, watcher);
      std::optional<std::future<Result<NodeData>>> count_reply;
      if (!limit.fixed_value()) count_reply = keeper->async_get(limit.count_path(), watcher);
      refuse_foreign_nodes(await(*keeper, std::move(siblings_reply), dir, deadline));
      const auto listed = await(*keeper, std::move(listed_reply), leases_dir, deadline);
      if (!listed.ok() && listed.error() != Errc::no_node)
        throw KeeperError(listed.error(), leases_dir, "listing the semaphore's leases");
      const auto max = limit.fixed_value()
                           ? *limit.fixed_value()
                           : shared_count_value(await(*keeper, std::move(*count_reply),
                                                      limit.count_path(), deadline),
                                                limit.count_path());
      const auto& names = listed.ok() ? listed.value().names : std::vector<std::string>{};
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        log->warn("semaphore {}: our lease node {} vanished; starting over", dir, name);
        throw StartOver{};
      }
      // Only the internal mutex's holder may be granted: lost, we stop.
      if (mutex.reason() != LostReason::none) throw StartOver{};
      // Curator counts every child of leases/, so must we.
      if (names.size() <= static_cast<std::size_t>(max)) {
        // The decision is this listing's: a suspension counted later fell in the hold.
        const auto suspensions = detail::ClientInternals::suspensions(client);
        auto lease = std::make_shared<LeaseState>(node, created.value().stat.czxid, epoch,
                                                  keeper->session_id(),
                                                  detail::ClientInternals::callback_thread(client));
        watch_own_node(client, lease, keeper);
        listen_for_loss(client, lease, options.suspended_policy, suspensions);
        abandon.armed = false;
        return lease;
      }
      // Without a deadline we still look again once per session timeout: a
      // watch is one message, and a lost one must not mean waiting forever.
      const auto safety = Clock::now() + keeper->default_timeout();
      const auto until = deadline ? std::min(*deadline, safety) : safety;
      if (!wake->wait_until(until) && deadline && Clock::now() >= *deadline) return nullptr;
      if (stop.stop_requested()) return nullptr;
    }
  }

  // Throws foreign_lock_protocol for another protocol's nodes in the
  // semaphore's path (a listing of it): neither would see the other.
  void refuse_foreign_nodes(const Result<Children>& siblings) const {
    if (!siblings.ok() && siblings.error() != Errc::no_node)
      throw KeeperError(siblings.error(), dir, "listing the semaphore's path");
    if (!siblings.ok()) return;
    if (const auto foreign =
            find_foreign_lock_nodes(siblings.value().names, QueueFamily::semaphore))
      throw KeeperError(Errc::foreign_lock_protocol, dir,
                        foreign->description() +
                            " uses this semaphore's path; neither protocol sees the other's "
                            "nodes, so both would be granted at once: refusing to queue beside it" +
                            with_advice(*foreign, QueueFamily::semaphore));
  }

  // Deletes our lease node only once a read shows it ours (owned_delete.hpp).
  void remove_now_or_later(const std::string& node, std::uint64_t epoch,
                           std::int64_t czxid) noexcept {
    try {
      auto keeper = client.keeper();
      if (keeper && client.session_epoch() == epoch && client.is_connected()) {
        const auto removed = detail::remove_if_ours_now(keeper, node, {keeper->session_id(), czxid},
                                                        log, 2 * keeper->default_timeout());
        if (removed.ok()) return;  // deleted, gone, or not ours (logged)
      }
      detail::ClientInternals::remove_in_background(client, node, epoch, false, czxid);
    } catch (const std::exception& e) {
      log->error("semaphore {}: deleting {}: {}", dir, node, e.what());
    }
  }
};

}  // namespace detail

// ---- SemaphoreLease

SemaphoreLease::SemaphoreLease(std::shared_ptr<detail::SemaphoreCore> core,
                               std::shared_ptr<detail::LeaseState> state)
    : core_(std::move(core)), state_(std::move(state)), lease_(state_) {}

SemaphoreLease::SemaphoreLease(SemaphoreLease&& other) noexcept
    : core_(other.core_),
      state_(other.state_),
      lease_(other.lease_),
      held_(std::exchange(other.held_, false)) {}

SemaphoreLease& SemaphoreLease::operator=(SemaphoreLease&& other) noexcept {
  if (this != &other) {
    (void)release();
    core_ = other.core_;
    state_ = other.state_;
    lease_ = other.lease_;
    held_ = std::exchange(other.held_, false);
  }
  return *this;
}

SemaphoreLease::~SemaphoreLease() { (void)release(); }

bool SemaphoreLease::release() noexcept {
  if (!std::exchange(held_, false)) return false;
  core_->give_back(state_);
  return true;
}

// ---- InterProcessSemaphoreV2

InterProcessSemaphoreV2::InterProcessSemaphoreV2(Client& client, std::string path,
                                                 SemaphoreLimit limit, LockOptions options)
    : core_(std::make_shared<detail::SemaphoreCore>(
          client, detail::checked_lock_path(std::move(path), kMaxSemaphorePathLength),
          std::move(limit), options)) {}

InterProcessSemaphoreV2::~InterProcessSemaphoreV2() = default;

std::vector<SemaphoreLease> InterProcessSemaphoreV2::acquire(int n) {
  auto leases = try_acquire_until(n, std::chrono::steady_clock::time_point::max());
  if (leases.empty()) throw KeeperError(Errc::operation_timeout, core_->dir, "acquire gave up");
  return leases;
}

std::vector<SemaphoreLease> InterProcessSemaphoreV2::acquire(int n, std::stop_token stop) {
  auto leases = try_acquire_until(n, std::chrono::steady_clock::time_point::max(), stop);
  if (leases.empty() && !stop.stop_requested())
    throw KeeperError(Errc::operation_timeout, core_->dir, "acquire gave up");
  return leases;
}

std::vector<SemaphoreLease> InterProcessSemaphoreV2::try_acquire(int n,
                                                                 std::chrono::milliseconds timeout,
                                                                 std::stop_token stop) {
  return try_acquire_until(n, zkr::deadline_after(timeout), std::move(stop));
}

std::vector<SemaphoreLease> InterProcessSemaphoreV2::try_acquire_until(
    int n, std::chrono::steady_clock::time_point deadline, std::stop_token stop) {
  if (n < 1)
    throw std::invalid_argument("a semaphore acquire needs n >= 1, got " + std::to_string(n));
  if (const auto max = core_->limit.fixed_value(); max && n > *max)
    throw std::invalid_argument("asked for " + std::to_string(n) + " leases of a semaphore of " +
                                std::to_string(*max));
  detail::ClientLifeline::Visit visit(*core_->lifeline);
  detail::check_may_acquire(visit, core_->client, "InterProcessSemaphoreV2", core_->dir);
  const detail::Deadline bound =
      deadline == std::chrono::steady_clock::time_point::max() ? detail::Deadline{} : deadline;
  if (stop.stop_requested()) return {};
  if (!detail::connected_by(core_->client, bound, core_->dir, stop)) return {};
  std::vector<SemaphoreLease> leases;
  for (int i = 0; i < n; ++i) {
    auto state = core_->acquire_one(bound, stop);
    if (!state) return {};  // those granted go back as the vector goes
    leases.emplace_back(core_, std::move(state));
  }
  return leases;
}

std::vector<std::string> InterProcessSemaphoreV2::participant_nodes() const {
  detail::ClientLifeline::Visit visit(*core_->lifeline);
  if (!visit) throw detail::client_gone(core_->dir);
  return core_->lease_nodes();
}

const std::string& InterProcessSemaphoreV2::path() const noexcept { return core_->dir; }

// ---- CuratorSemaphoreMutex

CuratorSemaphoreMutex::CuratorSemaphoreMutex(Client& client, std::string path, LockOptions options)
    : semaphore_(client, std::move(path), SemaphoreLimit::fixed(1), std::move(options)) {}

CuratorSemaphoreMutex::~CuratorSemaphoreMutex() {
  while (release()) {
  }
}

bool CuratorSemaphoreMutex::take(std::optional<std::chrono::steady_clock::time_point> deadline,
                                 std::stop_token stop) {
  // The semaphore spells "no deadline" time_point::max().
  auto leases = semaphore_.try_acquire_until(
      1, deadline.value_or(std::chrono::steady_clock::time_point::max()), std::move(stop));
  if (leases.empty()) return false;
  std::lock_guard lock(mutex_);
  grants_.push_back(std::move(leases.front()));
  return true;
}
bool CuratorSemaphoreMutex::release() noexcept {
  std::optional<SemaphoreLease> oldest;
  {
    std::lock_guard lock(mutex_);
    if (grants_.empty()) return false;
    oldest.emplace(std::move(grants_.front()));
    grants_.pop_front();
  }
  (void)oldest->release();
  return true;
}
bool CuratorSemaphoreMutex::is_acquired_in_this_process() const {
  std::lock_guard lock(mutex_);
  return !grants_.empty();
}
LockLease CuratorSemaphoreMutex::lease() const {
  std::lock_guard lock(mutex_);
  if (grants_.empty())
    throw std::logic_error("CuratorSemaphoreMutex " + path() + ": lease() while not held");
  return grants_.back().lease();
}

}  // namespace zkr
