// The orchestrator's side of the dispatchers: starts the candidates, kills
// the leader for --chaos and times each failover, reads the record they left
// and checks it.
//
//   DispatcherPool pool(options, client, [&](int slot) { return args_of(slot); });
//   pool.start();
//   pool.kill_leader(total / 5, [&] { return finished; });  // --chaos
//   pool.wait_exited(30s);
//   auto invariants = pool.check();
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dispatch.hpp"
#include "yard.hpp"
#include "zkr/client.hpp"

namespace trainyard {

class DispatcherPool {
 public:
  using Args = std::function<std::vector<std::string>(int slot)>;
  DispatcherPool(const Options& options, zkr::Client& client, int total, Args args);
  // Kills the candidates still running and reaps them.
  ~DispatcherPool();
  DispatcherPool(const DispatcherPool&) = delete;
  DispatcherPool& operator=(const DispatcherPool&) = delete;

  // Starts the kDispatchers candidates; std::runtime_error if one cannot be.
  void start();
  // Waits until every candidate started has exited: false after `timeout`.
  bool wait_exited(std::chrono::steady_clock::duration timeout);
  void kill_all();

  // --chaos: once `at` messages are published, SIGKILLs the candidate that
  // leads (the latch's first participant, and the last to publish), starts a
  // new candidate in its slot so that three remain, and waits for the next
  // leader's first publish. Records the failover; false when the run ended
  // first (`finished` says so, or the whole stream was published).
  bool kill_leader(int at, const std::function<bool()>& finished);

  // Reads the cursor, the batches and the candidates' reports; prints the
  // dispatcher's summary lines; returns its invariants (with `chaos`, at
  // least two failovers too).
  std::vector<Invariant> report(bool chaos);

 private:
  struct Candidate {
    int slot = -1;
    pid_t pid = 0;
    bool killed = false;  // by kill_leader
    bool exited = false;
    int code = -1;
  };
  void spawn_candidate(int slot);  // mutex_ held
  Cursor read_cursor(const zkr::Watcher& watcher = {});

  const Options& options_;
  zkr::Client& client_;
  const int total_;
  const Args args_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Candidate> candidates_;  // guarded by mutex_
  std::vector<std::jthread> reapers_;  // guarded by mutex_
  std::vector<Failover> failovers_;    // guarded by mutex_
};

}  // namespace trainyard
