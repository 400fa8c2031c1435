// A lock queue's link to the Client's observer (observed_lock.hpp).
#include "observed_lock.hpp"

#include <utility>

#include "client_internals.hpp"

namespace zkr::detail {
namespace {

Recipe recipe_of(QueueKind kind, bool leases) {
  if (leases) return Recipe::semaphore;
  switch (kind) {
    case QueueKind::mutex: return Recipe::mutex;
    case QueueKind::read: return Recipe::read;
    case QueueKind::write: return Recipe::write;
    case QueueKind::latch: return Recipe::latch;
  }
  return Recipe::mutex;
}

}  // namespace

std::shared_ptr<const ObservedLock> observe_lock(const Client& client, QueueKind kind, bool leases,
                                                 const std::string& path) {
  const auto& observer = client.options().observer;
  if (!observer) return nullptr;
  return std::make_shared<const ObservedLock>(ObservedLock{.observer = observer,
                                                           .log = ClientInternals::log(client),
                                                           .recipe = recipe_of(kind, leases),
                                                           .path = path});
}

void tell_retry(const std::shared_ptr<const ObservedLock>& observed, int retry,
                std::chrono::milliseconds delay) noexcept {
  if (!observed) return;
  observed->tell([&](Observer& o) {
    o.retried({.recipe = observed->recipe, .path = observed->path, .retry = retry, .delay = delay});
  });
}

void tell_wait_ended(const ObservedLock& observed, std::chrono::steady_clock::time_point since,
                     bool granted, bool stopped, bool failed) noexcept {
  const auto waited = std::chrono::steady_clock::now() - since;
  const auto outcome = failed    ? WaitOutcome::failed
                       : granted ? WaitOutcome::granted
                       : stopped ? WaitOutcome::cancelled
                                 : WaitOutcome::timed_out;
  observed.tell([&](Observer& o) {
    o.wait_ended({.recipe = observed.recipe,
                  .path = observed.path,
                  .outcome = outcome,
                  .duration = std::chrono::duration_cast<std::chrono::nanoseconds>(waited)});
  });
}

std::function<void(Result<Removal>)> counting_removal(
    const std::shared_ptr<const ObservedLock>& observed,
    std::function<void(Result<Removal>)> on_done) {
  if (!observed) return on_done;
  observed->sent(Request::get);
  return [observed, on_done = std::move(on_done)](Result<Removal> removal) {
    if (removal.ok() && removal.value() == Removal::deleted) observed->sent(Request::remove);
    on_done(std::move(removal));
  };
}

}  // namespace zkr::detail
