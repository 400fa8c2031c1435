// W2: eight workers, each with its own session, on one lock. Each holder
// does a read-modify-write of a counter that only the lock protects, and
// records its hold; the exclusion checker judges the holds afterwards
// (overlaps, fencing tokens out of grant order, lost updates). The gaps
// between one release and the next grant are the hand-off latency. The
// floor, Curator (with --peers curator) and ours run in interleaved rounds.
// With --no-lock the same run takes no lock: the control, which must fail.
#include <algorithm>
#include <atomic>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

#include "critical_section.hpp"
#include "curator_peer.hpp"
#include "floor.hpp"
#include "holder_lock.hpp"
#include "rss.hpp"
#include "server_cost.hpp"
#include "timed_round.hpp"
#include "workloads.hpp"

namespace zkr::bench {
namespace {

constexpr std::uint64_t kMaxAcquisitionsPerWorker = 1'000'000;
// Rounds per implementation in a full run (--quick: one).
constexpr unsigned kW2Rounds = 3;

struct WorkerResult {
  WorkerResult(std::int64_t index, const std::string& kind) : holds(index, kind) {}
  std::uint64_t acquisitions = 0;
  Samples waits{4096};
  HoldLog holds;
};

// Lock: HolderLock (ours, or none) or FloorLock.
template <class Lock>
void worker(Lock& mutex, Clock::time_point deadline, RoundShared& shared, WorkerResult& out) {
  try {
    while (out.acquisitions < kMaxAcquisitionsPerWorker) {
      const auto t0 = Clock::now();
      if (t0 >= deadline) break;
      // Bounded: a fair lock among 8 never needs this long on a healthy ensemble.
      if (!mutex.try_acquire_for(std::chrono::seconds(30))) {
        shared.timed_out();
        break;
      }
      out.waits.add(ms_between(t0, Clock::now()));
      out.holds.hold(shared.counter, mutex.token());
      mutex.release();
      ++out.acquisitions;
    }
  } catch (const std::exception& e) {
    shared.failed(e);
  }
}

// What the targets compare between implementations.
struct Summary {
  double rate = 0;
  Percentiles handoff;
  std::optional<double> writes_per_op;
};

// What one implementation's run gives the report.
struct Outcome {
  double seconds = 0;
  Samples waits;
  std::vector<std::uint64_t> per_worker;  // acquisitions
  Judgement judgement;
  std::uint64_t errors = 0;  // acquire timeouts and errors
};

Summary report_contended(Context& ctx, const std::string& impl, const std::string& lock_name,
                         const std::string& kind, const Outcome& outcome, const CostMeter& cost) {
  const auto workers = static_cast<unsigned>(outcome.per_worker.size());
  std::uint64_t total = 0, most = 0, least = UINT64_MAX;
  for (const auto n : outcome.per_worker) {
    total += n;
    most = std::max(most, n);
    least = std::min(least, n);
  }
  const Judgement& judgement = outcome.judgement;
  const auto handoff = judgement.handoffs.percentiles();
  const std::uint64_t violations = judgement.violations();
  Record r;
  r.impl = impl;
  r.workload = "W2";
  r.added_rtt_ms = ctx.added_rtt_ms;
  r.label = std::to_string(workers) + " sessions, one key" + (kind == "none" ? ", NO LOCK" : "") +
            (ctx.added_rtt_ms > 0 ? strprintf(", +%g ms RTT", ctx.added_rtt_ms) : "");
  r.params["workers"] = workers;
  r.params["sessions"] = workers;
  r.params["lock"] = lock_name;
  r.ops = total;
  r.seconds = outcome.seconds;
  r.latency = outcome.waits.percentiles();
  r.requests_per_op = cost.requests_per_op();
  r.writes_per_op = cost.writes_per_op();
  const double fairness = least > 0 ? static_cast<double>(most) / static_cast<double>(least) : 0;
  r.extra["acquisitions_per_sec"] = r.ops_per_sec();
  r.extra["fairness_max_over_min"] = fairness;
  r.extra["max_per_worker"] = most;
  r.extra["min_per_worker"] = least;
  r.extra["handoff_p50_ms"] = handoff.p50_ms;
  r.extra["handoff_p99_ms"] = handoff.p99_ms;
  r.extra["timeouts"] = outcome.errors;
  r.extra["peak_rss_kib"] = peak_rss_kib();
  add_judgement(r.extra, judgement);
  r.note = strprintf(
      "latency = wait; hand-off p50 %.2f p99 %.2f ms; fairness %.2f, violations %llu",
      handoff.p50_ms, handoff.p99_ms, fairness, static_cast<unsigned long long>(violations));
  const Summary summary{r.ops_per_sec(), handoff, r.writes_per_op};
  ctx.reporter.add(std::move(r));
  if (!judgement.report.ok())
    std::cerr << "bench: W2 " << impl << ": " << exclusion::format_report(judgement.report);
  const std::string at_rtt =
      ctx.added_rtt_ms > 0 ? strprintf(" at +%g ms RTT", ctx.added_rtt_ms) : "";
  ctx.reporter.verdict(
      {"W2 " + impl + at_rtt + " mutual-exclusion violations == 0", true,
       violations == 0 && outcome.errors == 0, true,
       strprintf("%llu overlaps, %llu token inversions, %lld lost updates, "
                 "%llu acquire timeouts in %llu acquisitions",
                 static_cast<unsigned long long>(judgement.report.overlaps),
                 static_cast<unsigned long long>(judgement.report.token_inversions),
                 static_cast<long long>(judgement.report.lost_updates),
                 static_cast<unsigned long long>(outcome.errors),
                 static_cast<unsigned long long>(total))});
  return summary;
}

// One implementation's W2, summed over the rounds it ran.
struct Tally {
  explicit Tally(std::string connect) : cost(std::move(connect)) {}
  Outcome outcome;
  CostMeter cost;
};

void add_round(Tally& tally, double seconds, std::uint64_t errors,
               const std::vector<std::uint64_t>& per_worker, const Judgement& judgement) {
  Outcome& o = tally.outcome;
  o.seconds += seconds;
  o.errors += errors;
  o.per_worker.resize(std::max(o.per_worker.size(), per_worker.size()), 0);
  for (std::size_t i = 0; i < per_worker.size(); ++i) o.per_worker[i] += per_worker[i];
  o.judgement.add(judgement);
}

// One round of one implementation: every worker on its own lock object (and
// session), all started at once, for `duration`.
template <class Lock>
void run_round(const std::string& impl, const std::string& kind,
               std::vector<std::unique_ptr<Lock>>& locks, std::chrono::milliseconds duration,
               Tally& tally) {
  const auto workers = static_cast<unsigned>(locks.size());
  RoundShared shared;
  std::vector<WorkerResult> results;
  for (unsigned i = 0; i < workers; ++i) results.emplace_back(i, kind);
  const double seconds =
      run_timed_round(workers, duration, tally.cost, [&](unsigned i, Clock::time_point deadline) {
        worker(*locks[i], deadline, shared, results[i]);
      });
  if (!shared.first_error().empty()) throw RunError("W2 " + impl + ": " + shared.first_error());

  std::uint64_t total = 0;
  std::vector<std::uint64_t> per_worker;
  std::vector<const HoldLog*> logs;
  for (const auto& w : results) {
    total += w.acquisitions;
    per_worker.push_back(w.acquisitions);
    tally.outcome.waits.merge(w.waits);
    logs.push_back(&w.holds);
  }
  tally.cost.end(total);
  add_round(tally, seconds, shared.errors(), per_worker, judge(logs, shared.counter));
}

// One round of Curator's, in its JVM: the same critical section, holds
// judged here.
void curator_round(Context& ctx, CuratorPeer& peer, unsigned workers,
                   std::chrono::milliseconds duration, Tally& tally) {
  tally.cost.begin();
  const auto start = Clock::now();
  const auto result = peer.w2(ctx.path("curator-w2/lock"), workers, duration);
  const double seconds = seconds_since(start);
  tally.cost.end(result.acquisitions);
  for (const double ms : result.waits_ms) tally.outcome.waits.add(ms);
  auto holds = exclusion::read_interval_file(result.interval_file);
  std::vector<std::uint64_t> per_worker(workers, 0);
  for (const auto& h : holds)
    if (h.thread >= 0 && h.thread < static_cast<std::int64_t>(workers))
      ++per_worker[static_cast<std::size_t>(h.thread)];
  add_round(tally, seconds, 0, per_worker, judge(std::move(holds), result.counter));
}

// The targets for W2 (throughput, hand-off latency, writes per acquisition),
// against the floor measured in the same run.
// probe: the floor granting on the deletion event alone, if it ran.
void w2_targets(Context& ctx, const Summary& floor, const Summary& zkr,
                const std::optional<Summary>& probe) {
  const bool meaningful = !ctx.options.quick;
  const double ratio = floor.rate > 0 ? zkr.rate / floor.rate : 0;
  // Every hand-off is a chain: the release's delete committed, the event to
  // the next waiter, and the read it grants on, which a safe grant cannot
  // skip: a process stopped while it waits (SIGSTOP, a long pause) wakes to
  // the events its expired session left in its socket, and only a reply to a
  // request sent after waking says that the session still lives. The probe
  // shows what the read costs; a lock that reads can shorten nothing else.
  std::string bound;
  if (probe && floor.rate > 0)
    bound = strprintf(
        "; without the read after the event (floor-event, unsafe) the floor ran at %.2fx with "
        "hand-off p50 %.2f ms against its %.2f ms; ours, which must read, hands off in %.2f ms",
        probe->rate / floor.rate, probe->handoff.p50_ms, floor.handoff.p50_ms, zkr.handoff.p50_ms);
  ctx.reporter.verdict({"W2 acquisitions/s >= 1.3x the floor's", false, ratio >= 1.3, meaningful,
                        strprintf("%.1f/s = %.2fx the floor's %.1f/s (wanted >= 1.3x)", zkr.rate,
                                  ratio, floor.rate) +
                            bound});
  ctx.reporter.verdict(
      {"W2 hand-off p50 and p99 not above the floor's", false,
       zkr.handoff.p50_ms <= floor.handoff.p50_ms && zkr.handoff.p99_ms <= floor.handoff.p99_ms,
       meaningful,
       strprintf("p50 %.2f ms, p99 %.2f ms; the floor's %.2f ms, %.2f ms", zkr.handoff.p50_ms,
                 zkr.handoff.p99_ms, floor.handoff.p50_ms, floor.handoff.p99_ms)});
  if (zkr.writes_per_op)
    ctx.reporter.verdict({"W2 writes per acquisition <= 2.0 (the lock node's create and delete)",
                          false, *zkr.writes_per_op <= 2.05, meaningful,
                          strprintf("%.2f writes per acquisition (leader zxid); the floor's %.2f",
                                    *zkr.writes_per_op, floor.writes_per_op.value_or(0))});
}

}  // namespace

void run_w2_contended(Context& ctx) {
  const unsigned workers = ctx.plan.w2_workers;
  const bool with_floor = !ctx.options.no_lock;
  const bool with_curator = ctx.curator && !ctx.options.no_lock;
  // The floor: the same critical section under the textbook lock on the bare
  // C client, on a directory of its own, judged by the same checker.
  const std::string floor_dir = ctx.path("w2-floor");
  std::vector<std::unique_ptr<FloorLock>> floor_locks;
  // The unsafe probe beside it (no added latency only): the floor granting on
  // the deletion event alone, to show what the listing a safe grant waits for
  // costs. On a directory of its own, judged by the same checker.
  const bool with_probe = with_floor && ctx.added_rtt_ms == 0;
  const std::string probe_dir = ctx.path("w2-floor-event");
  std::vector<std::unique_ptr<FloorLock>> probe_locks;
  if (with_floor) {
    FloorLock::create_dir(ctx.session_connect(), ctx.options.root, floor_dir);
    for (unsigned i = 0; i < workers; ++i)
      floor_locks.push_back(std::make_unique<FloorLock>(ctx.session_connect(), floor_dir));
  }
  if (with_probe) {
    FloorLock::create_dir(ctx.session_connect(), ctx.options.root, probe_dir);
    for (unsigned i = 0; i < workers; ++i)
      probe_locks.push_back(std::make_unique<FloorLock>(ctx.session_connect(), probe_dir,
                                                        FloorLock::Grant::event_alone));
  }
  std::vector<std::unique_ptr<Client>> clients;
  for (unsigned i = 0; i < workers; ++i) clients.push_back(ctx.connect());
  std::vector<std::unique_ptr<HolderLock>> locks;
  for (unsigned i = 0; i < workers; ++i)
    locks.push_back(
        std::make_unique<HolderLock>(*clients[i], ctx.path("w2/lock"), ctx.options.no_lock));

  // Interleaved rounds, each implementation first in one of them: the load
  // of a shared machine drifts over a minute, and every implementation gets
  // its share of each stretch.
  const unsigned rounds = ctx.options.quick ? 1 : kW2Rounds;
  const auto duration = ctx.plan.w2_duration / rounds;
  Tally floor(ctx.options.connect), curator(ctx.options.connect), zkr(ctx.options.connect),
      probe(ctx.options.connect);
  const std::string zkr_kind = ctx.options.no_lock ? "none" : "mutex";
  constexpr unsigned kSlots = 4;
  for (unsigned round = 0; round < rounds; ++round) {
    for (unsigned slot = 0; slot < kSlots; ++slot) {
      switch ((round + slot) % kSlots) {
        case 0:
          if (with_floor) run_round("floor", "floor", floor_locks, duration, floor);
          break;
        case 1:
          if (with_curator) curator_round(ctx, *ctx.curator, workers, duration, curator);
          break;
        case 2:
          if (with_probe) run_round("floor-event", "floor", probe_locks, duration, probe);
          break;
        default: run_round("zkr", zkr_kind, locks, duration, zkr); break;
      }
    }
  }
  floor_locks.clear();  // closes the sessions
  probe_locks.clear();
  if (with_floor || with_probe) {
    auto cleaner = ctx.connect();  // best effort: a later sweep takes what is left
    for (const auto& dir : {floor_dir, probe_dir}) (void)cleaner->keeper()->try_remove(dir);
  }

  std::optional<Summary> floor_summary, curator_summary;
  if (with_floor)
    floor_summary =
        report_contended(ctx, "floor", "bare C client: create, list, watch the next lower, delete",
                         "floor", floor.outcome, floor.cost);
  if (with_curator)
    curator_summary = report_contended(ctx, "curator", "Curator 5.4 InterProcessMutex", "curator",
                                       curator.outcome, curator.cost);
  std::optional<Summary> probe_summary;
  if (with_probe)
    probe_summary =
        report_contended(ctx, "floor-event",
                         "bare C client granting on the deletion event alone (unsafe: what one "
                         "round trip per cycle would cost)",
                         "floor", probe.outcome, probe.cost);
  const Summary zkr_summary = report_contended(
      ctx, "zkr", ctx.options.no_lock ? "none (--no-lock control)" : "InterProcessMutex", zkr_kind,
      zkr.outcome, zkr.cost);
  if (floor_summary && ctx.added_rtt_ms == 0)
    w2_targets(ctx, *floor_summary, zkr_summary, probe_summary);
  if (curator_summary && ctx.added_rtt_ms == 0) {
    // Curator reads after the event too: against it, the floor's rate is
    // what a lock with the same chain of hand-offs can show.
    const double curator_rate = curator_summary->rate;
    std::string bound;
    if (floor_summary && curator_rate > 0)
      bound = strprintf("; the floor, whose hand-offs are the same chain, ran at %.2fx Curator's",
                        floor_summary->rate / curator_rate);
    ctx.reporter.verdict(
        {"W2 acquisitions/s >= 1.5x Curator's InterProcessMutex", false,
         curator_rate > 0 && zkr_summary.rate >= 1.5 * curator_rate, !ctx.options.quick,
         strprintf("%.1f/s = %.2fx Curator's %.1f/s (wanted >= 1.5x)", zkr_summary.rate,
                   curator_rate > 0 ? zkr_summary.rate / curator_rate : 0.0, curator_rate) +
             bound});
  }
}

}  // namespace zkr::bench
