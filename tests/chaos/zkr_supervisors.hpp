// `zkr lock` supervisors in the chaos run: each slot runs, one after the
// other, `zkr lock LOCK_PATH -- zkr-chaos-ticker ...` (chaos_ticker.cpp), a
// command whose only work is ticks the servers date. zkr connects through the
// proxies (the link faults reach it); the ticker connects to the servers
// directly, with a long session of its own (its ticks are the work, not the
// lock's client). The nemesis stops a holding zkr (pause_supervisor) past
// the session timeout; the checker judges the ticks by the servers' record
// (rule command_outside_lock).
//
// Each run of a slot is on record in RUN/zkr-<slot>.log:
//   run slot=N pid=P from=NS to=NS status=S   (S: the wait status, as a shell says it)
// and zkr's own output goes to RUN/zkr-<slot>.out.
//
//   zkr::chaos::SupervisorPool supervisors(settings);
//   supervisors.start();
//   supervisors.signal(pid, SIGSTOP);
//   supervisors.stop(30s);
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.hpp"

namespace zkr::chaos {

struct SupervisorSettings {
  std::string zkr;        // the zkr executable
  std::string ticker;     // zkr-chaos-ticker
  std::string dir;        // run directory
  std::string connect;    // zkr's: through the proxies
  std::string direct;     // the ticker's: the servers themselves
  std::string lock_path;  // what every slot locks
  std::string tick_dir;   // where the ticks go
  int count = 2;
  std::chrono::milliseconds session_timeout{4000};
  bool escape = false;  // the control's broken command (chaos_ticker.cpp --escape)
  std::uint64_t seed = 1;
};

class SupervisorPool {
 public:
  explicit SupervisorPool(SupervisorSettings settings);
  ~SupervisorPool();  // stop(): what still runs is killed

  void start();
  bool owns(pid_t pid) const;
  // A signal to one of our running zkr processes; false if pid is not one.
  bool signal(pid_t pid, int signo);
  // No new runs; SIGCONT and SIGTERM to each zkr (it passes SIGTERM on to its
  // command), SIGKILL for the late. Returns a line per problem.
  std::vector<std::string> stop(std::chrono::milliseconds timeout);

 private:
  void run_slot(int slot);

  SupervisorSettings settings_;
  mutable std::mutex mutex_;
  bool stopping_ = false;                                     // guarded by mutex_
  std::vector<std::shared_ptr<test::ChildProcess>> running_;  // by slot; guarded by mutex_
  std::vector<std::string> problems_;                         // guarded by mutex_
  std::vector<std::thread> threads_;
};

}  // namespace zkr::chaos
