#include "callback_thread.hpp"

#include <spdlog/spdlog.h>

namespace zkr::detail {

CallbackThread::CallbackThread(std::shared_ptr<spdlog::logger> log)
    : log_(std::move(log)), thread_([this] { run(); }) {}

CallbackThread::~CallbackThread() { stop(); }

void CallbackThread::post(std::function<void()> task) noexcept {
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      tasks_.push_back(std::move(task));
      ready_.notify_one();
      return;
    }
  }
  run_one(task);
}

bool CallbackThread::on_thread() const noexcept {
  return std::this_thread::get_id() == thread_.get_id();
}

void CallbackThread::stop() noexcept {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  ready_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void CallbackThread::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    ready_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stopping, and everything posted has run
    auto task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    run_one(task);
    lock.lock();
  }
}

void CallbackThread::run_one(std::function<void()>& task) noexcept {
  try {
    task();
  } catch (const std::exception& e) {
    log_->error("a lease callback threw: {}; the others still run", e.what());
  } catch (...) {
    log_->error("a lease callback threw a non-standard exception; the others still run");
  }
}

}  // namespace zkr::detail
