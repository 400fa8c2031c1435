// The nemesis's move on the workers' leader latch (latch_participant.hpp):
// another client deletes the leader's latch node. See nemesis.hpp.
#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "checker.hpp"
#include "nemesis.hpp"

namespace zkr::chaos {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The leader's node: the first latch node, with a term on it in its worker's
// log. Deleting it must end that term with a lost signal (node_deleted) and
// have its writes refused, and the next node in the queue may lead at once. Curator's tracker has a latch that never
// recovers when its node or path is deleted; ours must queue again.
std::string Nemesis::delete_leader_node() {
  const std::string latch = std::string(kLatchRoot) + "/l0";
  // The first latch node, once a worker's log shows a term on it (terms are
  // short and come often), looked for every 50 ms for up to 5 s.
  std::string victim;
  pid_t pid = 0;
  for (const auto until = Clock::now() + 5s; victim.empty() && Clock::now() < until;) {
    auto listed = targets_.observer->keeper()->try_children(latch);
    std::vector<std::string> nodes;
    if (listed.ok())
      for (const auto& name : listed.value().names)
        if (name.find("latch-") != std::string::npos) nodes.push_back(name);
    if (!nodes.empty()) {
      // Queue order: the text after the last "latch-" (ten digits).
      const auto sequence = [](const std::string& name) {
        return name.substr(name.rfind("latch-"));
      };
      const auto first =
          latch + "/" +
          *std::min_element(nodes.begin(), nodes.end(), [&](const auto& a, const auto& b) {
            return sequence(a) < sequence(b);
          });
      const auto owner = owner_of(first);
      const auto sessions = worker_sessions();
      const Holder leader{sessions.count(owner) ? sessions.at(owner) : 0, owner, first, 0};
      if (leader.pid != 0 && granted_in_log(leader)) {
        victim = first;
        pid = leader.pid;
        break;
      }
    }
    std::this_thread::sleep_for(50ms);
  }
  if (victim.empty()) return std::string(kNotInjected) + "no_leader";
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
