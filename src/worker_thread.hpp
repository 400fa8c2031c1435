// The one worker type of a Client's threads: a thread that runs calls in
// order, post()ed ones after those posted before them, at()-timed ones once
// their time has come (calls due together run in the order they were
// given). The Client keeps several, each isolating its own kind of work so
// that a slow call of one kind never holds up another: the timer thread of
// acquires that wait without a thread (deadlines, retry delays, wakeups),
// the listener thread (connection states), the callback thread (lost
// signals of leases).
//
// Written by hand rather than on Boost.Asio: an Asio timer must be touched
// on its io_context's thread and must not outlive the io_context, and the
// handles here are held and cancelled by coroutines on any thread, possibly
// after the owner is gone. A cancelled call is dropped at once, with
// whatever it captured.
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

class WorkerThread {
 public:
  using Clock = std::chrono::steady_clock;

  // A pending call. cancel() from any thread, even after the WorkerThread is
  // gone: the call will not start (one already running finishes).
  class Timer {
   public:
    Timer() = default;  // none: cancel() does nothing
    void cancel() noexcept;

   private:
    friend class WorkerThread;
    struct Queue;
    Timer(std::weak_ptr<Queue> queue, std::pair<Clock::time_point, std::uint64_t> key)
        : queue_(std::move(queue)), key_(key) {}
    std::weak_ptr<Queue> queue_;
    std::pair<Clock::time_point, std::uint64_t> key_;
  };

  WorkerThread();
  // stop(Drain::none).
  ~WorkerThread();
  WorkerThread(const WorkerThread&) = delete;
  WorkerThread& operator=(const WorkerThread&) = delete;

  // Calls fn on the thread once `when` has come (at once if it has), unless
  // cancelled first. fn must not block for long, and must not throw.
  Timer at(Clock::time_point when, std::function<void()> fn);
  // Calls fn on the thread after the calls due before it. False once the
  // worker is stopping: fn was not kept, and the caller decides (run it, or drop it).
  bool post(std::function<void()> fn);
  bool on_thread() const noexcept { return std::this_thread::get_id() == thread_id_; }

  enum class Drain {
    due,   // run every call already due (those posted, and timed ones whose time came)
    none,  // run nothing more
  };
  // Drops what it will not run, and ends the thread: joins it, or, called
  // from a call on the thread (its last owner letting go there), lets it end
  // on its own. Idempotent.
  void stop(Drain drain) noexcept;

 private:
  static void run(Timer::Queue& queue);

  std::shared_ptr<Timer::Queue> queue_;
  std::thread thread_;  // last but one: starts once the queue exists
  std::thread::id thread_id_;
};

}  // namespace zkr::detail
