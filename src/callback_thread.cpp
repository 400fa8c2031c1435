#include "callback_thread.hpp"

#include <spdlog/spdlog.h>

namespace zkr::detail {

CallbackThread::CallbackThread(std::shared_ptr<spdlog::logger> log) : log_(std::move(log)) {}

CallbackThread::~CallbackThread() { stop(); }

void CallbackThread::post(std::function<void()> task) noexcept {
  try {
    auto shared = std::make_shared<std::function<void()>>(std::move(task));
    if (worker_.post([log = log_, shared] { run_one(log, *shared); })) return;
    run_one(log_, *shared);            // stopped: no thread left to run it
  } catch (const std::exception& e) {  // out of memory
    log_->error("a grant callback could not be queued: {}", e.what());
  }
}

void CallbackThread::post_all(std::vector<std::function<void()>> tasks) noexcept {
  try {
    post([log = log_, tasks = std::move(tasks)] {
      for (const auto& task : tasks) run_one(log, task);
    });
  } catch (const std::exception& e) {  // out of memory
    log_->error("grant callbacks could not be queued: {}", e.what());
  }
}

bool CallbackThread::on_thread() const noexcept { return worker_.on_thread(); }

void CallbackThread::stop() noexcept { worker_.stop(WorkerThread::Drain::due); }

void CallbackThread::run_one(const std::shared_ptr<spdlog::logger>& log,
                             const std::function<void()>& task) noexcept {
  try {
    task();
  } catch (const std::exception& e) {
    log->error("a grant callback threw: {}; the others still run", e.what());
  } catch (...) {
    log->error("a grant callback threw a non-standard exception; the others still run");
  }
}

}  // namespace zkr::detail
