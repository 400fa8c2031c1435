// The membership rule (see checker.hpp): each worker's GroupMember view of
// its group at the end of the run (member_participant.hpp). A view that never
// agreed with the servers' tree while that tree stood still (two synced
// reads around the view agreed) is the cache's fault; one that never agreed
// while the tree kept moving (workers leaving) proves nothing either way.
#include <string>

#include "checker.hpp"
#include "checker_records.hpp"

namespace zkr::chaos {

void check_member_views(const RunInput& input, CheckResult& result) {
  for (const auto& [source, events] : input.workers) {
    for (const auto& e : events) {
      if (e.name != "gview") continue;
      ++result.member_views;
      if (e.get("converged") == "1") {
        ++result.member_views_converged;
        continue;
      }
      if (e.get("stable") == "1")
        add_violation(result, "member_view_diverged",
                      source + ": its group view differed from a tree that stood still, after " +
                          e.get("ms") + " ms: " + e.get("diff"));
    }
  }
}

}  // namespace zkr::chaos
