// The Client's timer thread: the deadlines, retry delays and wakeups of
// acquires that wait without a thread of their own (task.hpp). A worker of
// the one kind every Client thread is (worker_thread.hpp).
#pragma once

#include "worker_thread.hpp"

namespace zkr::detail {

using TimerThread = WorkerThread;

}  // namespace zkr::detail
