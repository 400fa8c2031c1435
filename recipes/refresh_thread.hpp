// recipes/refresh_thread.hpp (internal): the thread under the recipes that
// keep a view of the servers with one-shot watches (PersistentNode,
// SharedCount, ChildrenCache).
//
// Debian's C client has no persistent watches: a recipe must look again
// whenever something may have changed (a watch fired, the connection
// changed, the caller gave new data) and set a new watch with that look. A
// look that failed (the link, a server error) sets no watch and is repeated
// after `retry_after`, or sooner if something wakes the thread. Wakes that
// come while a look runs are folded into one more look. The signal is what
// watches and listeners hold: it may outlive the recipe, and waking a thread
// that has stopped does nothing.
//
//   RefreshThread refresh;
//   keeper->exists(path, [s = refresh.signal()](const WatchEvent&) { s->wake(); });
//   refresh.start([this](bool full) { return look(full); }, 1s);
//   ...
//   refresh.stop();  // joins; the recipe's state is then its own again
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <thread>

namespace zkr::detail {

// Asks the thread for a look.
class RefreshSignal {
 public:
  // `full`: look at everything again, not only what changed (a connection
  // change, or a failure whose extent is unknown). Never blocks long.
  void wake(bool full = false);

 private:
  friend class RefreshThread;
  std::mutex mutex_;
  std::condition_variable_any changed_;
  bool pending_ = false;  // guarded by mutex_
  bool full_ = false;     // guarded by mutex_
};

class RefreshThread {
 public:
  // One look; `full` as RefreshSignal::wake says. False: it failed and is
  // to be repeated, in full.
  using Look = std::function<bool(bool full)>;

  RefreshThread() = default;
  ~RefreshThread() { stop(); }
  RefreshThread(const RefreshThread&) = delete;
  RefreshThread& operator=(const RefreshThread&) = delete;

  const std::shared_ptr<RefreshSignal>& signal() const noexcept { return signal_; }
  // Starts the thread; it waits for the first wake. Once.
  void start(Look look, std::chrono::milliseconds retry_after);
  // Stops the thread and joins it (a look under way ends first). Idempotent.
  void stop() noexcept;

 private:
  void run(const std::stop_token& stop, const Look& look, std::chrono::milliseconds retry_after);

  const std::shared_ptr<RefreshSignal> signal_ = std::make_shared<RefreshSignal>();
  std::jthread thread_;
};

}  // namespace zkr::detail
