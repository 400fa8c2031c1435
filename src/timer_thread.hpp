// One thread that runs callbacks at given times: the deadlines, retry delays
// and periodic second looks of acquires that wait without a thread of their
// own (task.hpp).
//
// Written by hand rather than on Boost.Asio's timers: an Asio timer must be
// touched on its io_context's thread and must not outlive the io_context,
// and the handles here are held and cancelled by coroutines on any thread,
// possibly after the owner is gone. A cancelled call is dropped at once,
// with whatever it captured.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

namespace zkr::detail {

class TimerThread {
 public:
  using Clock = std::chrono::steady_clock;

  // A pending call. cancel() from any thread, even after the TimerThread is
  // gone: the call will not start (one already running finishes).
  class Timer {
   public:
    Timer() = default;  // none: cancel() does nothing
    void cancel() noexcept;

   private:
    friend class TimerThread;
    struct Queue;
    Timer(std::weak_ptr<Queue> queue, std::pair<Clock::time_point, std::uint64_t> key)
        : queue_(std::move(queue)), key_(key) {}
    std::weak_ptr<Queue> queue_;
    std::pair<Clock::time_point, std::uint64_t> key_;
  };

  TimerThread();
  // Drops every pending call without running it, then joins (from a call,
  // the thread finishes that call and ends on its own).
  ~TimerThread();
  TimerThread(const TimerThread&) = delete;
  TimerThread& operator=(const TimerThread&) = delete;

  // Calls fn on the timer thread once `when` has come (at once if it has),
  // unless cancelled first; calls due together run in the order of `at`.
  // fn must not block, and must not throw.
  Timer at(Clock::time_point when, std::function<void()> fn);

 private:
  static void run(Timer::Queue& queue);

  std::shared_ptr<Timer::Queue> queue_;
  std::thread thread_;  // last: starts once the rest exists
};

}  // namespace zkr::detail
