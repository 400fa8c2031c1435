// What InterProcessMutex and InterProcessSemaphoreMutex keep besides their
// holds: one queue, and what calls into it need once the Client may be going.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "client_internals.hpp"
#include "lock_internals.hpp"
#include "zkr/client.hpp"
#include "zkr/lock.hpp"

namespace spdlog {
class logger;
}

namespace zkr::detail {

struct QueueLock {
  QueueLock(Client& client, std::string path, LockOptions options)
      : internals(client, std::move(path), std::move(options)),
        lifeline(ClientInternals::lifeline(client)),
        log(client.options().logger) {}

  LockInternals internals;
  const std::shared_ptr<ClientLifeline> lifeline;
  const std::shared_ptr<spdlog::logger> log;  // the Client's, usable after it is gone
  mutable std::mutex mutex;                   // guards the holds of the lock built on it
};

}  // namespace zkr::detail
