#include "w10_changes.hpp"

#include <stdexcept>

namespace zkr::bench {

std::vector<MemberChange> member_changes(std::size_t changes, std::size_t members) {
  if (members == 0) throw std::invalid_argument("member_changes: no members");
  std::vector<MemberChange> out;
  out.reserve(changes);
  std::vector<int> step(members, 0);  // 0: absent, 1: created, 2: data set
  for (std::size_t i = 0; i < changes; ++i) {
    const std::size_t m = i % members;
    MemberChange change{MemberChange::Kind::create, "m" + std::to_string(m), ""};
    switch (step[m]) {
      case 0: change.kind = MemberChange::Kind::create; break;
      case 1: change.kind = MemberChange::Kind::set; break;
      default: change.kind = MemberChange::Kind::remove; break;
    }
    if (change.kind != MemberChange::Kind::remove) change.data = "d" + std::to_string(i);
    step[m] = (step[m] + 1) % 3;
    out.push_back(std::move(change));
  }
  return out;
}

std::map<std::string, std::string> final_members(const std::vector<MemberChange>& changes) {
  std::map<std::string, std::string> members;
  for (const auto& c : changes) {
    if (c.kind == MemberChange::Kind::remove) members.erase(c.name);
    else members[c.name] = c.data;
  }
  return members;
}

}  // namespace zkr::bench
