// The nemesis's move on the workers' leader latch (latch_participant.hpp):
// another client deletes the leader's latch node. See nemesis.hpp.
#include <algorithm>
#include <string>
#include <vector>

#include "checker.hpp"
#include "nemesis.hpp"

namespace zkr::chaos {

// The first latch node is the leader's (or, for a moment, a participant's
// that is about to learn it leads): deleting it must end that term with a
// lost signal (node_deleted) and have its writes refused, and the next node
// in the queue may lead at once. Curator's tracker has a latch that never
// recovers when its node or path is deleted; ours must queue again.
std::string Nemesis::delete_leader_node() {
  const std::string latch = std::string(kLatchRoot) + "/l0";
  auto listed = targets_.observer->keeper()->try_children(latch);
  if (!listed.ok()) return std::string(kNotInjected) + "no_latch";
  std::vector<std::string> nodes;
  for (const auto& name : listed.value().names)
    if (name.find("latch-") != std::string::npos) nodes.push_back(name);
  if (nodes.empty()) return std::string(kNotInjected) + "no_participant";
  // Queue order: the text after the last "latch-" (ten digits).
  const auto sequence = [](const std::string& name) { return name.substr(name.rfind("latch-")); };
  const auto first =
      *std::min_element(nodes.begin(), nodes.end(),
                        [&](const auto& a, const auto& b) { return sequence(a) < sequence(b); });
  const auto victim = latch + "/" + first;
  const auto owner = owner_of(victim);
  const auto sessions = worker_sessions();
  const auto pid = sessions.count(owner) ? sessions.at(owner) : 0;
  std::string via;
  const auto keeper = foreign_session(via);
  if (!keeper) return std::string(kNotInjected) + "foreign_session_failed";
  const auto removed = keeper->try_remove(victim);
  end_foreign_session(keeper, {});
  if (!removed.ok())
    return std::string(kNotInjected) + "path=" + victim +
           ",err=" + std::string(errc_name(removed.error()));
  return "path=" + victim + ",pid=" + std::to_string(pid) + ",via=" + via;
}

}  // namespace zkr::chaos
