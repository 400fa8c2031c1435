// What misuse tests check of the process itself: no thread left running, and
// no noise from errors the library is right to log.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

namespace spdlog {
class logger;
}

namespace zkr::test {

// Threads of this process now, from /proc/self/task.
std::size_t thread_count();

// True once the process is back to at most n threads; false after timeout.
// /proc offers nothing to wait on, so it looks every few milliseconds (joined
// threads leave at once; a detached one may take a moment).
[[nodiscard]] bool threads_back_to(std::size_t n, std::chrono::milliseconds timeout);

// A logger that says nothing: misuse is logged as an error, and the test
// output should show only what the test says.
std::shared_ptr<spdlog::logger> quiet_logger(const std::string& name);

}  // namespace zkr::test
