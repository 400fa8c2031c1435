// A child process for tests that need several processes (lock stress tests):
// started with posix_spawn, waited for with a deadline, killed if it overruns.
//
// A thread of its own blocks in waitid() for the child, so a wait is a
// condition-variable wait with a deadline: no polling, no sleeps.
//
//   zkr::test::ChildProcess worker({"/path/to/zkr-test-lock_worker", "arg"});
//   auto status = worker.wait_until(deadline);
//   if (!status) worker.kill();          // overran: the destructor reaps it
//   else EXPECT_EQ(*status, 0) << zkr::test::describe_wait_status(*status);
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace zkr::test {

class ChildProcess {
 public:
  // Runs argv[0] (a path, not searched in PATH) with the test's environment,
  // stdin and stdout, and its stderr, or the file `stderr_path` (made or
  // emptied) when one is given: a test can then quote what a failed child
  // said in its own verdict. Throws std::system_error if it cannot be spawned.
  explicit ChildProcess(const std::vector<std::string>& argv, const std::string& stderr_path = {});
  // Kills the child if it still runs, and reaps it. Never throws.
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const noexcept { return pid_; }

  // The wait status (see describe_wait_status) once the child has exited;
  // nullopt if it still runs at the deadline.
  std::optional<int> wait_until(std::chrono::steady_clock::time_point deadline);

  // Sends signal `signo` (SIGKILL by default), unless the child has already exited:
  // its pid is not signalled once reaped, as it may belong to another process
  // by then.
  void kill(int signo = SIGKILL) noexcept;

 private:
  void reap() noexcept;

  pid_t pid_ = -1;
  std::mutex mutex_;
  std::condition_variable done_;
  bool exited_ = false;        // guarded by mutex_: a zombie now, or reaped
  std::optional<int> status_;  // guarded by mutex_
  std::thread reaper_;
};

// The status reported when the child was reaped by someone else (a SIGCHLD
// handler set to SIG_IGN, a waitpid(-1)): the outcome is unknown.
inline constexpr int kNotReaped = -1;

// "exit 0", "exit 3", "killed by signal 9".
std::string describe_wait_status(int status);

}  // namespace zkr::test
