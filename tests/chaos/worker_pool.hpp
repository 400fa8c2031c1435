// The chaos run's worker processes: one per slot, replaced when the nemesis
// kills one, each with its own log (worker-<slot>-<gen>.log), session file and
// stderr file in the run directory.
//
//   zkr::chaos::WorkerPool pool(settings);
//   pool.start_all();
//   pool.kill(pid);              // SIGKILL, reaped; the slot gets a new process
//   pool.stop_all(30s);          // SIGTERM, then SIGKILL for the late
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "support/child_process.hpp"

namespace zkr::chaos {

struct WorkerSettings {
  std::string binary;
  std::string dir;      // run directory
  std::string connect;  // through the proxies
  std::string root;
  std::string keys;  // "k0,k1,k2"
  int workers = 4;
  int threads = 2;
  std::uint64_t seed = 1;
  int seconds = 600;  // a worker's own bound, far past the run
  std::chrono::milliseconds session_timeout{4000};
  std::string broken = "none";
  std::string rw_key;         // a read/write lock's key, "" for none
  std::string semaphore_key;  // a semaphore's key, "" for none
  int semaphore_limit = 2;
};

class WorkerPool {
 public:
  explicit WorkerPool(WorkerSettings settings);
  ~WorkerPool();  // kills what still runs

  void start_all();
  std::vector<pid_t> pids() const;
  bool owns(pid_t pid) const;
  // SIGKILL, wait until reaped (bounded), start a replacement in its slot.
  // False if pid is not one of ours or did not die.
  bool kill_and_replace(pid_t pid);
  // Sends a signal to one of our live workers; false if pid is not ours.
  bool signal(pid_t pid, int signo);
  // SIGTERM everyone (SIGCONT too, in case one is stopped), wait until
  // `deadline`, SIGKILL the late. Returns a line per worker that did not exit 0.
  std::vector<std::string> stop_all(std::chrono::milliseconds timeout);
  // Processes that exited without being asked to (a crash): one line each.
  std::vector<std::string> unexpected_exits();

 private:
  struct Slot {
    int gen = 0;
    std::unique_ptr<test::ChildProcess> process;
    std::vector<std::unique_ptr<test::ChildProcess>> retired;  // killed on purpose
  };
  void spawn(int slot);

  WorkerSettings settings_;
  mutable std::mutex mutex_;
  std::vector<Slot> slots_;  // guarded by mutex_
};

}  // namespace zkr::chaos
