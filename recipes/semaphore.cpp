// The counting semaphore on Curator's InterProcessSemaphoreV2 layout, its
// leases, and the semaphore mutex made of one lease.
#include "zkr/semaphore.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <future>
#include <stdexcept>

#include "acquire_calls.hpp"
#include "client_internals.hpp"
#include "grant_state.hpp"
#include "lock_directory.hpp"
#include "lock_driver.hpp"
#include "lock_internals.hpp"
#include "task.hpp"
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

// A semaphore never shares its path with kazoo (whose semaphore has another
// layout): its internal mutex refuses kazoo's nodes whatever the options say.
LockOptions without_kazoo(LockOptions options) {
  options.share_with_kazoo = false;
  return options;
}

// The leases directory is left to the server (a container, removed once
// empty): the registry's removal pins a directory with a probe child, and
// in leases/ every child counts as a lease, for Curator's contenders too.
LockOptions for_leases(LockOptions options) {
  options.remove_directory_on_release = false;
  return options;
}

// Curator's InterProcessSemaphoreV2 on the lock attempt: take the internal
// mutex at <path>/locks, then queue a lease node in <path>/leases under it
// (LeaseQueue: granted once the leases number at most the limit), then give
// the mutex back. Both steps are the one attempt of lock_internals.hpp, with
// its session binding, own-node watch, retry budget and cleanup; the lease
// is granted only while the mutex is still held, in the same session.
struct SemaphoreCore {
  SemaphoreCore(Client& c, std::string path, SemaphoreLimit l, const LockOptions& o)
      : client(c),
        dir(std::move(path)),
        leases_dir(join_path(dir, std::string(kCuratorSemaphoreLeases))),
        limit(std::move(l)),
        locks(c, join_path(dir, std::string(kCuratorSemaphoreLocks)), without_kazoo(o)),
        leases(c, leases_dir, for_leases(o), QueueKind::mutex,
               LeaseQueue{.semaphore_dir = dir,
                          .fixed_max = limit.fixed_value(),
                          .count_path = limit.count_path()}),
        lifeline(detail::ClientInternals::lifeline(c)),
        log(detail::ClientInternals::log(c)) {}

  // Gives a lease back, if the Client still can (else its session took it).
  void give_back(const std::shared_ptr<GrantState>& lease) noexcept {
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
  LockInternals locks;   // the internal mutex, at <dir>/locks
  LockInternals leases;  // the lease queue, at <dir>/leases
  const std::shared_ptr<ClientLifeline> lifeline;
  const std::shared_ptr<spdlog::logger> log;

 private:
  static std::optional<std::string_view> sequence_of(std::string_view name) {
    const auto at = name.rfind(kLeaseName);
    if (at == std::string_view::npos || name.size() - at - kLeaseName.size() < 10)
      return std::nullopt;
    return name.substr(at + kLeaseName.size());
  }
};

namespace {

using Leases = std::vector<std::shared_ptr<GrantState>>;

bool is_under_grant_lost(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const UnderGrantLost&) {
    return true;
  } catch (...) {
    return false;
  }
}

// n leases of a semaphore, all or none: for each, the internal mutex, then
// a lease node under it, then the mutex given back. A chain of callbacks on
// one small record rather than coroutines around the two acquisitions:
// their frames would stay allocated for as long as the acquire waits, two
// more per waiter, and a semaphore's waiters wait by the thousand.
// on_done(error, leases) once: the n leases; none (an empty vector) if the
// deadline or a stop came first, those granted meanwhile given back, as
// they are on an error (then leases is empty: nullopt).
template <class OnDone>
class LeaseRun : public std::enable_shared_from_this<LeaseRun<OnDone>> {
 public:
  LeaseRun(std::shared_ptr<SemaphoreCore> core, int n, Deadline deadline, std::stop_token stop,
           OnDone on_done)
      : core_(std::move(core)),
        deadline_(deadline),
        stop_(std::move(stop)),
        on_done_(std::move(on_done)),
        n_(static_cast<std::size_t>(n)) {}

  void next() {
    spawn(core_->locks.acquisition(deadline_, nullptr, stop_),
          [self = this->shared_from_this()](std::exception_ptr error,
                                            std::optional<std::shared_ptr<GrantState>> mutex) {
            self->under(std::move(error), mutex ? std::move(*mutex) : nullptr);
          });
  }

 private:
  // The internal mutex is ours (or not, and we are done): queue a lease under it.
  void under(std::exception_ptr error, std::shared_ptr<GrantState> mutex) {
    if (error || !mutex) return finish(std::move(error));
    auto lease = core_->leases.acquisition(deadline_, nullptr, stop_, mutex);
    spawn(std::move(lease),
          [self = this->shared_from_this(), mutex](
              std::exception_ptr failed, std::optional<std::shared_ptr<GrantState>> granted) {
            self->core_->locks.release(mutex);
            self->leased(std::move(failed), granted ? std::move(*granted) : nullptr);
          });
  }

  void leased(std::exception_ptr error, std::shared_ptr<GrantState> lease) {
    if (error && is_under_grant_lost(error)) {
      core_->log->debug("semaphore {}: the internal lock was lost before the grant; starting over",
                        core_->dir);
      return next();
    }
    if (error || !lease) return finish(std::move(error));
    granted_.push_back(std::move(lease));
    if (granted_.size() < n_) return next();
    finish(nullptr);
  }

  void finish(std::exception_ptr error) {
    if (granted_.size() < n_) {
      for (const auto& lease : granted_) core_->give_back(lease);
      granted_.clear();
    }
    auto on_done = std::move(on_done_);
    if (error) on_done(std::move(error), std::nullopt);
    else on_done(nullptr, std::move(granted_));
  }

  const std::shared_ptr<SemaphoreCore> core_;
  const Deadline deadline_;
  const std::stop_token stop_;
  OnDone on_done_;
  const std::size_t n_;
  Leases granted_;
};

template <class OnDone>
void run_leases(std::shared_ptr<SemaphoreCore> core, int n, Deadline deadline, std::stop_token stop,
                OnDone on_done) {
  std::make_shared<LeaseRun<OnDone>>(std::move(core), n, deadline, std::move(stop),
                                     std::move(on_done))
      ->next();
}

// The leases with this thread waiting for them: one path for every form.
Leases acquire_leases(const std::shared_ptr<SemaphoreCore>& core, int n, Deadline deadline,
                      std::stop_token stop) {
  const auto done = std::make_shared<std::promise<Leases>>();
  auto outcome = done->get_future();
  run_leases(core, n, deadline, std::move(stop),
             [done](std::exception_ptr error, std::optional<Leases> granted) {
               if (error) done->set_exception(error);
               else done->set_value(std::move(*granted));
             });
  try {
    return outcome.get();
  } catch (const KeeperError& e) {
    rethrow_naming(e, core->dir);
  }
}

// run_leases() for a caller that does not wait: on_done(error,
// optional leases) when it ends, its errors naming the semaphore (naming()).
// Until then it holds the Client (a Visit, so ~Client waits for it) and the
// core (so the semaphore object may go first).
template <class OnDone>
void start_leases(const std::shared_ptr<SemaphoreCore>& core, int n, Deadline deadline,
                  std::stop_token stop, OnDone on_done) {
  auto visit = std::make_unique<ClientLifeline::Visit>(*core->lifeline);  // ~Client waits for it
  if (!*visit) return on_done(std::make_exception_ptr(client_gone(core->dir)), std::nullopt);
  const auto dir = &core->dir;  // the run holds the core
  run_leases(core, n, deadline, std::move(stop),
             [dir, visit = std::move(visit), on_done = std::move(on_done)](
                 std::exception_ptr error, std::optional<Leases> granted) mutable {
               error = naming(error, *dir);
               visit.reset();
               on_done(error, std::move(granted));
             });
}

}  // namespace
}  // namespace detail

// ---- SemaphoreLease

SemaphoreLease::SemaphoreLease(std::shared_ptr<detail::SemaphoreCore> core,
                               std::shared_ptr<detail::GrantState> state)
    : core_(std::move(core)), state_(std::move(state)), grant_(state_) {}

SemaphoreLease::SemaphoreLease(SemaphoreLease&& other) noexcept
    : core_(other.core_),
      state_(other.state_),
      grant_(other.grant_),
      held_(std::exchange(other.held_, false)) {}

SemaphoreLease& SemaphoreLease::operator=(SemaphoreLease&& other) noexcept {
  if (this != &other) {
    (void)release();
    core_ = other.core_;
    state_ = other.state_;
    grant_ = other.grant_;
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

std::vector<SemaphoreLease> InterProcessSemaphoreV2::try_acquire_for(
    int n, std::chrono::milliseconds timeout, std::stop_token stop) {
  return try_acquire_until(n, zkr::deadline_after(timeout), std::move(stop));
}

void InterProcessSemaphoreV2::check_count(int n) const {
  if (n < 1)
    throw std::invalid_argument("a semaphore acquire needs n >= 1, got " + std::to_string(n));
  if (const auto max = core_->limit.fixed_value(); max && n > *max)
    throw std::invalid_argument("asked for " + std::to_string(n) + " leases of a semaphore of " +
                                std::to_string(*max));
}

void InterProcessSemaphoreV2::start_acquire(
    int n, std::optional<std::chrono::steady_clock::time_point> deadline, std::stop_token stop,
    detail::LeasesHandler on_done) {
  check_count(n);
  detail::start_leases(core_, n, deadline, std::move(stop),
                       [core = core_, on_done = std::move(on_done)](
                           std::exception_ptr error,
                           std::optional<std::vector<std::shared_ptr<detail::GrantState>>> states) {
                         std::vector<SemaphoreLease> leases;
                         if (states)
                           for (auto& state : *states) leases.emplace_back(core, std::move(state));
                         on_done(std::move(error), std::move(leases));
                       });
}

std::vector<SemaphoreLease> InterProcessSemaphoreV2::try_acquire_until(
    int n, std::chrono::steady_clock::time_point deadline, std::stop_token stop) {
  check_count(n);
  detail::ClientLifeline::Visit visit(*core_->lifeline);
  detail::check_may_acquire(visit, core_->client, "InterProcessSemaphoreV2", core_->dir);
  const detail::Deadline bound =
      deadline == std::chrono::steady_clock::time_point::max() ? detail::Deadline{} : deadline;
  if (stop.stop_requested()) return {};
  std::vector<SemaphoreLease> leases;
  for (auto& state : detail::acquire_leases(core_, n, bound, std::move(stop)))
    leases.emplace_back(core_, std::move(state));
  return leases;
}

std::vector<std::string> InterProcessSemaphoreV2::participant_nodes() const {
  detail::ClientLifeline::Visit visit(*core_->lifeline);
  if (!visit) throw detail::client_gone(core_->dir);
  return core_->lease_nodes();
}

const std::string& InterProcessSemaphoreV2::path() const noexcept { return core_->dir; }

// ---- InterProcessSemaphoreMutex

InterProcessSemaphoreMutex::InterProcessSemaphoreMutex(Client& client, std::string path,
                                                       LockOptions options)
    : semaphore_(client, std::move(path), SemaphoreLimit::fixed(1), std::move(options)) {}

InterProcessSemaphoreMutex::~InterProcessSemaphoreMutex() {
  while (release()) {
  }
}

bool InterProcessSemaphoreMutex::take(std::optional<std::chrono::steady_clock::time_point> deadline,
                                      std::stop_token stop) {
  // The semaphore spells "no deadline" time_point::max().
  auto leases = semaphore_.try_acquire_until(
      1, deadline.value_or(std::chrono::steady_clock::time_point::max()), std::move(stop));
  if (leases.empty()) return false;
  std::lock_guard lock(mutex_);
  grants_.push_back(std::move(leases.front()));
  return true;
}
LockGuard InterProcessSemaphoreMutex::take_guard(
    std::optional<std::chrono::steady_clock::time_point> deadline, std::stop_token stop) {
  const auto& core = semaphore_.core_;
  detail::ClientLifeline::Visit visit(*core->lifeline);
  detail::check_may_acquire(visit, core->client, "InterProcessSemaphoreMutex", core->dir);
  if (stop.stop_requested()) return {};
  auto granted = detail::acquire_leases(core, 1, deadline, std::move(stop));
  if (granted.empty()) return {};
  return LockGuard(std::move(granted.front()), core->lifeline, core->client);
}

void InterProcessSemaphoreMutex::take_guard_async(
    std::optional<std::chrono::steady_clock::time_point> deadline, std::stop_token stop,
    detail::GuardHandler on_done) {
  const auto& core = semaphore_.core_;
  detail::start_leases(
      core, 1, deadline, std::move(stop),
      [core, on_done = std::move(on_done)](
          std::exception_ptr error,
          std::optional<std::vector<std::shared_ptr<detail::GrantState>>> states) {
        if (!states || states->empty()) return on_done(std::move(error), LockGuard{});
        on_done(nullptr, LockGuard(std::move(states->front()), core->lifeline, core->client));
      });
}

bool InterProcessSemaphoreMutex::release() noexcept {
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
bool InterProcessSemaphoreMutex::is_acquired_in_this_process() const {
  std::lock_guard lock(mutex_);
  return !grants_.empty();
}
Grant InterProcessSemaphoreMutex::grant() const {
  std::lock_guard lock(mutex_);
  if (grants_.empty())
    throw std::logic_error("InterProcessSemaphoreMutex " + path() + ": lease() while not held");
  return grants_.back().grant();
}

}  // namespace zkr
