// See member_participant.hpp.
#include "member_participant.hpp"

#include <exception>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "zkr/group_member.hpp"

namespace zkr::chaos {
namespace {

using std::chrono::milliseconds;

// How long the view may take to agree with the tree at the end.
constexpr milliseconds kSettleBound{8000};
// Between two comparisons while they differ, and the cadence of the wait
// for the run's end (the thread must notice a stop soon).
constexpr milliseconds kStep{100};

using Members = std::map<std::string, std::string>;

// The group as the servers hold it, synced first; nullopt if a read failed.
std::optional<Members> read_group(Client& client, const std::string& group) {
  try {
    auto keeper = client.keeper_when_connected(std::chrono::steady_clock::now() + kStep * 10);
    keeper->sync(group);
    Members members;
    auto listed = keeper->try_children(group);
    if (listed.error() == Errc::no_node) return members;
    for (const auto& name : listed.value().names) {
      auto got = keeper->try_get(group + "/" + name);
      if (got.error() == Errc::no_node) continue;  // left meanwhile: the next read says
      members[name] = got.value().data;
    }
    return members;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string describe(const Members& view, const Members& tree) {
  std::string diff;
  for (const auto& [id, data] : view)
    if (!tree.count(id) || tree.at(id) != data) diff += (diff.empty() ? "" : ",") + id + "(view)";
  for (const auto& [id, data] : tree)
    if (!view.count(id)) diff += (diff.empty() ? "" : ",") + id + "(tree)";
  return diff.empty() ? "none" : diff;
}

}  // namespace

void run_member_participant(const MemberParticipantConfig& config, Client& client, EventLog& log,
                            const std::atomic<bool>& stop,
                            std::chrono::steady_clock::time_point end) {
  try {
    GroupMember member(client, config.group, config.id, config.data);
    member.start();
    while (!stop && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(kStep);
    const auto from = std::chrono::steady_clock::now();
    bool converged = false;
    bool stable = false;
    std::string diff = "no read";
    std::size_t count = 0;
    while (std::chrono::steady_clock::now() - from < kSettleBound) {
      const auto before = read_group(client, config.group);
      const auto view = member.current_members();
      const auto after = read_group(client, config.group);
      if (before && after) {
        stable = *before == *after;
        converged = stable && view == *after;
        diff = describe(view, *after);
        count = view.size();
        if (converged) break;
      }
      std::this_thread::sleep_for(kStep);
    }
    const auto ms =
        std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - from);
    Fields fields{{"converged", converged ? "1" : "0"},
                  {"stable", stable ? "1" : "0"},
                  {"ms", std::to_string(ms.count())},
                  {"members", std::to_string(count)}};
    if (!converged) fields.emplace_back("diff", diff);
    log.write("gview", fields);
    member.close();
  } catch (const std::exception& e) {
    log.write("gview",
              {{"converged", "0"}, {"stable", "0"}, {"err", std::string(e.what()).substr(0, 200)}});
  }
}

}  // namespace zkr::chaos
