// A chaos worker's group member: one thread of a worker process that keeps a
// zkr::GroupMember (id "w<slot>", data "<slot>.<gen>") in one group for the
// whole run, beside the lock threads and the other participants, so that
// every fault aimed at a worker hits its registration and its cache of the
// group. A restarted worker registers the same id again: until the killed
// one's session expires, its own is refused, never taken over.
//
// When the run ends (stop or time), before leaving the group, it checks its
// view: its members and their data against a fresh, synced read of the
// group, taken before and after the view, until the three agree or a bound
// passes (other workers leave meanwhile, so the tree may move). It records
//   gview converged=1|0 stable=1|0 ms=T members=N [diff=..]
// stable: the last two reads of the tree agreed (the tree stood still), so a
// view that differed from them was the cache's fault. The checker's rule
// member_view_diverged fails a record with converged=0 stable=1.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "event_log.hpp"
#include "zkr/client.hpp"

namespace zkr::chaos {

struct MemberParticipantConfig {
  std::string group;  // kGroupRoot/g0: made before the workers start
  std::string id;     // "w<slot>"
  std::string data;   // "<slot>.<gen>"
};

// Runs until `stop` is set or `end` passes, then checks the view; never throws.
void run_member_participant(const MemberParticipantConfig& config, Client& client, EventLog& log,
                            const std::atomic<bool>& stop,
                            std::chrono::steady_clock::time_point end);

}  // namespace zkr::chaos
