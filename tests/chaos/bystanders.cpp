// Bystanders, other applications' nodes in the lock root: their records (RUN/bystanders.txt) and the rule
// bystander_changed (checker.hpp).
#include <stdexcept>

#include "checker_records.hpp"

namespace zkr::chaos {
namespace {

// Data for a report line: printable, and short ('' for none, not word's "-").
std::string shown(const std::string& data) {
  constexpr std::size_t kShown = 48;
  if (data.empty()) return "";
  const auto text = word(data.substr(0, kShown));
  return data.size() > kShown ? text + "...(" + std::to_string(data.size()) + " bytes)" : text;
}

}  // namespace

// Every bystander must be, after the run and the sweep, the node it was
// before the workers started: same incarnation, same data, same owner.
void check_bystanders(const BystanderRecord& record, CheckResult& result) {
  if (record.sweep) result.sweep = *record.sweep;
  if (record.before.empty()) return;  // a run that recorded no bystanders
  if (!record.sweep)
    result.problems.push_back(
        "no sweep of the lock root on record: the bystanders met no clean_lock_root");
  else if (record.sweep->starts_with("error="))
    result.problems.push_back("the sweep of the lock root failed: " + *record.sweep);
  std::map<std::string, const Bystander*> after;
  for (const auto& node : record.after) after[node.path] = &node;
  for (const auto& was : record.before) {
    ++result.bystanders;
    const auto it = after.find(was.path);
    if (it == after.end()) {
      result.problems.push_back(was.path +
                                ": another application's node has no record after the run");
      continue;
    }
    const auto& now = *it->second;
    std::vector<std::string> changes;
    if (!now.exists) {
      changes.push_back("deleted");
    } else {
      if (now.czxid != was.czxid)
        changes.push_back("deleted and created again (czxid " + std::to_string(was.czxid) + " -> " +
                          std::to_string(now.czxid) + ")");
      // (A node made again has a new mzxid of course: not a write on its own.)
      if (now.version != was.version || (now.czxid == was.czxid && now.mzxid != was.mzxid))
        changes.push_back("data written (version " + std::to_string(was.version) + " -> " +
                          std::to_string(now.version) + ")");
      if (now.data != was.data)
        changes.push_back("data '" + shown(was.data) + "' -> '" + shown(now.data) + "'");
      if (now.owner != was.owner)
        changes.push_back("owner " + hex_session(was.owner) + " -> " + hex_session(now.owner));
    }
    if (changes.empty()) continue;
    std::string text = was.path + " (another application's, data '" + shown(was.data) + "'):";
    for (std::size_t i = 0; i < changes.size(); ++i) text += (i ? ", " : " ") + changes[i];
    add_violation(result, "bystander_changed", text);
  }
}

Fields bystander_fields(const Bystander& node) {
  return {
      {"path", word(node.path)},
      {"exists", node.exists ? "1" : "0"},
      {"data",
       node.data.empty() ? "-" : to_hex(node.data)},  // an empty value would be "-" anyway (word)
      {"czxid", std::to_string(node.czxid)},
      {"mzxid", std::to_string(node.mzxid)},
      {"version", std::to_string(node.version)},
      {"owner", hex_session(node.owner)}};
}

Bystander parse_bystander(const Event& e) {
  Bystander node;
  node.path = e.get("path");
  if (node.path.empty()) throw std::invalid_argument("a bystander record without a path");
  node.exists = e.get("exists") != "0";
  if (e.get("data") != "-") node.data = from_hex(e.get("data"));
  node.czxid = e.integer("czxid");
  node.mzxid = e.integer("mzxid");
  node.version = static_cast<std::int32_t>(e.integer("version"));
  node.owner = parse_hex_session(e.get("owner"));
  return node;
}

BystanderRecord read_bystanders(const std::string& path) {
  BystanderRecord record;
  for (const auto& e : read_events(path)) {
    try {
      if (e.name == "before") record.before.push_back(parse_bystander(e));
      else if (e.name == "after") record.after.push_back(parse_bystander(e));
      else if (e.name == "sweep") {
        std::string text;
        for (const auto& [key, value] : e.fields)
          text += (text.empty() ? "" : " ") + key + "=" + value;
        record.sweep = text;
      }
    } catch (const std::invalid_argument& x) {
      throw std::runtime_error(path + ":" + std::to_string(e.line) + ": " + x.what());
    }
  }
  return record;
}

}  // namespace zkr::chaos
