#include "small_stack_threads.hpp"

#include <cstring>
#include <memory>
#include <stdexcept>

namespace zkr::bench {
namespace {

void* run_on_small_stack(void* arg) {
  const std::unique_ptr<std::function<void()>> work(static_cast<std::function<void()>*>(arg));
  (*work)();  // the work catches what it throws: an escaping exception ends the process
  return nullptr;
}

}  // namespace

SmallStackThreads::SmallStackThreads(std::size_t stack_bytes) {
  if (::pthread_attr_init(&attr_) != 0) throw std::runtime_error("pthread_attr_init failed");
  if (const int rc = ::pthread_attr_setstacksize(&attr_, stack_bytes); rc != 0) {
    ::pthread_attr_destroy(&attr_);
    throw std::invalid_argument(std::string("pthread_attr_setstacksize: ") + std::strerror(rc));
  }
}

SmallStackThreads::~SmallStackThreads() {
  join_all();
  ::pthread_attr_destroy(&attr_);
}

bool SmallStackThreads::start(std::function<void()> work) {
  auto owned = std::make_unique<std::function<void()>>(std::move(work));
  pthread_t thread{};
  if (const int rc = ::pthread_create(&thread, &attr_, run_on_small_stack, owned.get()); rc != 0) {
    last_error_ = std::strerror(rc);
    return false;
  }
  (void)owned.release();  // the thread owns it now
  threads_.push_back(thread);
  return true;
}

void SmallStackThreads::join_all() {
  for (const pthread_t thread : threads_) ::pthread_join(thread, nullptr);
  threads_.clear();
}

}  // namespace zkr::bench
