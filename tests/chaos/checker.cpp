#include "checker.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <stdexcept>

namespace zkr::chaos {
namespace {

constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

struct Write {
  int n = 0;
  std::int64_t sent = 0;
  std::int64_t at = 0;  // when the outcome was recorded
  std::string result;  // ok, rejected, unknown
  std::string err;
  std::map<std::string, std::int64_t> values;
  bool late = false;
  std::string op;
};

struct Op {
  std::string id;
  std::int64_t pid = 0;
  std::string source;
  std::string kind;
  std::vector<std::string> keys;
  std::int64_t acq_at = 0;
  std::int64_t deadline = 0;
  std::optional<std::int64_t> returned_at;
  std::optional<std::int64_t> enter_at;
  std::map<std::string, std::int64_t> tokens;
  std::map<std::string, std::pair<std::int64_t, std::string>> first_lost;  // key -> (at, why)
  std::optional<std::int64_t> exit_at;
  std::vector<Write> writes;
  std::string sid;  // the session the leases were granted in ("0"/"": unknown)
  std::vector<std::string> nodes;  // the lock nodes held, in keys order ("" if not recorded)
  bool release_refused = false;    // its release returned false
};

// A lock constructor given a holder text, and what it did with it.
struct HolderTry {
  std::string source;
  std::string op;
  std::string label;
  bool valid = false;
  std::string outcome;  // threw (std::invalid_argument), accepted, refused (valid, threw), other
  std::int64_t at = 0;
};

struct Cut {
  std::int64_t pid = 0;
  std::string why;
  std::int64_t from = 0;
  std::int64_t to = 0;
  std::string session;  // expire_session: the session ended
  std::string node;     // delete_holder_node: the lock node deleted (only its hold ends)
};

struct Process {
  std::int64_t pid = 0;
  std::int64_t session_timeout_ns = 0;
  std::int64_t last_at = 0;
  bool stopped_cleanly = false;
  std::vector<std::pair<std::int64_t, std::string>> states;  // client states in order
};

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

class Checker {
 public:
  explicit Checker(const RunInput& input) : input_(input) {}

  CheckResult run() {
    read_nemesis();
    for (const auto& [source, events] : input_.workers) read_worker(source, events);
    origin_ = kNever;
    for (const auto& [id, op] : ops_) origin_ = std::min(origin_, op.acq_at);
    if (origin_ == kNever) origin_ = 0;
    count_writes();
    check_holds();
    check_counters();
    finish_counts();
    check_acquires();
    check_holder_texts();
    check_orphans();
    check_bystanders();
    find_stall();
    return std::move(result_);
  }

 private:
  void violation(const std::string& rule, const std::string& text) {
    if (result_.violations[rule]++ < static_cast<std::int64_t>(kExamplesPerRule))
      result_.examples.push_back(rule + ": " + text);
  }

  void read_nemesis() {
    for (const auto& e : input_.nemesis) {
      try {
        if (e.name == "cut") {
          cuts_.push_back({e.integer("pid"), e.get("why"), e.integer("from"), e.integer("to"),
                           e.get("session"), e.get("node")});
        } else if (e.name == "foreign") {
          // A node the nemesis made from a session of its own.
          if (!e.get("path").empty()) foreign_paths_.insert(e.get("path"));
          if (!e.get("session").empty()) foreign_sessions_.insert(parse_hex_session(e.get("session")));
        } else if (e.name == "paused") {
          paused_[e.integer("pid")].emplace_back(e.integer("from"), e.integer("to"));
        } else if (e.name == "fault") {
          if (e.get("effective") != "1") continue;  // it could not take effect
          ++result_.faults[e.get("kind")];
          faults_.push_back({e.integer("from"), e.integer("to"), e.get("kind")});
        } else if (e.name == "phase" && e.get("name") == "faults") {
          phase_from_ = e.integer("from");
          phase_to_ = e.integer("to");
        }
      } catch (const std::exception& x) {
        result_.problems.push_back("nemesis.log:" + std::to_string(e.line) + ": " + x.what());
      }
    }
  }

  void read_worker(const std::string& source, const std::vector<Event>& events) {
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
          ++result_.client_states[s];
          process.states.emplace_back(e.at, s);
          continue;
        }
        const auto& id = e.get("op");
        if (id.empty()) continue;  // readfail without op cannot happen; ignore other lines
        if (e.name == "holder") {
          // Before the acquire, and not always followed by one: not an op record.
          holder_tries_.push_back({source, id, e.get("label"), e.get("valid") == "1", e.get("outcome"), e.at});
          continue;
        }
        Op& op = ops_[id];
        if (e.name == "acq") {
          op.id = id;
          op.pid = process.pid;
          op.source = source;
          op.kind = e.get("kind");
          op.keys = split(e.get("keys"), ',');
          op.acq_at = e.at;
          op.deadline = e.integer("deadline");
          ++result_.acquires;
        } else if (e.name == "noacq") {
          op.returned_at = e.at;
          const auto& why = e.get("why");
          if (why == "timeout") ++result_.timeouts;
          else ++result_.acquire_errors;
        } else if (e.name == "enter") {
          op.returned_at = e.at;
          op.enter_at = e.at;
          op.sid = e.get("sid");
          for (const auto& [k, t] : parse_key_ints(e.get("tokens"))) op.tokens[k] = t;
          op.nodes = split(e.get("nodes"), ',');
          ++result_.acquisitions;
        } else if (e.name == "lost") {
          ++result_.lost_notices[e.get("why")];
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
          for (const auto& [k, v] : parse_key_ints(e.get("values"))) w.values[k] = v;
          const auto same = std::find_if(op.writes.begin(), op.writes.end(),
                                         [&](const Write& x) { return x.n == w.n; });
          if (same == op.writes.end()) op.writes.push_back(std::move(w));
          else *same = std::move(w);
        }
      } catch (const std::exception& x) {
        result_.problems.push_back(source + ":" + std::to_string(e.line) + ": " + x.what());
      }
    }
    if (process.pid == 0) {
      result_.problems.push_back(source + ": no start record");
      return;
    }
    processes_[process.pid] = process;
  }

  // Cuts of this whole process that fall inside [from, until).
  std::optional<Cut> first_cut(std::int64_t pid, std::int64_t from, std::int64_t until) const {
    std::optional<Cut> best;
    for (const auto& c : cuts_)
      if (c.pid == pid && c.node.empty() && c.from >= from && c.from < until && (!best || c.from < best->from)) best = c;
    return best;
  }

  // A cut that ended op's lease session before op entered.
  std::optional<Cut> session_ended_before(const Op& op, std::int64_t enter) const {
    if (op.sid.empty() || op.sid == "0") return std::nullopt;
    for (const auto& c : cuts_)
      if (c.pid == op.pid && c.why == "expire_session" && c.session == op.sid && c.from < enter &&
          c.from >= op.acq_at)
        return c;
    return std::nullopt;
  }

  // The keys of op whose node the nemesis deleted while op was at it (from
  // its acquire to its exit), each with that deletion. Lock node paths come
  // back when a directory is removed and made again, never while one lives:
  // a deletion inside op's time with op's node path was of op's node.
  std::map<std::string, Cut> node_cuts(const Op& op) const {
    std::map<std::string, Cut> out;
    for (const auto& c : cuts_) {
      if (c.node.empty() || c.from < op.acq_at || (op.exit_at && c.from >= *op.exit_at)) continue;
      for (std::size_t i = 0; i < op.nodes.size() && i < op.keys.size(); ++i)
        if (op.nodes[i] == c.node && (!out.count(op.keys[i]) || c.from < out.at(op.keys[i]).from))
          out[op.keys[i]] = c;
    }
    return out;
  }

  std::string describe(const Op& op) const {
    return "op " + op.id + " (" + op.kind + ", pid " + std::to_string(op.pid) + ")";
  }

  void count_writes() {
    for (const auto& [id, op] : ops_) {
      for (const auto& w : op.writes) {
        if (w.result == "ok") ++result_.writes_accepted;
        else if (w.result == "rejected") ++result_.writes_rejected;
        else ++result_.writes_unknown;
        if (w.late) {
          ++result_.late_writes;
          if (w.result == "rejected") ++result_.late_rejected;
        }
      }
    }
  }

  void check_holds() {
    for (auto& [id, op] : ops_) {
      if (!op.enter_at) continue;
      const auto& process = processes_[op.pid];
      const std::int64_t enter = *op.enter_at;
      std::int64_t end = op.exit_at.value_or(kNever);
      std::int64_t fence = kNever;  // writes sent later must not be applied
      for (const auto& [at, s] : process.states) {
        if (at < enter) continue;
        if (s == "suspended" || s == "lost") end = std::min(end, at);
        if (s == "lost") fence = std::min(fence, at);
      }
      if (const auto cut = first_cut(op.pid, enter, op.exit_at.value_or(kNever))) {
        end = std::min(end, cut->from);
        fence = std::min(fence, cut->to);
      }
      // The grant came from replies read before the nemesis ended the session
      // its leases belong to, and reached the worker after: the leases were
      // void from the start. The client cannot know before it hears of the
      // expiry; what it must not do is write, which the fence checks.
      // Such a hold never held: it takes no part in the overlap rule.
      std::set<std::string> void_keys;
      if (const auto cut = session_ended_before(op, enter)) {
        end = enter;
        fence = std::min(fence, cut->to);
        void_keys.insert(op.keys.begin(), op.keys.end());
      }
      // The nemesis deleted the node of one key: that key's hold ends at the
      // deletion, and no write may pass after. A deletion before the grant
      // reached the worker voids that key's hold from the start, as above:
      // the lease learns of it a watch event later (lost_unnoticed checks it
      // does), and its writes must be refused meanwhile.
      std::map<std::string, std::int64_t> key_cut;
      std::optional<std::int64_t> node_gone;  // when a node of op was surely gone
      for (const auto& [key, cut] : node_cuts(op)) {
        key_cut[key] = cut.from;
        if (cut.from <= enter) void_keys.insert(key);
        fence = std::min(fence, cut.to);
        node_gone = std::min(node_gone.value_or(kNever), cut.to);
      }
      if (end == kNever) {
        // No exit and no nemesis action: the process ended mid-hold by itself.
        result_.problems.push_back(describe(op) + " entered at " + ms(enter, origin_) +
                                   " and never left (no exit, no fault explains it)");
        end = process.last_at;
      }
      // A refusal after accepted writes: the lock was gone in between.
      std::sort(op.writes.begin(), op.writes.end(), [](const auto& a, const auto& b) { return a.n < b.n; });
      std::optional<std::int64_t> last_ok;
      for (const auto& w : op.writes) {
        if (w.result == "ok") last_ok = w.sent;
        if (w.result == "rejected") {
          end = std::min(end, last_ok.value_or(enter));
          // The check on the lock node failed: the node was gone by the reply.
          node_gone = std::min(node_gone.value_or(kNever), w.at);
          break;
        }
      }
      check_lost_noticed(op, node_gone);
      if (op.exit_at && op.release_refused)
        violation("release_refused", describe(op) + " was granted at " + ms(enter, origin_) +
                                         " and its release at " + ms(*op.exit_at, origin_) +
                                         " returned false: the lock object lost track of the grant");
      if (op.kind.starts_with("shared_")) ++result_.shared_holds;
      for (const auto& [key, lost] : op.first_lost) {
        if (lost.second == "session_lost" || lost.second == "node_deleted")
          fence = std::min(fence, lost.first);
      }
      fences_[id] = fence;
      for (const auto& key : op.keys) {
        if (void_keys.count(key)) continue;
        std::int64_t key_end = end;
        if (const auto it = op.first_lost.find(key); it != op.first_lost.end())
          key_end = std::min(key_end, it->second.first);
        if (const auto it = key_cut.find(key); it != key_cut.end()) key_end = std::min(key_end, it->second);
        intervals_[key].push_back({enter, std::max(enter, key_end), &op});
      }
    }
    for (auto& [key, list] : intervals_) {
      std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
        return a.enter != b.enter ? a.enter < b.enter : a.end < b.end;
      });
      const Interval* latest = nullptr;
      for (const auto& i : list) {
        if (latest && i.enter < latest->end)
          violation("overlap", "key " + key + ": " + describe(*i.op) + " entered at " +
                                   ms(i.enter, origin_) + " while " + describe(*latest->op) +
                                   " held it [" + ms(latest->enter, origin_) + ", " +
                                   ms(latest->end, origin_) + "]");
        if (!latest || i.end > latest->end) latest = &i;
      }
    }
  }

  // A lease whose node is gone must say lost: a holder that is never told
  // goes on trusting the lock. Judged only where the worker stayed long
  // enough to hear (workers wait for the signal after a refused write).
  void check_lost_noticed(const Op& op, std::optional<std::int64_t> node_gone) {
    if (!node_gone || !op.exit_at || *op.exit_at - *node_gone < kLostNoticeGrace.count() * 1'000'000) return;
    for (const auto& [key, lost] : op.first_lost)
      if (lost.first <= *op.exit_at) return;
    violation("lost_unnoticed", describe(op) + ": its lock node was gone at " + ms(*node_gone, origin_) +
                                    ", and its lease never said lost before it let go at " +
                                    ms(*op.exit_at, origin_));
  }

  void check_counters() {
    // Every write of every key, accepted or unknown.
    std::map<std::string, std::vector<const Write*>> by_key;
    for (const auto& [id, op] : ops_)
      for (const auto& w : op.writes)
        for (const auto& [key, value] : w.values) by_key[key].push_back(&w);
    std::set<std::string> keys;
    for (const auto& [key, _] : by_key) keys.insert(key);
    for (const auto& [key, _] : input_.final_state.counters) keys.insert(key);

    for (const auto& key : keys) {
      const auto counter_it = input_.final_state.counters.find(key);
      if (counter_it == input_.final_state.counters.end()) {
        result_.problems.push_back("final state has no counter for key " + key);
        continue;
      }
      const std::int64_t counter = counter_it->second;
      result_.counters[key] = counter;
      std::map<std::int64_t, const Write*> applied;  // counter value -> write
      std::map<std::int64_t, std::vector<const Write*>> unknown;
      for (const Write* w : by_key[key]) {
        const std::int64_t v = w->values.at(key);
        if (w->result == "ok") {
          if (v > counter)
            violation("lost_update", "key " + key + ": accepted write of " + w->op + " set " +
                                         std::to_string(v) + " but the counter ended at " +
                                         std::to_string(counter));
          if (const auto it = applied.find(v); it != applied.end())
            violation("lost_update", "key " + key + ": " + w->op + " and " + it->second->op +
                                         " both had a write setting the counter to " +
                                         std::to_string(v) + " accepted");
          else
            applied[v] = w;
        } else if (w->result == "unknown") {
          unknown[v].push_back(w);
        }
      }
      for (std::int64_t v = 1; v <= counter; ++v) {
        if (applied.count(v)) continue;
        const auto it = unknown.find(v);
        if (it == unknown.end()) {
          violation("lost_update", "key " + key + ": counter value " + std::to_string(v) +
                                       " was written by no write on record");
          continue;
        }
        applied[v] = it->second.front();  // the reply was lost, the write was not
        unknown_applied_.insert(it->second.front());  // once per write, not per key
      }
      // Token order, and fencing, over the writes that took effect.
      const Write* previous = nullptr;
      for (const auto& [v, w] : applied) {
        if (v > counter) break;
        const auto& op = ops_.at(w->op);
        const auto token = op.tokens.count(key) ? op.tokens.at(key) : 0;
        if (previous) {
          const auto& prev_op = ops_.at(previous->op);
          const auto prev_token = prev_op.tokens.count(key) ? prev_op.tokens.at(key) : 0;
          const bool same_hold = previous->op == w->op;
          if (same_hold ? token != prev_token : token <= prev_token)
            violation("token_order", "key " + key + ": value " + std::to_string(v) + " by " +
                                         describe(op) + " token " + std::to_string(token) +
                                         " after value " + std::to_string(v - 1) + " by " +
                                         describe(prev_op) + " token " + std::to_string(prev_token));
        }
        if (w->sent > fences_[w->op])
          violation("late_write", "key " + key + ": " + describe(op) + " write " +
                                      std::to_string(w->n) + " (" + w->result + ") sent at " +
                                      ms(w->sent, origin_) + ", after its lease was void at " +
                                      ms(fences_[w->op], origin_) + ", took effect");
        previous = w;
      }
      if (counter > 0 && applied.count(counter)) {
        const auto& op = ops_.at(applied.at(counter)->op);
        const auto token = op.tokens.count(key) ? op.tokens.at(key) : 0;
        const auto stored = input_.final_state.tokens.find(key);
        if (stored == input_.final_state.tokens.end() || stored->second != token)
          violation("final_token", "key " + key + ": token node holds " +
                                       (stored == input_.final_state.tokens.end()
                                            ? std::string("nothing")
                                            : std::to_string(stored->second)) +
                                       ", the last write (" + describe(op) + ") had " +
                                       std::to_string(token));
      }
    }
  }

  void finish_counts() { result_.unknown_applied = static_cast<std::int64_t>(unknown_applied_.size()); }

  void check_acquires() {
    for (const auto& [id, op] : ops_) {
      if (!op.returned_at) continue;  // its process was killed mid-acquire
      const auto& process = processes_[op.pid];
      std::int64_t allowed = op.deadline + process.session_timeout_ns;
      for (const auto& [from, to] : paused_[op.pid])
        if (to > op.acq_at && from < *op.returned_at)
          allowed += std::min(to, *op.returned_at) - std::max(from, op.acq_at);
      if (*op.returned_at > allowed)
        violation("acquire_overrun", describe(op) + " asked at " + ms(op.acq_at, origin_) +
                                         " with deadline " + ms(op.deadline, origin_) +
                                         ", returned at " + ms(*op.returned_at, origin_));
    }
  }

  // A holder text with a byte < 0x20 or 0x7f, or too long, must be refused by
  // the lock's constructor (std::invalid_argument); a valid one accepted.
  void check_holder_texts() {
    for (const auto& h : holder_tries_) {
      const std::string where = "op " + h.op + " (" + h.source + ") at " + ms(h.at, origin_);
      if (!h.valid) {
        ++result_.invalid_holders_tried;
        if (h.outcome == "threw") ++result_.invalid_holders_refused;
        else
          violation("invalid_holder_accepted", where + ": a lock constructor given the invalid holder text '" +
                                                   h.label + "' " +
                                                   (h.outcome == "accepted" ? "accepted it"
                                                                            : "threw something else than std::invalid_argument"));
      } else if (h.outcome != "accepted") {
        violation("valid_holder_refused",
                  where + ": a lock constructor refused the valid holder text '" + h.label + "'");
      }
    }
  }

  void check_orphans() {
    const auto& state = input_.final_state;
    std::set<std::string> bystanders;
    for (const auto& node : input_.bystanders.before) bystanders.insert(node.path);
    for (const auto& node : state.lock_root_nodes) {
      // Another application's node, planted before the run: judged by
      // bystander_changed, never the library's orphan whatever its name.
      if (bystanders.count(node.path)) continue;
      if (foreign_paths_.count(node.path) || (node.owner != 0 && foreign_sessions_.count(node.owner))) {
        // The nemesis's own node (a foreign contender, a non-lock child): its
        // move failed to remove it. The run is not clean, but the library is
        // not to blame.
        result_.problems.push_back(node.path + " was left by the nemesis's own session, not by a worker");
        continue;
      }
      const auto name = node.path.substr(node.path.rfind('/') + 1);
      const bool lock_node = name.find("-lock-") != std::string::npos;
      const bool dead_owner = node.owner != 0 && !state.live_sessions.count(node.owner);
      if (lock_node || dead_owner)
        result_.orphans.push_back(node.path + (node.owner ? " (session " + hex_session(node.owner) + ")" : ""));
    }
  }

  // Every bystander must be, after the run and the sweep, the node it was
  // before the workers started: same incarnation, same data, same owner.
  void check_bystanders() {
    const auto& record = input_.bystanders;
    if (record.sweep) result_.sweep = *record.sweep;
    if (record.before.empty()) return;  // a run made before issue 11
    if (!record.sweep)
      result_.problems.push_back("no sweep of the lock root on record: the bystanders met no clean_lock_root");
    else if (record.sweep->starts_with("error="))
      result_.problems.push_back("the sweep of the lock root failed: " + *record.sweep);
    std::map<std::string, const Bystander*> after;
    for (const auto& node : record.after) after[node.path] = &node;
    for (const auto& was : record.before) {
      ++result_.bystanders;
      const auto it = after.find(was.path);
      if (it == after.end()) {
        result_.problems.push_back(was.path + ": another application's node has no record after the run");
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
        if (now.data != was.data) changes.push_back("data '" + shown(was.data) + "' -> '" + shown(now.data) + "'");
        if (now.owner != was.owner)
          changes.push_back("owner " + hex_session(was.owner) + " -> " + hex_session(now.owner));
      }
      if (changes.empty()) continue;
      std::string text = was.path + " (another application's, data '" + shown(was.data) + "'):";
      for (std::size_t i = 0; i < changes.size(); ++i) text += (i ? ", " : " ") + changes[i];
      violation("bystander_changed", text);
    }
  }

  // Data for a report line: printable, and short ('' for none, not word's "-").
  static std::string shown(const std::string& data) {
    constexpr std::size_t kShown = 48;
    if (data.empty()) return "";
    const auto text = word(data.substr(0, kShown));
    return data.size() > kShown ? text + "...(" + std::to_string(data.size()) + " bytes)" : text;
  }

  // The longest time in the fault phase with no acquisition granted anywhere.
  void find_stall() {
    if (phase_to_ <= phase_from_) return;
    std::vector<std::int64_t> points{phase_from_, phase_to_};
    for (const auto& [id, op] : ops_)
      if (op.enter_at && *op.enter_at > phase_from_ && *op.enter_at < phase_to_)
        points.push_back(*op.enter_at);
    std::sort(points.begin(), points.end());
    std::int64_t from = 0;
    for (std::size_t i = 1; i < points.size(); ++i) {
      if (points[i] - points[i - 1] > result_.longest_stall_ns) {
        result_.longest_stall_ns = points[i] - points[i - 1];
        from = points[i - 1];
      }
    }
    const auto to = from + result_.longest_stall_ns;
    std::string during;
    for (const auto& f : faults_)
      if (f.from < to && f.to > from) during += (during.empty() ? "" : ",") + f.kind;
    result_.longest_stall_where = "from " + ms(from, phase_from_) + " into the fault phase" +
                                  (during.empty() ? "" : ", during " + during);
  }

  struct Interval {
    std::int64_t enter;
    std::int64_t end;
    const Op* op;
  };
  struct Fault {
    std::int64_t from;
    std::int64_t to;
    std::string kind;
  };

  const RunInput& input_;
  CheckResult result_;
  std::map<std::string, Op> ops_;
  std::map<std::int64_t, Process> processes_;
  std::vector<Cut> cuts_;
  std::vector<HolderTry> holder_tries_;
  std::set<std::string> foreign_paths_;
  std::set<std::int64_t> foreign_sessions_;
  std::vector<Fault> faults_;
  std::map<std::int64_t, std::vector<std::pair<std::int64_t, std::int64_t>>> paused_;
  std::map<std::string, std::vector<Interval>> intervals_;
  std::map<std::string, std::int64_t> fences_;
  std::set<const Write*> unknown_applied_;
  std::int64_t origin_ = 0;
  std::int64_t phase_from_ = 0;
  std::int64_t phase_to_ = 0;
};

}  // namespace

std::int64_t CheckResult::violation_count() const {
  std::int64_t n = 0;
  for (const auto& [rule, count] : violations) n += count;
  return n;
}

CheckResult check(const RunInput& input) { return Checker(input).run(); }

void write_final_state(const std::string& path, const FinalState& state) {
  std::ofstream out(path);
  for (const auto& [key, value] : state.counters)
    out << "0 counter key=" << word(key) << " value=" << value << "\n";
  for (const auto& [key, value] : state.tokens)
    out << "0 token key=" << word(key) << " value=" << value << "\n";
  for (const auto& node : state.lock_root_nodes)
    out << "0 node path=" << word(node.path) << " owner=" << hex_session(node.owner) << "\n";
  for (const auto session : state.live_sessions) out << "0 live session=" << hex_session(session) << "\n";
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path);
}

FinalState read_final_state(const std::string& path) {
  FinalState state;
  for (const auto& e : read_events(path)) {
    if (e.name == "counter") state.counters[e.get("key")] = e.integer("value");
    else if (e.name == "token") state.tokens[e.get("key")] = e.integer("value");
    else if (e.name == "node") state.lock_root_nodes.push_back({e.get("path"), parse_hex_session(e.get("owner"))});
    else if (e.name == "live") state.live_sessions.insert(parse_hex_session(e.get("session")));
  }
  return state;
}

Fields bystander_fields(const Bystander& node) {
  return {{"path", word(node.path)},
          {"exists", node.exists ? "1" : "0"},
          {"data", node.data.empty() ? "-" : to_hex(node.data)},  // an empty value would be "-" anyway (word)
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
        for (const auto& [key, value] : e.fields) text += (text.empty() ? "" : " ") + key + "=" + value;
        record.sweep = text;
      }
    } catch (const std::invalid_argument& x) {
      throw std::runtime_error(path + ":" + std::to_string(e.line) + ": " + x.what());
    }
  }
  return record;
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
  return input;
}

}  // namespace zkr::chaos
