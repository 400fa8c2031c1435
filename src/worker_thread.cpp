#include "worker_thread.hpp"

#include <vector>

namespace zkr::detail {

struct WorkerThread::Timer::Queue {
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::pair<Clock::time_point, std::uint64_t>, std::function<void()>>
      calls;               // guarded by mutex
  std::uint64_t next = 0;  // guarded by mutex
  bool stopping = false;   // guarded by mutex
  bool drain = false;      // guarded by mutex: run the calls due before ending
};

void WorkerThread::Timer::cancel() noexcept {
  const auto queue = queue_.lock();
  if (!queue) return;
  std::function<void()> dropped;  // destroyed outside the lock: it may own anything
  std::lock_guard lock(queue->mutex);
  const auto it = queue->calls.find(key_);
  if (it == queue->calls.end()) return;
  dropped = std::move(it->second);
  queue->calls.erase(it);
}

WorkerThread::WorkerThread()
    : queue_(std::make_shared<Timer::Queue>()),
      thread_([queue = queue_] { run(*queue); }),
      thread_id_(thread_.get_id()) {}

WorkerThread::~WorkerThread() { stop(Drain::none); }

WorkerThread::Timer WorkerThread::at(Clock::time_point when, std::function<void()> fn) {
  std::pair<Clock::time_point, std::uint64_t> key;
  {
    std::lock_guard lock(queue_->mutex);
    key = {when, queue_->next++};
    queue_->calls.emplace(key, std::move(fn));
  }
  queue_->changed.notify_all();
  return Timer(queue_, key);
}

bool WorkerThread::post(std::function<void()> fn) {
  {
    std::lock_guard lock(queue_->mutex);
    if (queue_->stopping) return false;
    // Due now, after every call already due: the clock is read under the
    // lock, so posts are due in the order they were made.
    queue_->calls.emplace(std::make_pair(Clock::now(), queue_->next++), std::move(fn));
  }
  queue_->changed.notify_all();
  return true;
}

void WorkerThread::stop(Drain drain) noexcept {
  std::vector<std::function<void()>> dropped;  // destroyed outside the lock
  {
    std::lock_guard lock(queue_->mutex);
    if (queue_->stopping) return;  // the first stop ends the thread
    queue_->stopping = true;
    queue_->drain = drain == Drain::due;
    const auto now = Clock::now();
    for (auto it = queue_->calls.begin(); it != queue_->calls.end();) {
      if (queue_->drain && it->first.first <= now) {
        ++it;
        continue;
      }
      dropped.push_back(std::move(it->second));
      it = queue_->calls.erase(it);
    }
  }
  queue_->changed.notify_all();
  // The last owner may let go inside a call: the thread cannot join itself,
  // so it ends on its own, holding the queue.
  if (on_thread()) thread_.detach();
  else thread_.join();
}

void WorkerThread::run(Timer::Queue& q) {
  std::unique_lock lock(q.mutex);
  for (;;) {
    if (q.stopping && (!q.drain || q.calls.empty())) return;
    if (q.calls.empty()) {
      q.changed.wait(lock);
      continue;
    }
    const auto first = q.calls.begin();
    // A copy: the wait reads its deadline again after waking, and by then a
    // cancel() on another thread may have erased the node that held it.
    const auto due = first->first.first;
    if (Clock::now() < due) {
      if (q.stopping) return;  // draining: only what was due
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
