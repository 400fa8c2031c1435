#include "children_diff.hpp"

namespace zkr::detail {

std::vector<ChildEvent> diff_children(const ChildMap& before, const ChildMap& after) {
  std::vector<ChildEvent> events;
  auto old_it = before.begin();
  auto new_it = after.begin();
  // Both maps are sorted by name: one merge walk.
  while (old_it != before.end() || new_it != after.end()) {
    if (new_it == after.end() || (old_it != before.end() && old_it->first < new_it->first)) {
      events.push_back(ChildEvent{ChildEventType::removed, old_it->first, old_it->second});
      ++old_it;
    } else if (old_it == before.end() || new_it->first < old_it->first) {
      events.push_back(ChildEvent{ChildEventType::added, new_it->first, new_it->second});
      ++new_it;
    } else {
      const auto& was = old_it->second;
      const auto& is = new_it->second;
      if (was.stat.czxid != is.stat.czxid) {
        events.push_back(ChildEvent{ChildEventType::removed, old_it->first, was});
        events.push_back(ChildEvent{ChildEventType::added, new_it->first, is});
      } else if (was.stat.mzxid != is.stat.mzxid) {
        events.push_back(ChildEvent{ChildEventType::updated, new_it->first, is});
      }
      ++old_it;
      ++new_it;
    }
  }
  return events;
}

}  // namespace zkr::detail
