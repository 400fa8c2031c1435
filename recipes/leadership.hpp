// What the two leader recipes (LeaderLatch, LeaderSelector) share beyond the
// queue engine: reading the participants' ids, and waiting for a lost term's
// signal before another term may begin.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "zkr/client.hpp"
#include "zkr/lock.hpp"
#include "zkr/participant.hpp"

namespace zkr::detail {

// Reads the ids in `nodes` (queue order) as Curator does: a node gone since
// the listing is skipped, and the first node read is the leader's. At most
// `limit` of them. Throws KeeperError as Client::with_retry does.
std::vector<Participant> read_participants(Client& client, const std::vector<std::string>& nodes,
                                           std::size_t limit);

// Returns once the lost signal of `lost` (its stop callbacks and on_lost
// callbacks) has been delivered, so that a new term is never reported before
// the old one's end. At once on the callback thread itself, where the signal
// is queued ahead of anything a new term can queue.
void await_lost_signal(Client& client, const Grant& lost);

}  // namespace zkr::detail
