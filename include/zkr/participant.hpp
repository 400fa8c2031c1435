// zkr/participant.hpp: one participant in a leader election, as read from its
// node by LeaderLatch and LeaderSelector.
#pragma once

#include <string>

namespace zkr {

/// One participant as read from its node: its id, and whether it leads.
struct Participant {
  std::string id;
  bool is_leader = false;
};

}  // namespace zkr
