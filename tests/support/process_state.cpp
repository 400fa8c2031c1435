#include "support/process_state.hpp"

#include <dirent.h>

#include <thread>

namespace zkr::test {

std::size_t thread_count() {
  std::size_t n = 0;
  if (DIR* dir = ::opendir("/proc/self/task")) {
    while (const dirent* entry = ::readdir(dir))
      if (entry->d_name[0] != '.') ++n;
    ::closedir(dir);
  }
  return n;
}

std::size_t thread_baseline() {
  std::thread([] {}).join();
  return thread_count();
}

bool threads_back_to(std::size_t n, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (thread_count() > n) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace zkr::test
