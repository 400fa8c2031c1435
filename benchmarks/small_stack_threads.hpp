// Many threads with a small stack each, which std::thread cannot ask for:
// W8's blocking side starts one per waiter, ten thousand of them. The stack
// is virtual memory reserved per thread; only the pages a thread touches are
// resident, so its size bounds the address space, not the RSS measured.
//
//   SmallStackThreads threads(256 * 1024);
//   for (...) if (!threads.start([&] { work(); })) break;  // the system refused
//   threads.join_all();
#pragma once

#include <pthread.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace zkr::bench {

class SmallStackThreads {
 public:
  explicit SmallStackThreads(std::size_t stack_bytes);
  ~SmallStackThreads();  // join_all()
  SmallStackThreads(const SmallStackThreads&) = delete;
  SmallStackThreads& operator=(const SmallStackThreads&) = delete;

  // Starts `work` on a new thread. False if the system refused one (the
  // reason in last_error()): the caller goes on with those it has.
  bool start(std::function<void()> work);
  void join_all();
  std::size_t started() const noexcept { return threads_.size(); }
  const std::string& last_error() const noexcept { return last_error_; }

 private:
  pthread_attr_t attr_;
  std::vector<pthread_t> threads_;
  std::string last_error_;
};

}  // namespace zkr::bench
