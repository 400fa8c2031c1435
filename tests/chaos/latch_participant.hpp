// A chaos worker's leader latch participant: one thread of a worker process
// that, in a bounded loop, joins a zkr::LeaderLatch on one latch path (every
// worker process runs one, so they contend), awaits leadership with a
// deadline, and while leading makes guarded writes that record its epoch;
// then it closes the latch (giving leadership up) and joins again as a new
// participant. It shares the process's Client with the lock threads, so every
// fault aimed at a worker (kill, stop, session expiry, links) hits it too.
//
// What it records, for the checker (check_leader_latch in checker.hpp), in
// the worker's log:
//   lawait term=ID led=0|1 [err=..]       an await's outcome
//   lterm  term=ID epoch=E node=PATH      a term began (E: fencing_token())
//   llost  term=ID reason=..              the term's lost signal came
//   lwrite term=ID n=N sent=T result=ok|rejected|unknown err=.. lost=0|1 late=0|1
//   lend   term=ID lost=0|1               the latch was closed
// A write creates "<latch node name>-e<epoch>-w<seq>" in the write directory
// (persistent sequential), so the servers' record tells when it was applied.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "event_log.hpp"
#include "zkr/client.hpp"

namespace zkr::chaos {

struct LatchParticipantConfig {
  std::string latch_path;  // kLatchRoot/l0 under the run's root
  std::string write_dir;   // kLeaderWriteRoot/l0: made before the workers start
  std::string id_prefix;   // "<slot>.<gen>": term ids are "<slot>.<gen>.L.<n>"
  std::uint64_t seed = 1;
  std::chrono::milliseconds session_timeout{4000};
  // The control's broken mode: writes with a plain multi, no guard, so that
  // a deposed leader's writes land (the checker must say so).
  bool unguarded = false;
};

// Loops until `stop` is set or `end` passes; never throws.
void run_latch_participant(const LatchParticipantConfig& config, Client& client, EventLog& log,
                           const std::atomic<bool>& stop,
                           std::chrono::steady_clock::time_point end);

}  // namespace zkr::chaos
