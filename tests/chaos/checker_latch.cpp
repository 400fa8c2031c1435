// The leader latch rules (see checker.hpp): one leader at a time, judged by
// the servers' record of the latch nodes' lives and of the leaders' writes,
// and lost leadership noticed, judged by the participants' records beside
// that record.
//
// A leader's guarded write creates a persistent sequential node under
// kLeaderWriteRoot named after the leader's latch node and the epoch it
// believed it had: "<latch node name>-e<epoch>-w<seq>". Such a node is in the
// servers' record only if the write was applied, and its czxid says where in
// the order of all transactions it was applied: so the record alone says
// whether the writer's node was then alive and first on its latch path.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "checker.hpp"
#include "checker_records.hpp"

namespace zkr::chaos {
namespace {

// A latch node's place in its queue: the text after the last "latch-", as
// Curator and the library order them (ten digits, so text order is number order).
std::string latch_sequence_of(const std::string& name) {
  const auto at = name.rfind("latch-");
  return at == std::string::npos ? name : name.substr(at + 6);
}

std::optional<std::int64_t> decimal_of(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return {};
  return value;
}

// A leader's write on the record: the latch node it names and the epoch it carries.
struct LeaderWrite {
  const NodeLife* life = nullptr;
  std::string latch_node;  // the full path of the writer's latch node
  std::int64_t epoch = 0;
};

void judge_record(const std::vector<NodeLife>& lives, CheckResult& result) {
  const std::string latch_root = std::string(kLatchRoot) + "/";
  const std::string write_root = std::string(kLeaderWriteRoot) + "/";
  std::map<std::string, const NodeLife*> latch_by_path;
  std::map<std::string, std::vector<const NodeLife*>> latch_by_dir;
  std::map<std::string, std::vector<LeaderWrite>> writes_by_dir;  // by the latch path
  for (const auto& life : lives) {
    if (life.path.starts_with(latch_root)) {
      latch_by_path[life.path] = &life;
      latch_by_dir[dir_of(life.path)].push_back(&life);
      continue;
    }
    if (!life.path.starts_with(write_root)) continue;
    const auto name = name_of(life.path);
    const auto w = name.rfind("-w");
    const auto e = name.rfind("-e", w);
    const auto epoch = e == std::string::npos || w == std::string::npos
                           ? std::nullopt
                           : decimal_of(std::string_view(name).substr(e + 2, w - e - 2));
    if (!epoch) {
      result.problems.push_back("leader write " + life.path + " names no latch node and epoch");
      continue;
    }
    // /chaos/lwrites/l0/<name> is a write of a leader of /chaos/latch/l0.
    const auto latch_dir = latch_root + dir_of(life.path).substr(write_root.size());
    writes_by_dir[latch_dir].push_back({&life, latch_dir + "/" + name.substr(0, e), *epoch});
  }
  for (auto& [dir, writes] : writes_by_dir) {
    std::sort(writes.begin(), writes.end(),
              [](const auto& a, const auto& b) { return a.life->czxid < b.life->czxid; });
    std::int64_t last_epoch = 0;
    for (const auto& write : writes) {
      ++result.latch_record_writes;
      const auto z = write.life->czxid;
      const auto at = " (zxid " + std::to_string(z) + ")";
      if (last_epoch != 0 && write.epoch != last_epoch) ++result.latch_failovers;
      if (write.epoch < last_epoch)
        add_violation(result, "epoch_order",
                      "leader write " + write.life->path + at + " carries epoch " +
                          std::to_string(write.epoch) + " after a write of epoch " +
                          std::to_string(last_epoch) + " on " + dir);
      last_epoch = std::max(last_epoch, write.epoch);
      const auto it = latch_by_path.find(write.latch_node);
      if (it == latch_by_path.end()) {
        result.problems.push_back("leader write " + write.life->path +
                                  " names no latch node of the record");
        continue;
      }
      const NodeLife& node = *it->second;
      if (node.czxid != write.epoch)
        add_violation(result, "wrong_epoch",
                      "leader write " + write.life->path + at + " carries epoch " +
                          std::to_string(write.epoch) + ", its latch node's czxid is " +
                          std::to_string(node.czxid));
      if (!alive_at(node, z)) {
        add_violation(result, "leader_write_after_loss",
                      "leader write " + write.life->path + " applied at zxid " + std::to_string(z) +
                          ", after its latch node ended at zxid " + std::to_string(node.dzxid) +
                          " (" + node.end + ")");
        continue;
      }
      for (const NodeLife* other : latch_by_dir[dir]) {
        if (other == &node || !alive_at(*other, z)) continue;
        if (latch_sequence_of(name_of(other->path)) < latch_sequence_of(name_of(node.path)))
          add_violation(result, "two_leaders",
                        "leader write " + write.life->path + at + " applied while " + other->path +
                            " (alive from zxid " + std::to_string(other->czxid) +
                            ") was before its node in the latch queue");
      }
    }
  }
}

// The participants' records: "lterm" (a term began), "lwrite" (a leader's
// guarded write and its outcome, `lost` whether the term had said lost when
// the reply was back), "llost" (the term's lost signal).
void judge_participants(const RunInput& input, CheckResult& result) {
  std::set<std::string> term_nodes;  // the latch nodes of every term
  for (const auto& [source, events] : input.workers) {
    for (const auto& e : events) {
      if (e.name == "lterm") {
        ++result.latch_terms;
        term_nodes.insert(e.get("node"));
      } else if (e.name == "llost") {
        ++result.latch_lost_notices;
      } else if (e.name == "lwrite") {
        const auto& outcome = e.get("result");
        const bool late = e.get("late") == "1";
        if (late) ++result.latch_late_writes;
        if (outcome == "ok") ++result.latch_writes_ok;
        if (outcome == "unknown") ++result.latch_writes_unknown;
        if (outcome != "rejected") continue;
        ++result.latch_writes_refused;
        if (late) {
          ++result.latch_late_refused;
        } else if (e.get("lost") != "1") {
          add_violation(result, "leader_silent_loss",
                        "term " + e.get("term") + " (" + source + "): leader write " + e.get("n") +
                            " was refused (its latch node was gone) and the term " +
                            "had not said lost by the reply");
        }
      }
    }
  }
  // The nemesis's delete_leader_node: a hit when the node deleted was a term's.
  for (const auto& e : input.nemesis) {
    if (e.name != "fault" || e.get("kind") != "delete_leader_node" || e.get("effective") != "1")
      continue;
    const auto& detail = e.get("detail");
    if (!detail.starts_with("path=")) continue;
    const auto path = detail.substr(5, detail.find(',') - 5);
    if (term_nodes.count(path)) ++result.latch_leader_hits;
  }
}

// A term whose latch node ended must hear of it: say lost, or begin to
// close, within kLostNoticeGrace of the node's end (or of the term's start,
// if the node ended first), counting only the time its process ran. A term
// that never said either is judged up to the last record of its process
// (a killed process hears nothing, and owes nothing after it died).
void judge_lost_noticed(const RunInput& input, const Pauses& pauses, CheckResult& result) {
  std::map<std::string, const NodeLife*> latch_by_path;
  for (const auto& life : input.lives)
    if (life.path.starts_with(kLatchRoot)) latch_by_path[life.path] = &life;
  const auto grace = std::chrono::nanoseconds(kLostNoticeGrace).count();
  for (const auto& [source, events] : input.workers) {
    std::int64_t pid = 0;
    std::int64_t last_at = 0;
    std::map<std::string, const Event*> term_began;  // by term id
    std::map<std::string, std::int64_t> heard;       // by term id: the first llost or lclose
    for (const auto& e : events) {
      last_at = std::max(last_at, e.at);
      if (e.name == "start") pid = e.integer("pid");
      if (e.name == "lterm") term_began[e.get("term")] = &e;
      if ((e.name == "llost" || e.name == "lclose" || e.name == "lend") &&
          !heard.count(e.get("term")))
        heard[e.get("term")] = e.at;
    }
    for (const auto& [term, began] : term_began) {
      const auto node = latch_by_path.find(began->get("node"));
      if (node == latch_by_path.end() || !node->second->deleted) continue;
      const auto from = std::max(*node->second->deleted, began->at);
      const auto it = heard.find(term);
      const auto to = it == heard.end() ? last_at : it->second;
      if (to - from - paused_within(pauses, pid, from, to) < grace) continue;
      add_violation(result, "leader_lost_unnoticed",
                    "term " + term + " (" + source + "): its latch node " + node->first +
                        " ended (" + node->second->end + ") and the term " +
                        (it == heard.end() ? "never said lost nor closed in the "
                                           : "said lost or closed only after ") +
                        std::to_string((to - from) / 1'000'000) + " ms");
    }
  }
}

}  // namespace

void check_leader_latch(const RunInput& input, const Pauses& pauses, CheckResult& result) {
  judge_record(input.lives, result);
  judge_participants(input, result);
  judge_lost_noticed(input, pauses, result);
}

}  // namespace zkr::chaos
