// What InterProcessMutex, NonReentrantMutex and LeaderLatch keep besides
// their holds: one queue, and what calls into it need once the Client may be
// going.
#pragma once

#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>

#include "acquire_calls.hpp"
#include "client_internals.hpp"
#include "lock_internals.hpp"
#include "zkr/client.hpp"
#include "zkr/lock.hpp"

namespace spdlog {
class logger;
}

namespace zkr::detail {

struct QueueLock {
  QueueLock(Client& client, std::string path, LockOptions options,
            QueueKind kind = QueueKind::mutex)
      : internals(client, std::move(path), std::move(options), kind),
        lifeline(ClientInternals::lifeline(client)),
        log(detail::ClientInternals::log(client)) {}

  LockInternals internals;
  const std::shared_ptr<ClientLifeline> lifeline;
  const std::shared_ptr<spdlog::logger> log;  // the Client's, usable after it is gone
  mutable std::mutex mutex;                   // guards the holds of the lock built on it
};

// A grant of the queue owned by a LockGuard, not recorded among the lock's
// holds; an empty guard if the deadline or a stop came first.
inline LockGuard take_guard(QueueLock& queue, std::string_view kind, Deadline deadline,
                            const std::stop_token& stop) {
  ClientLifeline::Visit visit(*queue.lifeline);
  check_may_acquire(visit, queue.internals.client(), kind, queue.internals.dir());
  auto state = acquire_when_connected(queue.internals, deadline, {}, stop);
  if (!state) return {};
  return LockGuard(std::move(state), queue.lifeline, queue.internals.client());
}

}  // namespace zkr::detail
