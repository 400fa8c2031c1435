// The Client's callback thread: where the lost signals of leases reach user
// code (Grant::on_lost callbacks, lost_token stop callbacks).
//
// Not the C client's threads: a callback there that waits for a reply (a
// release does) waits for the very thread it blocks, and every reply and watch
// of the session stops. Not the listener thread either: an acquire there is
// refused, because acquires wait for connection states delivered on it. Here a
// callback may release, acquire another lock or call the Client; it only
// delays the callbacks queued after it, never the session.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "worker_thread.hpp"

namespace spdlog {
class logger;
}

namespace zkr::detail {

class CallbackThread {
 public:
  explicit CallbackThread(std::shared_ptr<spdlog::logger> log);
  ~CallbackThread();
  CallbackThread(const CallbackThread&) = delete;
  CallbackThread& operator=(const CallbackThread&) = delete;

  // Runs task on the thread, after the tasks posted before it. A task that
  // throws is logged; the next one runs all the same. After stop() there is
  // no thread left, so the task runs at once on the caller's thread: the
  // Client is gone then, and with it the C client's threads.
  void post(std::function<void()> task) noexcept;
  // Runs the tasks one after another as post() would, with nothing posted
  // meanwhile by another thread between them: a signal of several callbacks
  // is delivered whole before whatever its first one causes.
  void post_all(std::vector<std::function<void()>> tasks) noexcept;
  bool on_thread() const noexcept;
  // Runs what is queued, then joins. Idempotent; not from the thread itself.
  void stop() noexcept;

 private:
  static void run_one(const std::shared_ptr<spdlog::logger>& log,
                      const std::function<void()>& task) noexcept;

  const std::shared_ptr<spdlog::logger> log_;
  WorkerThread worker_;  // last: its thread runs calls that use the rest
};

}  // namespace zkr::detail
