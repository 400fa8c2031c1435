#include "report.hpp"

#include <sstream>

#include "nemesis.hpp"

namespace zkr::chaos {

std::string format_report(const RunInfo& info, const CheckResult& r) {
  std::ostringstream out;
  const bool ok = r.ok() && info.run_problems.empty();
  out << "==== zkr chaos report ====\n";
  out << "seed                 " << info.seed << "   (replay: --seed " << info.seed << ")\n";
  out << "setup                " << info.workers << " workers x " << info.threads
      << " threads, session timeout " << info.session_timeout_ms << " ms, " << info.fault_seconds
      << " s of faults, " << info.wall_seconds << " s wall"
      << (info.broken != "none" ? ", BROKEN LOCK MODE " + info.broken : "") << "\n";
  out << "acquisitions         " << r.acquisitions << " granted of " << r.acquires << " asked ("
      << r.timeouts << " timed out, " << r.acquire_errors << " failed)\n";
  out << "grants by kind       ";
  for (const auto& [kind, n] : r.grants_by_kind) out << kind << "=" << n << " ";
  out << "\n";
  out << "guarded writes       " << r.writes_accepted << " accepted, " << r.writes_rejected
      << " rejected, " << r.writes_unknown << " unknown (" << r.unknown_applied
      << " of them applied); late writes " << r.late_writes << " (" << r.late_rejected
      << " refused, " << r.late_applied << " applied while the node still lived)\n";
  out << "holder texts         " << r.invalid_holders_tried << " invalid ones tried, "
      << r.invalid_holders_refused << " refused by the constructor as they must be\n";
  out << "shared lock objects  " << r.shared_holds << " holds on an object two threads share\n";
  out << "counters             ";
  for (const auto& [key, value] : r.counters) out << key << "=" << value << " ";
  out << "\n";
  out << "lost notices         ";
  for (const auto& [why, n] : r.lost_notices) out << why << "=" << n << " ";
  out << "\nclient states        ";
  for (const auto& [state, n] : r.client_states) out << state << "=" << n << " ";
  out << "\nfaults injected      ";
  std::int64_t faults = 0;
  for (const auto& kind : kFaultKinds) {
    const auto it = r.faults.find(kind);
    const auto n = it == r.faults.end() ? 0 : it->second;
    faults += n;
    out << kind << "=" << n << " ";
  }
  out << "(total " << faults << ")\n";
  out << "holder hits          ";
  for (const auto& kind : kHolderFaultKinds) {
    const auto hits = r.holder_hits.count(kind) ? r.holder_hits.at(kind) : 0;
    const auto injected = r.faults.count(kind) ? r.faults.at(kind) : 0;
    out << kind << "=" << hits << "/" << injected << " ";
  }
  out << "(faults that hit a lock holder, of those injected)\n";
  out << "servers' record      " << r.server_lives << " lock node lives from the transaction logs; "
      << r.void_grants << " grants came after their node was gone (void)\n";
  out << "zkr lock commands    " << r.supervised_ticks << " ticks under " << r.supervised_holds
      << " lock nodes of `zkr lock` supervisors, judged by the servers' record\n";
  out << "leader latch         " << r.latch_terms << " terms, " << r.latch_lost_notices
      << " lost signals; " << r.latch_record_writes << " leaders' writes on the servers' record, "
      << r.latch_failovers << " failovers among them; participants saw " << r.latch_writes_ok
      << " applied, " << r.latch_writes_refused << " refused, " << r.latch_writes_unknown
      << " unknown; late writes " << r.latch_late_writes << " (" << r.latch_late_refused
      << " refused); " << r.latch_leader_hits << " leaders' nodes deleted by delete_leader_node\n";
  out << "counter              " << r.counter_ops << " operations on one DistributedAtomicLong ("
      << r.counter_indeterminate << " of unknown outcome), with its final value judged "
      << "linearizable or not in " << r.counter_search_states << " search states\n";
  out << "group members        " << r.member_views_converged << " of " << r.member_views
      << " end-of-run views agreed with the servers' tree\n";
  out << "violations           " << r.violation_count();
  for (const auto& [rule, n] : r.violations) out << "  " << rule << "=" << n;
  out << "\n";
  out << "orphaned znodes      " << r.orphans.size() << "\n";
  out << "bystanders           " << r.bystanders
      << " nodes of other applications checked after the sweep ("
      << (r.sweep.empty() ? "no sweep" : "sweep: " + r.sweep) << ")\n";
  out << "longest stall        " << static_cast<double>(r.longest_stall_ns) / 1e6 << " ms ("
      << r.longest_stall_where << ")\n";
  for (const auto& e : r.examples) out << "  VIOLATION " << e << "\n";
  for (const auto& o : r.orphans) out << "  ORPHAN " << o << "\n";
  for (const auto& p : r.problems) out << "  RECORD PROBLEM " << p << "\n";
  for (const auto& p : info.run_problems) out << "  RUN PROBLEM " << p << "\n";
  out << "logs                 " << info.dir << "\n";
  out << "result               " << (ok ? "PASS" : "FAIL") << "\n";
  return out.str();
}

}  // namespace zkr::chaos
