// A one-shot flag raised from a watch (on the keeper's event thread) and
// waited on by the train yard's processes, with a bound on every wait.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace trainyard {

struct Flag {
  std::mutex mutex;
  std::condition_variable cv;
  bool set = false;
  void raise() {
    std::lock_guard lock(mutex);
    set = true;
    cv.notify_all();
  }
  // True once raised; false if `deadline` came first.
  bool wait_until(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mutex);
    return cv.wait_until(lock, deadline, [&] { return set; });
  }
  bool wait_for(std::chrono::steady_clock::duration at_most) {
    return wait_until(std::chrono::steady_clock::now() + at_most);
  }
};

}  // namespace trainyard
