// The rule command_outside_lock: the work of the commands `zkr lock` ran
// (zkr_supervisors.hpp) judged by the servers' record alone. See checker.hpp.
#include <algorithm>
#include <map>
#include <set>

#include "checker.hpp"
#include "checker_records.hpp"

namespace zkr::chaos {
namespace {

// A lock node's place in its queue: the sequence after "-lock-".
std::string lock_sequence_of(const std::string& name) {
  const auto at = name.rfind("-lock-");
  return at == std::string::npos ? name : name.substr(at + 6);
}

}  // namespace

void check_supervised_commands(const std::vector<NodeLife>& lives, CheckResult& result) {
  const std::string locks = std::string(kSupervisedLockRoot) + "/";
  const std::string ticks = std::string(kTickRoot) + "/";
  std::map<std::string, const NodeLife*> lock_by_name;               // names carry a GUID
  std::map<std::string, std::vector<const NodeLife*>> locks_by_dir;  // the queue of each
  std::set<std::string> held;
  for (const auto& life : lives)
    if (life.path.starts_with(locks) && is_lock_node_name(life.path)) {
      lock_by_name[name_of(life.path)] = &life;
      locks_by_dir[dir_of(life.path)].push_back(&life);
    }
  for (const auto& tick : lives) {
    if (!tick.path.starts_with(ticks)) continue;
    const auto tick_name = name_of(tick.path);
    const auto cut = tick_name.rfind("-t");
    if (cut == std::string::npos) continue;  // the tick directory itself
    ++result.supervised_ticks;
    const auto it = lock_by_name.find(tick_name.substr(0, cut));
    if (it == lock_by_name.end()) {
      result.problems.push_back("tick " + tick.path + " names no lock node of the record");
      continue;
    }
    const NodeLife& own = *it->second;
    held.insert(own.path);
    const auto z = tick.czxid;
    if (!alive_at(own, z)) {
      add_violation(result, "command_outside_lock",
                    "tick " + tick.path + " landed at zxid " + std::to_string(z) + ", after " +
                        own.path + " ended (" + own.end + " at zxid " + std::to_string(own.dzxid) +
                        ")");
      continue;
    }
    for (const auto* other : locks_by_dir[dir_of(own.path)]) {
      if (other == &own || !alive_at(*other, z)) continue;
      if (lock_sequence_of(name_of(other->path)) >= lock_sequence_of(name_of(own.path))) continue;
      add_violation(result, "command_outside_lock",
                    "tick " + tick.path + " landed at zxid " + std::to_string(z) + " while " +
                        other->path + ", before its lock node in line, still lived (zxid " +
                        std::to_string(other->czxid) + " to " +
                        (other->dzxid ? std::to_string(other->dzxid) : "the end") + ")");
      break;
    }
  }
  result.supervised_holds = static_cast<std::int64_t>(held.size());
}

}  // namespace zkr::chaos
