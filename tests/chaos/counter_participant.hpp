// A chaos worker's counter participant: one thread of a worker process that,
// in a bounded loop, reads, adds to and compares-and-sets one
// zkr::DistributedAtomicLong (every worker process runs one, on one counter,
// so they race). It shares the process's Client with the lock threads, so
// every fault aimed at a worker (kill, stop, session expiry, links) hits it
// too. The checker (check_counter_history in checker.hpp) asks whether the
// history is linearizable, with the final value the servers hold, an
// indeterminate outcome allowed to have been applied or not.
//
// What it records in the worker's log, each operation twice, so that one cut
// short by a kill still counts (as an outcome unknown):
//   cinv id=ID kind=read|add|cas operand=N expected=E invoked=T   before the call
//   cop  id=ID outcome=succeeded|conflict|indeterminate|error value=V   after it
// (value: what a read returned, an add's or a swap's result when known).
// A read syncs its path first (a plain read may be stale: ZooKeeper's reads
// are not linearizable). Every add adds 1 to 3, and a compare-and-set sets a larger value than the
// one it expects: the counter only grows, so a swap refused because the
// version moved saw another value, as the history says.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "event_log.hpp"
#include "zkr/client.hpp"

namespace zkr::chaos {

struct CounterParticipantConfig {
  std::string path;       // kCounterRoot/c0: initialized to 0 before the workers start
  std::string id_prefix;  // "<slot>.<gen>": operation ids are "<slot>.<gen>.C.<n>"
  std::uint64_t seed = 1;
};

// Loops until `stop` is set or `end` passes; never throws.
void run_counter_participant(const CounterParticipantConfig& config, Client& client, EventLog& log,
                             const std::atomic<bool>& stop,
                             std::chrono::steady_clock::time_point end);

}  // namespace zkr::chaos
