#include "checker.hpp"
#include "checker_records.hpp"

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

// The servers' clock in their transaction logs: milliseconds.
constexpr std::int64_t kStampResolution = 1'000'000;

// A timed acquire bounds every wait after its deadline by the deadline plus
// one session timeout (include/zkr/lock.hpp); returning from the last of
// them, giving back a MultiLock's other locks and writing the event take a
// little more on a loaded machine. Seen: 0.3 ms.
constexpr std::int64_t kReturnSlackNs = 100'000'000;

class Checker {
 public:
  explicit Checker(const RunInput& input) : input_(input) {}

  CheckResult run() {
    for (const auto& life : input_.lives) {
      lives_[life.path].push_back(&life);
      if (!life.path.starts_with(std::string(kSupervisedLockRoot) + "/") &&
          !life.path.starts_with(std::string(kTickRoot) + "/") &&
          !life.path.starts_with(std::string(kLatchRoot) + "/") &&
          !life.path.starts_with(std::string(kLeaderWriteRoot) + "/"))
        ++result_.server_lives;
    }
    if (!input_.has_server_record)
      result_.problems.push_back(
          "no servers' record (server-record.txt): the overlap rule cannot be judged");
    parsed_ = parse_records(input_, result_);
    origin_ = kNever;
    for (const auto& [id, op] : ops_) origin_ = std::min(origin_, op.acq_at);
    if (origin_ == kNever) origin_ = 0;
    count_writes();
    check_holds();
    count_holder_hits();
    check_counters();
    finish_counts();
    check_acquires();
    check_holder_texts();
    check_orphans();
    check_bystanders(input_.bystanders, result_);
    check_supervised_commands(input_.lives, result_);
    check_leader_latch(input_, paused_, result_);
    check_counter_history(input_, result_);
    check_member_views(input_, result_);
    find_stall();
    return std::move(result_);
  }

 private:
  // A grant in force, by the servers' record: from enter until its node's deletion.
  struct Interval {
    std::int64_t enter;
    std::int64_t end;
    const Op* op;
    const NodeLife* life;
  };

  void violation(const std::string& rule, const std::string& text) {
    add_violation(result_, rule, text);
  }

  // The life on the servers of the node a grant names: the latest incarnation
  // of that path created before the grant (a path comes back only when its
  // directory is removed and made again). nullptr if the record has none.
  const NodeLife* life_of(const std::string& node, std::int64_t granted) const {
    const auto it = lives_.find(node);
    if (it == lives_.end()) return nullptr;
    const NodeLife* best = nullptr;
    for (const auto* life : it->second)
      if (life->created <= granted && (!best || life->created > best->created)) best = life;
    return best;
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

  // The main rule, judged by the servers' record: a grant is in force from
  // the moment the worker had it (enter) until its lock node was deleted on the
  // servers (a release, the nemesis, or the close of its session: whichever
  // came first), whatever the client believed meanwhile. Two grants of one key
  // in force at once are an overlap. A grant whose node was gone before the
  // worker had it (its grant was on the way while the session ended or the
  // node was deleted) is void: no interval; fencing must refuse its writes.
  void check_holds() {
    for (auto& [id, op] : ops_) {
      if (!op.enter_at) continue;
      const std::int64_t enter = *op.enter_at;
      if (!op.exit_at && !killed_after(op.pid, enter))
        result_.problems.push_back(describe(op) + " entered at " + ms(enter, origin_) +
                                   " and never left (no exit, and its process was not killed)");
      std::int64_t fence = kNever;            // writes sent later must not take effect
      std::optional<std::int64_t> node_gone;  // while the hold lasted, in the servers' record
      for (std::size_t i = 0; i < op.keys.size(); ++i) {
        const std::string node = i < op.nodes.size() && op.nodes[i] != "-" ? op.nodes[i] : "";
        if (node.empty()) {
          if (input_.has_server_record)
            result_.problems.push_back(describe(op) + ": a grant of " + op.keys[i] +
                                       " names no lock node");
          continue;
        }
        const auto* life = life_of(node, enter);
        if (!life) {
          if (input_.has_server_record)
            result_.problems.push_back(describe(op) + " was granted " + node + " at " +
                                       ms(enter, origin_) +
                                       ", a node the servers' record has not created by then");
          continue;
        }
        const auto end = life->deleted.value_or(kNever);
        // The leader stamps a transaction (to the millisecond, rounded down)
        // before any request sent later is ordered after it: a guarded write
        // sent after the stamp's millisecond must find the node gone.
        if (end != kNever) fence = std::min(fence, end + kStampResolution);
        if (end <= op.exit_at.value_or(kNever))
          node_gone = std::min(node_gone.value_or(kNever), end);
        if (end <= enter) {
          ++result_.void_grants;
          continue;
        }
        intervals_[op.keys[i]].push_back({enter, end, &op, life});
      }
      std::sort(op.writes.begin(), op.writes.end(),
                [](const auto& a, const auto& b) { return a.n < b.n; });
      for (const auto& w : op.writes) {
        if (w.result != "rejected") continue;
        // The check on the lock node failed: the node was gone by the reply.
        node_gone = std::min(node_gone.value_or(kNever), w.at);
        if (!w.late && !w.lost_at_reply && !lost_by(op, w.at))
          violation("silent_loss",
                    describe(op) + ": guarded write " + std::to_string(w.n) + " sent at " +
                        ms(w.sent, origin_) + " was refused (its lock node was gone) at " +
                        ms(w.at, origin_) + ", and no grant of the hold had said lost");
        break;
      }
      check_lost_noticed(op, node_gone);
      if (op.exit_at && op.release_refused)
        violation("release_refused",
                  describe(op) + " was granted at " + ms(enter, origin_) + " and its release at " +
                      ms(*op.exit_at, origin_) +
                      " returned false: the lock object lost track of the grant");
      if (op.kind.starts_with("shared_")) ++result_.shared_holds;
      for (const auto& [key, lost] : op.first_lost) {
        if (lost.second == "session_lost" || lost.second == "node_deleted")
          fence = std::min(fence, lost.first);
      }
      fences_[id] = fence;
    }
    for (auto& [key, list] : intervals_) {
      std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
        return a.enter != b.enter ? a.enter < b.enter : a.end < b.end;
      });
      const auto leases = std::count_if(list.begin(), list.end(),
                                        [](const auto& i) { return i.op->kind == "lease"; });
      if (leases == 0) {
        check_exclusion(key, list);
      } else if (leases == static_cast<std::ptrdiff_t>(list.size())) {
        check_lease_bound(key, list);
      } else {
        // The library refuses to mix protocols on one path; a run that did is
        // judged by neither rule.
        result_.problems.push_back("key " + key +
                                   " was granted both as a semaphore's lease and as a lock");
      }
    }
  }

  void overlap(const std::string& key, const Interval& i, const Interval& held) {
    violation("overlap", "key " + key + ": " + describe(*i.op) + " was granted " + i.life->path +
                             " at " + ms(i.enter, origin_) + " while " + describe(*held.op) +
                             " held " + held.life->path + " [" + ms(held.enter, origin_) +
                             ", its deletion on the servers at " + ms(held.end, origin_) + "]");
  }

  // Intervals in grant order. A read grant (a read/write lock's reader)
  // excludes only writers; every other grant excludes everyone, so on a
  // mutex's key this is "no two at once".
  void check_exclusion(const std::string& key, const std::vector<Interval>& list) {
    const Interval* latest = nullptr;            // the one in force longest, of every kind
    const Interval* latest_exclusive = nullptr;  // ...of the kinds that exclude readers too
    for (const auto& i : list) {
      const bool shared = i.op->kind == "read";
      const Interval* against = shared ? latest_exclusive : latest;
      if (against && i.enter < against->end) overlap(key, i, *against);
      if (!latest || i.end > latest->end) latest = &i;
      if (!shared && (!latest_exclusive || i.end > latest_exclusive->end)) latest_exclusive = &i;
    }
  }

  // A semaphore's leases, in grant order: at no grant more in force than the
  // limit (the worker's, on record in its acquire). Since a count only rises
  // at a grant, checking at each grant covers every instant.
  void check_lease_bound(const std::string& key, const std::vector<Interval>& list) {
    std::multimap<std::int64_t, const Interval*> in_force;  // by end
    for (const auto& i : list) {
      const auto limit = i.op->limit;
      if (limit < 1) {
        result_.problems.push_back(describe(*i.op) + ": a lease of " + key +
                                   " with no limit on record");
        continue;
      }
      in_force.erase(in_force.begin(), in_force.upper_bound(i.enter));
      in_force.emplace(i.end, &i);
      if (static_cast<std::int64_t>(in_force.size()) <= limit) continue;
      std::string others;
      for (const auto& [end, other] : in_force)
        if (other != &i)
          others += (others.empty() ? "" : ", ") + describe(*other->op) + " [" +
                    ms(other->enter, origin_) + ", " + ms(end, origin_) + "]";
      violation("lease_bound", "key " + key + ": " + describe(*i.op) + " was granted " +
                                   i.life->path + " at " + ms(i.enter, origin_) +
                                   " beyond the limit of " + std::to_string(limit) +
                                   ", while in force: " + others);
    }
  }

  bool killed_after(std::int64_t pid, std::int64_t at) const {
    for (const auto& c : cuts_)
      if (c.pid == pid && c.why == "kill_worker" && c.from >= at) return true;
    return false;
  }

  // How long pid was stopped (SIGSTOP) within [from, to].
  std::int64_t paused_within(std::int64_t pid, std::int64_t from, std::int64_t to) const {
    return chaos::paused_within(paused_, pid, from, to);
  }

  // Whether a grant of op had said lost by `at`.
  static bool lost_by(const Op& op, std::int64_t at) {
    for (const auto& [key, lost] : op.first_lost)
      if (lost.first <= at) return true;
    return false;
  }

  // Faults meant to hit a lock holder, and whether they did, by the record:
  // kill_worker and pause_worker hit a holder if the process had a grant in
  // force (servers' record) at the signal; expire_session if the session's
  // close deleted a node backing a grant; delete_holder_node and
  // drop_own_watch (which deletes the node whose watch it dropped) if the
  // node it deleted backed a grant; pause_supervisor if the stopped zkr's
  // lock node was alive at the stop.
  void count_holder_hits() {
    for (const auto& c : cuts_) {
      bool hit = false;
      for (const auto& [key, list] : intervals_) {
        for (const auto& i : list) {
          if (c.why == "kill_worker" || c.why == "pause_worker")
            hit = hit || (i.op->pid == c.pid && i.enter <= c.from && i.end > c.from &&
                          i.op->exit_at.value_or(kNever) > c.from);
          else if (c.why == "expire_session")
            hit = hit || (i.life->end == "session_closed" && !c.session.empty() &&
                          i.life->deleter == parse_hex_session(c.session));
          else if (c.why == "delete_holder_node" || c.why == "drop_own_watch")
            hit = hit || (i.life->path == c.node && i.life->end == "delete" &&
                          i.end + kStampResolution >= c.from && i.end <= c.to);
        }
      }
      // A stop of a zkr whose lock node was alive then (the nemesis picks
      // one whose command is running, so the node backs a hold).
      if (c.why == "pause_supervisor")
        if (const auto it = lives_.find(c.node); it != lives_.end())
          for (const auto* life : it->second)
            hit = hit || (life->created <= c.from &&
                          (!life->deleted || *life->deleted + kStampResolution > c.from));
      if (hit) ++result_.holder_hits[c.why];
    }
  }

  // A grant whose node is gone must say lost: a holder that is never told
  // goes on trusting the lock. Judged only where the worker stayed long
  // enough to hear (workers wait for the signal after a refused write).
  void check_lost_noticed(const Op& op, std::optional<std::int64_t> node_gone) {
    if (!node_gone || !op.exit_at) return;
    // A stopped process hears nothing: only the time it ran counts.
    const auto ran = *op.exit_at - *node_gone - paused_within(op.pid, *node_gone, *op.exit_at);
    if (ran < kLostNoticeGrace.count() * 1'000'000) return;
    if (lost_by(op, *op.exit_at)) return;
    for (const auto& w : op.writes)
      if (w.lost_at_reply && w.at <= *op.exit_at)
        return;  // the grant said lost, seen by the worker
    violation("lost_unnoticed", describe(op) + ": its lock node was gone at " +
                                    ms(*node_gone, origin_) +
                                    ", and its grant never said lost before it let go at " +
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
          else applied[v] = w;
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
        applied[v] = it->second.front();              // the reply was lost, the write was not
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
                                         describe(prev_op) + " token " +
                                         std::to_string(prev_token));
        }
        if (w->late && w->sent <= fences_[w->op]) late_applied_.insert(w);  // its node still lived
        if (w->sent > fences_[w->op])
          violation("late_write",
                    "key " + key + ": " + describe(op) + " write " + std::to_string(w->n) + " (" +
                        w->result + (w->late ? ", made late on purpose" : "") + ") sent at " +
                        ms(w->sent, origin_) + ", after its grant was void at " +
                        ms(std::min(fences_[w->op], w->sent), origin_) + ", took effect");
        previous = w;
      }
      if (counter > 0 && applied.count(counter)) {
        const auto& op = ops_.at(applied.at(counter)->op);
        const auto token = op.tokens.count(key) ? op.tokens.at(key) : 0;
        const auto stored = input_.final_state.tokens.find(key);
        if (stored == input_.final_state.tokens.end() || stored->second != token)
          violation(
              "final_token",
              "key " + key + ": token node holds " +
                  (stored == input_.final_state.tokens.end() ? std::string("nothing")
                                                             : std::to_string(stored->second)) +
                  ", the last write (" + describe(op) + ") had " + std::to_string(token));
      }
    }
  }

  void finish_counts() {
    result_.unknown_applied = static_cast<std::int64_t>(unknown_applied_.size());
    result_.late_applied = static_cast<std::int64_t>(late_applied_.size());
  }

  void check_acquires() {
    for (const auto& [id, op] : ops_) {
      if (!op.returned_at) continue;  // its process was killed mid-acquire
      const auto& process = processes_[op.pid];
      std::int64_t allowed = op.deadline + process.session_timeout_ns + kReturnSlackNs;
      allowed += paused_within(op.pid, op.acq_at, *op.returned_at);
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
          violation(
              "invalid_holder_accepted",
              where + ": a lock constructor given the invalid holder text '" + h.label + "' " +
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
      if (foreign_paths_.count(node.path) ||
          (node.owner != 0 && foreign_sessions_.count(node.owner))) {
        // The nemesis's own node (a foreign contender, a non-lock child): its
        // move failed to remove it. The run is not clean, but the library is
        // not to blame.
        result_.problems.push_back(node.path +
                                   " was left by the nemesis's own session, not by a worker");
        continue;
      }
      const auto name = node.path.substr(node.path.rfind('/') + 1);
      const bool lock_node = is_lock_node_name(name);
      const bool dead_owner = node.owner != 0 && !state.live_sessions.count(node.owner);
      if (lock_node || dead_owner)
        result_.orphans.push_back(node.path +
                                  (node.owner ? " (session " + hex_session(node.owner) + ")" : ""));
    }
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

  const RunInput& input_;
  CheckResult result_;
  ParsedRun parsed_;  // the records, read once
  std::map<std::string, Op>& ops_ = parsed_.ops;
  std::map<std::int64_t, Process>& processes_ = parsed_.processes;
  const std::vector<Cut>& cuts_ = parsed_.cuts;
  const std::vector<HolderTry>& holder_tries_ = parsed_.holder_tries;
  const std::set<std::string>& foreign_paths_ = parsed_.foreign_paths;
  const std::set<std::int64_t>& foreign_sessions_ = parsed_.foreign_sessions;
  const std::vector<Fault>& faults_ = parsed_.faults;
  const Pauses& paused_ = parsed_.paused;
  std::map<std::string, std::vector<Interval>> intervals_;
  std::map<std::string, std::vector<const NodeLife*>> lives_;  // by path, every incarnation
  std::map<std::string, std::int64_t> fences_;
  std::set<const Write*> unknown_applied_;
  std::set<const Write*> late_applied_;  // late on purpose, applied while the node lived
  std::int64_t origin_ = 0;
  const std::int64_t& phase_from_ = parsed_.phase_from;
  const std::int64_t& phase_to_ = parsed_.phase_to;
};

}  // namespace

std::int64_t CheckResult::violation_count() const {
  std::int64_t n = 0;
  for (const auto& [rule, count] : violations) n += count;
  return n;
}

CheckResult check(const RunInput& input) { return Checker(input).run(); }

std::vector<std::string> bite_problems(const CheckResult& result,
                                       const std::vector<std::string>& kinds) {
  std::vector<std::string> problems;
  bool ends_holds = false;
  for (const auto& kind : kHolderFaultKinds) {
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) continue;
    ends_holds = ends_holds || kind != "kill_worker";
    const auto injected = result.faults.count(kind) ? result.faults.at(kind) : 0;
    const auto hits = result.holder_hits.count(kind) ? result.holder_hits.at(kind) : 0;
    if (injected > 0 && hits == 0)
      problems.push_back("fault kind " + kind + " was injected " + std::to_string(injected) +
                         " times and never hit a lock holder");
  }
  if (ends_holds && result.late_rejected == 0)
    problems.push_back("no late write was made and refused: fencing was never put to the test");
  // The latch participants run beside the lock workers in every run that
  // judges them: leadership that never moved tested nothing.
  if (result.latch_terms == 0) problems.push_back("no leader latch participant ever led");
  else if (result.latch_failovers == 0)
    problems.push_back("the leader latch participants led " + std::to_string(result.latch_terms) +
                       " terms and the servers' record shows no failover between them");
  if (result.counter_ops == 0) problems.push_back("no counter operation was recorded");
  if (result.member_views_converged == 0)
    problems.push_back("no group member's view converged at the end of the run");
  return problems;
}

}  // namespace zkr::chaos
