// What one lock queue tells the Client's observer (zkr/observer.hpp): the
// observer, the recipe and the queue's path, made once per lock, and shared by
// the lock's attempts and grants. A lock of a Client without an observer has
// none (a null pointer), so that every event costs a null check and no more.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <spdlog/spdlog.h>

#include "lock_driver.hpp"
#include "observer_call.hpp"
#include "owned_delete.hpp"
#include "zkr/client.hpp"
#include "zkr/observer.hpp"

namespace zkr::detail {

struct ObservedLock {
  std::shared_ptr<Observer> observer;
  std::shared_ptr<spdlog::logger> log;
  Recipe recipe;
  std::string path;

  // call(observer), with what it throws logged (observer_call.hpp).
  template <class Call>
  void tell(Call&& call) const noexcept {
    tell_observer(*log, [&] { call(*observer); });
  }
  void sent(Request request) const noexcept {
    tell([&](Observer& o) { o.request_sent({.recipe = recipe, .request = request}); });
  }
};

// Null when the Client has no observer. leases: a semaphore's leases queue.
std::shared_ptr<const ObservedLock> observe_lock(const Client& client, QueueKind kind, bool leases,
                                                 const std::string& path);

// Counts one request of a lock, if anyone observes it.
inline void count_request(const std::shared_ptr<const ObservedLock>& observed, Request request) {
  if (observed) observed->sent(request);
}

// A retry of this lock's acquire, as the retry policy decided it.
void tell_retry(const std::shared_ptr<const ObservedLock>& observed, int retry,
                std::chrono::milliseconds delay) noexcept;
// How a wait ended: `granted` (null: given up, by a stop or the deadline)
// or `failed` (it threw).
void tell_wait_ended(const ObservedLock& observed, std::chrono::steady_clock::time_point since,
                     bool granted, bool stopped, bool failed) noexcept;

// An owned delete (owned_delete.hpp) sends a read, then the delete if the
// read shows the node ours: counts the read now, and the delete by the
// outcome the handler it returns is given. (The read again after a write
// between the two, a rare race, is not counted.)
std::function<void(Result<Removal>)> counting_removal(
    const std::shared_ptr<const ObservedLock>& observed,
    std::function<void(Result<Removal>)> on_done);

}  // namespace zkr::detail
