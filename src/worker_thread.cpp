#include "timer_thread.hpp"

namespace zkr::detail {

struct TimerThread::Timer::Queue {
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::pair<Clock::time_point, std::uint64_t>, std::function<void()>>
      calls;               // guarded by mutex
  std::uint64_t next = 0;  // guarded by mutex
  bool stopping = false;   // guarded by mutex
};

void TimerThread::Timer::cancel() noexcept {
  const auto queue = queue_.lock();
  if (!queue) return;
  std::function<void()> dropped;  // destroyed outside the lock: it may own anything
  std::lock_guard lock(queue->mutex);
  const auto it = queue->calls.find(key_);
  if (it == queue->calls.end()) return;
  dropped = std::move(it->second);
  queue->calls.erase(it);
}

TimerThread::TimerThread()
    : queue_(std::make_shared<Timer::Queue>()), thread_([queue = queue_] { run(*queue); }) {}

TimerThread::~TimerThread() {
  decltype(Timer::Queue::calls) dropped;
  {
    std::lock_guard lock(queue_->mutex);
    queue_->stopping = true;
    dropped = std::move(queue_->calls);
    queue_->calls.clear();
  }
  queue_->changed.notify_all();
  // The last owner may let go inside a call (an acquire ending on this
  // thread): the thread cannot join itself, so it ends on its own, holding
  // the queue.
  if (thread_.get_id() == std::this_thread::get_id()) thread_.detach();
  else thread_.join();
}

TimerThread::Timer TimerThread::at(Clock::time_point when, std::function<void()> fn) {
  std::pair<Clock::time_point, std::uint64_t> key;
  {
    std::lock_guard lock(queue_->mutex);
    key = {when, queue_->next++};
    queue_->calls.emplace(key, std::move(fn));
  }
  queue_->changed.notify_all();
  return Timer(queue_, key);
}

void TimerThread::run(Timer::Queue& q) {
  std::unique_lock lock(q.mutex);
  for (;;) {
    if (q.stopping) return;
    if (q.calls.empty()) {
      q.changed.wait(lock);
      continue;
    }
    const auto first = q.calls.begin();
    // A copy: the wait reads its deadline again after waking, and by then a
    // cancel() on another thread may have erased the node that held it.
    const auto due = first->first.first;
    if (Clock::now() < due) {
      q.changed.wait_until(lock, due);
      continue;
    }
    auto call = std::move(first->second);
    q.calls.erase(first);
    lock.unlock();
    call();
    call = nullptr;  // what it owned goes before the lock is taken again
    lock.lock();
  }
}

}  // namespace zkr::detail
