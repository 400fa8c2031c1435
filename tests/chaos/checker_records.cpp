#include "checker_records.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace zkr::chaos {
namespace {

void read_nemesis(const RunInput& input, CheckResult& result, ParsedRun& run) {
  for (const auto& e : input.nemesis) {
    try {
      if (e.name == "cut") {
        run.cuts.push_back({e.integer("pid"), e.get("why"), e.integer("from"), e.integer("to"),
                            e.get("session"), e.get("node")});
      } else if (e.name == "foreign") {
        // A node the nemesis made from a session of its own.
        if (!e.get("path").empty()) run.foreign_paths.insert(e.get("path"));
        if (!e.get("session").empty())
          run.foreign_sessions.insert(parse_hex_session(e.get("session")));
      } else if (e.name == "paused") {
        run.paused[e.integer("pid")].emplace_back(e.integer("from"), e.integer("to"));
      } else if (e.name == "fault") {
        if (e.get("effective") != "1") continue;  // it could not take effect
        ++result.faults[e.get("kind")];
        run.faults.push_back({e.integer("from"), e.integer("to"), e.get("kind")});
      } else if (e.name == "phase" && e.get("name") == "faults") {
        run.phase_from = e.integer("from");
        run.phase_to = e.integer("to");
      }
    } catch (const std::exception& x) {
      result.problems.push_back("nemesis.log:" + std::to_string(e.line) + ": " + x.what());
    }
  }
}

void read_worker(const std::string& source, const std::vector<Event>& events, CheckResult& result,
                 ParsedRun& run) {
  Process process;
  for (const auto& e : events) {
    try {
      process.last_at = std::max(process.last_at, e.at);
      if (e.name == "start") {
        process.pid = e.integer("pid");
        process.session_timeout_ns = e.integer("session_timeout_ms") * 1'000'000;
        continue;
      }
      if (e.name == "stop") {
        process.stopped_cleanly = true;
        continue;
      }
      if (e.name == "state") {
        const auto& s = e.get("s");
        ++result.client_states[s];
        process.states.emplace_back(e.at, s);
        continue;
      }
      const auto& id = e.get("op");
      if (id.empty()) continue;  // readfail without op cannot happen; ignore other lines
      if (e.name == "holder") {
        // Before the acquire, and not always followed by one: not an op record.
        run.holder_tries.push_back(
            {source, id, e.get("label"), e.get("valid") == "1", e.get("outcome"), e.at});
        continue;
      }
      Op& op = run.ops[id];
      if (e.name == "acq") {
        op.id = id;
        op.pid = process.pid;
        op.source = source;
        op.kind = e.get("kind");
        op.keys = split(e.get("keys"), ',');
        op.acq_at = e.at;
        op.deadline = e.integer("deadline");
        if (!e.get("limit").empty()) op.limit = e.integer("limit");
        ++result.acquires;
      } else if (e.name == "noacq") {
        op.returned_at = e.at;
        const auto& why = e.get("why");
        if (why == "timeout") ++result.timeouts;
        else ++result.acquire_errors;
      } else if (e.name == "enter") {
        op.returned_at = e.at;
        op.enter_at = e.at;
        op.sid = e.get("sid");
        for (const auto& [k, t] : parse_key_ints(e.get("tokens"))) op.tokens[k] = t;
        op.nodes = split(e.get("nodes"), ',');
        ++result.acquisitions;
        ++result.grants_by_kind[op.kind];
      } else if (e.name == "lost") {
        ++result.lost_notices[e.get("why")];
        const auto& key = e.get("key");
        if (!op.first_lost.count(key)) op.first_lost[key] = {e.at, e.get("why")};
      } else if (e.name == "exit") {
        op.exit_at = e.at;
      } else if (e.name == "release") {
        op.release_refused = e.get("ok") == "0";
      } else if (e.name == "wsend" || e.name == "write") {
        // wsend: the intent, before the request; write: the outcome. A
        // wsend with no write (the process was killed) stays unknown.
        Write w;
        w.op = id;
        w.n = static_cast<int>(e.integer("n"));
        w.sent = e.integer("sent");
        w.at = e.at;
        w.result = e.name == "write" ? e.get("result") : "unknown";
        w.err = e.name == "write" ? e.get("err") : "no_outcome_recorded";
        w.late = e.get("late") == "1";
        w.lost_at_reply = e.get("lost") == "1";
        for (const auto& [k, v] : parse_key_ints(e.get("values"))) w.values[k] = v;
        const auto same = std::find_if(op.writes.begin(), op.writes.end(),
                                       [&](const Write& x) { return x.n == w.n; });
        if (same == op.writes.end()) op.writes.push_back(std::move(w));
        else *same = std::move(w);
      }
    } catch (const std::exception& x) {
      result.problems.push_back(source + ":" + std::to_string(e.line) + ": " + x.what());
    }
  }
  if (process.pid == 0) {
    result.problems.push_back(source + ": no start record");
    return;
  }
  run.processes[process.pid] = process;
}

}  // namespace

std::int64_t paused_within(const Pauses& pauses, std::int64_t pid, std::int64_t from,
                           std::int64_t to) {
  std::int64_t total = 0;
  if (const auto it = pauses.find(pid); it != pauses.end())
    for (const auto& [a, b] : it->second)
      if (b > from && a < to) total += std::min(b, to) - std::max(a, from);
  return total;
}

ParsedRun parse_records(const RunInput& input, CheckResult& result) {
  ParsedRun run;
  read_nemesis(input, result, run);
  for (const auto& [source, events] : input.workers) read_worker(source, events, result, run);
  return run;
}

void add_violation(CheckResult& result, const std::string& rule, const std::string& text) {
  if (result.violations[rule]++ < static_cast<std::int64_t>(kExamplesPerRule))
    result.examples.push_back(rule + ": " + text);
}

std::string ms(std::int64_t ns, std::int64_t origin) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.1fms", static_cast<double>(ns - origin) / 1e6);
  return text;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const auto end = std::min(text.find(sep, at), text.size());
    if (end > at) out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

std::string hex_session(std::int64_t id) {
  char text[32];
  std::snprintf(text, sizeof text, "%llx", static_cast<unsigned long long>(id));
  return text;
}

std::int64_t parse_hex_session(const std::string& text) {
  unsigned long long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (text.empty() || error != std::errc() || end != text.data() + text.size())
    throw std::invalid_argument("bad session id '" + text + "'");
  return static_cast<std::int64_t>(value);
}

void write_final_state(const std::string& path, const FinalState& state) {
  std::ofstream out(path);
  for (const auto& [key, value] : state.counters)
    out << "0 counter key=" << word(key) << " value=" << value << "\n";
  for (const auto& [key, value] : state.tokens)
    out << "0 token key=" << word(key) << " value=" << value << "\n";
  for (const auto& node : state.lock_root_nodes)
    out << "0 node path=" << word(node.path) << " owner=" << hex_session(node.owner) << "\n";
  for (const auto session : state.live_sessions)
    out << "0 live session=" << hex_session(session) << "\n";
  for (const auto& [counter, value] : state.long_counters)
    out << "0 along path=" << word(counter) << " value=" << value << "\n";
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path);
}

FinalState read_final_state(const std::string& path) {
  FinalState state;
  for (const auto& e : read_events(path)) {
    if (e.name == "counter") state.counters[e.get("key")] = e.integer("value");
    else if (e.name == "token") state.tokens[e.get("key")] = e.integer("value");
    else if (e.name == "node")
      state.lock_root_nodes.push_back({e.get("path"), parse_hex_session(e.get("owner"))});
    else if (e.name == "live") state.live_sessions.insert(parse_hex_session(e.get("session")));
    else if (e.name == "along") state.long_counters[e.get("path")] = e.integer("value");
  }
  return state;
}

RunInput load_run(const std::string& dir) {
  namespace fs = std::filesystem;
  RunInput input;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const auto name = entry.path().filename().string();
    if (name.starts_with("worker-") && name.ends_with(".log")) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files)
    input.workers.emplace_back(file.filename().string(), read_events(file.string()));
  input.nemesis = read_events((fs::path(dir) / "nemesis.log").string());
  input.final_state = read_final_state((fs::path(dir) / "final-state.txt").string());
  if (const auto bystanders = fs::path(dir) / "bystanders.txt"; fs::exists(bystanders))
    input.bystanders = read_bystanders(bystanders.string());
  if (const auto record = fs::path(dir) / "server-record.txt"; fs::exists(record)) {
    input.lives = read_server_record(record.string());
    input.has_server_record = true;
  }
  return input;
}

}  // namespace zkr::chaos
