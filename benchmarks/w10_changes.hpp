// W10b's member changes: a fixed sequence, the same on our side and in the
// Curator peer (CuratorCache.java's w10-cache follows the same rule), so that
// both caches chase the same tree. Members m0..m<members-1> are visited in
// turn; each visit moves a member one step round its life: created (absent
// before), its data set, deleted. Every change writes data of its own
// ("d<index>"), so no two states of the tree along the way are alike and a
// view equal to the final one can only be seen once the last change is in.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace zkr::bench {

struct MemberChange {
  enum class Kind { create, set, remove };
  Kind kind;
  std::string name;  // the child's name under the group
  std::string data;  // for create and set
};

std::vector<MemberChange> member_changes(std::size_t changes, std::size_t members);

// The group's children after every change: name -> data.
std::map<std::string, std::string> final_members(const std::vector<MemberChange>& changes);

}  // namespace zkr::bench
