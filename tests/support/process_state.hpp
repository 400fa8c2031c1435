// What misuse tests check of the process itself: no thread left running.
#pragma once

#include <chrono>
#include <cstddef>

namespace zkr::test {

// Threads of this process now, from /proc/self/task.
std::size_t thread_count();

// The count to come back to after a test's threads are gone: thread_count()
// once a thread has been started and joined. ThreadSanitizer starts a thread
// of its own with a process's first thread, and keeps it: counted before that,
// a test that ends where it began would seem to leave a thread behind.
std::size_t thread_baseline();

// True once the process is back to at most n threads; false after timeout.
// /proc offers nothing to wait on, so it looks every few milliseconds (joined
// threads leave at once; a detached one may take a moment).
[[nodiscard]] bool threads_back_to(std::size_t n, std::chrono::milliseconds timeout);

}  // namespace zkr::test
