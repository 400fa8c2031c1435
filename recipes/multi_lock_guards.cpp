// MultiLock's guard forms: the set taken as guards, one InterProcessMutex
// guard after another, with no thread waiting.
#include <spdlog/spdlog.h>

#include <future>
#include <memory>
#include <utility>

#include "acquire_calls.hpp"
#include "client_internals.hpp"
#include "zkr/multi_lock.hpp"
#include "zkr/retry.hpp"

namespace zkr {
namespace {

using Clock = std::chrono::steady_clock;

// One acquire of the set: each path's guard in turn, in canonical order
// (InterProcessMutex::async_acquire_guard), each asked for when the one
// before is granted. All or none: a guard refused (the deadline, a stop, an
// error) gives back those held, last first. A set spanning two sessions is
// no set (the earlier guards' nodes went with the first), so it is given
// back and taken again: within the deadline, or while the retry policy
// allows without one. The next round needs no delay of its own: its first
// acquire waits for the new session.
class GuardsAcquire : public std::enable_shared_from_this<GuardsAcquire> {
 public:
  using Handler = std::function<void(std::exception_ptr, std::vector<LockGuard>)>;

  GuardsAcquire(Client& client, std::vector<std::shared_ptr<InterProcessMutex>> locks,
                std::optional<Clock::time_point> deadline, std::stop_token stop, Handler on_done)
      : client_(client),
        locks_(std::move(locks)),
        deadline_(deadline),
        stop_(std::move(stop)),
        on_done_(std::move(on_done)),
        budget_(client.retry_policy(), client.sleeper()) {}

  void next() {
    if (stop_.stop_requested()) return finish(nullptr);
    auto& lock = *locks_[held_.size()];
    lock.async_acquire_guard(
        deadline_, stop_, [self = shared_from_this()](std::exception_ptr error, LockGuard guard) {
          self->on_guard(std::move(error), std::move(guard));
        });
  }

 private:
  void on_guard(std::exception_ptr error, LockGuard guard) {
    if (error || !guard) return finish(std::move(error));
    held_.push_back(std::move(guard));
    if (!all_current()) return round_lost();
    if (held_.size() < locks_.size()) return next();
    on_done_(nullptr, std::exchange(held_, {}));
  }

  // Every guard held is of the Client's current session, and not lost.
  bool all_current() const {
    const auto epoch = client_.session_epoch();
    for (const auto& guard : held_) {
      const auto lease = guard.grant();
      if (lease.lost() || lease.session_epoch() != epoch) return false;
    }
    return true;
  }

  void round_lost() {
    detail::ClientInternals::log(client_)->info(
        "MultiLock: a lock was lost while taking the next; starting over");
    give_back();
    if (deadline_) {
      if (Clock::now() >= *deadline_) return finish(nullptr);
      return next();
    }
    if (budget_.next().verdict != RetryBudget::Verdict::retry)
      return finish(std::make_exception_ptr(KeeperError(
          Errc::session_expired, locks_.front()->path(),
          "MultiLock: a lock was lost before the last was granted in " +
              std::to_string(budget_.retries()) + " rounds, and the retry policy gave up")));
    next();
  }

  void give_back() noexcept {
    while (!held_.empty()) held_.pop_back();  // last first: its guard releases
  }

  void finish(std::exception_ptr error) {
    give_back();
    on_done_(std::move(error), {});
  }

  Client& client_;
  const std::vector<std::shared_ptr<InterProcessMutex>> locks_;
  const std::optional<Clock::time_point> deadline_;
  const std::stop_token stop_;
  const Handler on_done_;
  RetryBudget budget_;
  std::vector<LockGuard> held_;  // in locks_ order
};

}  // namespace

void MultiLock::start_guards(std::optional<Clock::time_point> deadline, std::stop_token stop,
                             GuardsHandler on_done) {
  std::make_shared<GuardsAcquire>(client_, locks_, deadline, std::move(stop), std::move(on_done))
      ->next();
}

std::vector<LockGuard> MultiLock::try_acquire_guards_for(std::chrono::milliseconds timeout,
                                                         std::stop_token stop) {
  const auto lifeline = detail::ClientInternals::lifeline(client_);
  const detail::ClientLifeline::Visit visit(*lifeline);  // ~Client waits for us
  detail::check_may_acquire(visit, client_, "MultiLock", path());
  using Guards = std::vector<LockGuard>;
  const auto done = std::make_shared<std::promise<Guards>>();
  auto outcome = done->get_future();
  start_guards(zkr::deadline_after(timeout), std::move(stop),
               [done](std::exception_ptr error, Guards guards) {
                 if (error) done->set_exception(error);
                 else done->set_value(std::move(guards));
               });
  return outcome.get();
}

std::vector<LockGuard> MultiLock::acquire_guards(std::stop_token stop) {
  const auto lifeline = detail::ClientInternals::lifeline(client_);
  const detail::ClientLifeline::Visit visit(*lifeline);  // ~Client waits for us
  detail::check_may_acquire(visit, client_, "MultiLock", path());
  using Guards = std::vector<LockGuard>;
  const auto done = std::make_shared<std::promise<Guards>>();
  auto outcome = done->get_future();
  const bool stoppable = stop.stop_possible();
  start_guards(std::nullopt, stop, [done](std::exception_ptr error, Guards guards) {
    if (error) done->set_exception(error);
    else done->set_value(std::move(guards));
  });
  auto guards = outcome.get();
  if (guards.empty() && !(stoppable && stop.stop_requested()))
    throw KeeperError(Errc::operation_timeout, path(), "acquire gave up");
  return guards;
}

}  // namespace zkr
