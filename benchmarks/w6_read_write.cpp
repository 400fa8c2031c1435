// W6: a read-mostly mix on one InterProcessReadWriteLock. Eight workers, each
// with its own session; every fifth hold of each writes (a read-modify-write
// of the counter), the others read it. The exclusion checker judges the holds
// (no reader beside a writer, no writer beside anyone, no lost update) and
// says how many readers held at once; the writers' waits give the p99 a
// writer pays for the readers ahead of it. With --peers curator, Curator's
// InterProcessReadWriteLock runs the same mix, in rounds interleaved with
// ours as in W2, its holds judged by the same checker.
#include <algorithm>
#include <atomic>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

#include "critical_section.hpp"
#include "curator_peer.hpp"
#include "rss.hpp"
#include "server_cost.hpp"
#include "timed_round.hpp"
#include "workloads.hpp"
#include "zkr/read_write_lock.hpp"

namespace zkr::bench {
namespace {

constexpr unsigned kWorkers = kW6Workers;
constexpr unsigned kWriteEvery = 5;  // every fifth hold writes
constexpr std::uint64_t kMaxReadWriteHoldsPerWorker = 1'000'000;
// Rounds per implementation when Curator's runs too, in a full run (--quick: one).
constexpr unsigned kReadWriteRounds = 3;

struct ReadWriteWorkerResult {
  explicit ReadWriteWorkerResult(std::int64_t index) : holds(index, "write") {}
  std::uint64_t reads = 0, writes = 0;
  Samples read_waits{4096}, write_waits{1024};
  HoldLog holds;
};

void read_write_worker(InterProcessReadWriteLock& lock, Clock::time_point deadline,
                       RoundShared& shared, ReadWriteWorkerResult& out) {
  try {
    for (std::uint64_t i = 0; i < kMaxReadWriteHoldsPerWorker; ++i) {
      const auto t0 = Clock::now();
      if (t0 >= deadline) break;
      const bool write = i % kWriteEvery == kWriteEvery - 1;
      auto& side = write ? lock.write_lock() : lock.read_lock();
      if (!side.try_acquire_for(std::chrono::seconds(30))) {  // bounded: never needed when healthy
        shared.timed_out();
        break;
      }
      (write ? out.write_waits : out.read_waits).add(ms_between(t0, Clock::now()));
      const auto token = side.grant().fencing_token();
      if (write) out.holds.hold(shared.counter, token);
      else out.holds.shared_hold(shared.counter, token);
      side.release();
      ++(write ? out.writes : out.reads);
    }
  } catch (const std::exception& e) {
    shared.failed(e);
  }
}

// One implementation's W6, summed over the rounds it ran.
struct ReadWriteTally {
  explicit ReadWriteTally(std::string connect) : cost(std::move(connect)) {}
  double seconds = 0;
  std::uint64_t reads = 0, writes = 0, errors = 0;
  Samples read_waits, write_waits;
  Judgement judgement;
  CostMeter cost;
};

// One round of ours: every worker on its own lock object (and session), all
// started at once, for `duration`; each round's holds judged on their own.
void zkr_round(std::vector<std::unique_ptr<InterProcessReadWriteLock>>& locks,
               std::chrono::milliseconds duration, ReadWriteTally& tally) {
  RoundShared shared;
  std::vector<ReadWriteWorkerResult> results;
  for (unsigned i = 0; i < kWorkers; ++i) results.emplace_back(i);
  tally.seconds +=
      run_timed_round(kWorkers, duration, tally.cost, [&](unsigned i, Clock::time_point deadline) {
        read_write_worker(*locks[i], deadline, shared, results[i]);
      });
  if (!shared.first_error().empty()) throw RunError("W6: " + shared.first_error());

  std::uint64_t holds = 0;
  std::vector<const HoldLog*> logs;
  for (const auto& w : results) {
    tally.reads += w.reads;
    tally.writes += w.writes;
    holds += w.reads + w.writes;
    tally.read_waits.merge(w.read_waits);
    tally.write_waits.merge(w.write_waits);
    logs.push_back(&w.holds);
  }
  tally.cost.end(holds);
  tally.errors += shared.errors();
  tally.judgement.add(judge(logs, shared.counter));
}

// One round of Curator's, in its JVM: the same mix, holds judged here.
void curator_read_write_round(Context& ctx, CuratorPeer& peer, std::chrono::milliseconds duration,
                              ReadWriteTally& tally) {
  tally.cost.begin();
  const auto start = Clock::now();
  const auto result = peer.w6(ctx.path("curator-w6/lock"), kWorkers, kWriteEvery, duration);
  tally.seconds += seconds_since(start);
  tally.cost.end(result.reads + result.writes);
  tally.reads += result.reads;
  tally.writes += result.writes;
  for (const double ms : result.read_waits_ms) tally.read_waits.add(ms);
  for (const double ms : result.write_waits_ms) tally.write_waits.add(ms);
  tally.judgement.add(judge(exclusion::read_interval_file(result.interval_file), result.counter));
}

// The record and the exclusion check of one implementation; its rate.
double report_read_write(Context& ctx, const std::string& impl, const std::string& lock_name,
                         const ReadWriteTally& tally, std::optional<double> curator_rate) {
  const Judgement& judgement = tally.judgement;
  const auto write_wait = tally.write_waits.percentiles();
  const std::uint64_t holds = tally.reads + tally.writes;
  Record r;
  r.impl = impl;
  r.workload = "W6";
  r.label = std::to_string(kWorkers) + " sessions, one read/write lock, 1 write in " +
            std::to_string(kWriteEvery);
  r.params["workers"] = kWorkers;
  r.params["write_every"] = kWriteEvery;
  r.params["lock"] = lock_name;
  r.ops = holds;
  r.seconds = tally.seconds;
  r.latency = tally.read_waits.percentiles();
  r.requests_per_op = tally.cost.requests_per_op();
  r.writes_per_op = tally.cost.writes_per_op();
  const double rate = r.ops_per_sec();
  r.extra["acquisitions_per_sec"] = rate;
  r.extra["reads"] = tally.reads;
  r.extra["writes"] = tally.writes;
  r.extra["most_readers_at_once"] =
      static_cast<std::uint64_t>(judgement.report.most_shared_at_once);
  r.extra["writer_wait_p50_ms"] = write_wait.p50_ms;
  r.extra["writer_wait_p99_ms"] = write_wait.p99_ms;
  r.extra["timeouts"] = tally.errors;
  r.extra["peak_rss_kib"] = peak_rss_kib();
  if (curator_rate && *curator_rate > 0) r.extra["x_curator_rate"] = rate / *curator_rate;
  add_judgement(r.extra, judgement);
  r.note = strprintf(
      "latency = reader wait; writer wait p50 %.2f p99 %.2f ms; up to %zu readers at once",
      write_wait.p50_ms, write_wait.p99_ms, judgement.report.most_shared_at_once);
  if (curator_rate && *curator_rate > 0)
    r.note += strprintf("; %.2fx Curator's rate", rate / *curator_rate);
  ctx.reporter.add(std::move(r));
  const std::string who = impl == "zkr" ? "" : " " + impl;
  if (!judgement.report.ok())
    std::cerr << "bench: W6" << who << ": " << exclusion::format_report(judgement.report);
  ctx.reporter.verdict(
      {"W6" + who + " read/write exclusion violations == 0", true,
       judgement.violations() == 0 && tally.errors == 0, true,
       strprintf("%zu overlaps, %zu token inversions, %lld lost updates in %llu holds",
                 judgement.report.overlaps, judgement.report.token_inversions,
                 static_cast<long long>(judgement.report.lost_updates),
                 static_cast<unsigned long long>(holds))});
  return rate;
}

}  // namespace

void run_w6_read_write(Context& ctx) {
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::unique_ptr<InterProcessReadWriteLock>> locks;
  for (unsigned i = 0; i < kWorkers; ++i) {
    clients.push_back(ctx.connect());
    locks.push_back(
        std::make_unique<InterProcessReadWriteLock>(*clients.back(), ctx.path("w6/lock")));
  }
  // With Curator's beside ours, interleaved rounds, each first in turn, as
  // W2 does: a shared machine's load drifts, and each gets its share of it.
  CuratorPeer* curator = ctx.curator;
  const unsigned rounds = ctx.options.quick || !curator ? 1 : kReadWriteRounds;
  const auto duration = ctx.plan.w2_duration / rounds;
  ReadWriteTally zkr(ctx.options.connect), curator_tally(ctx.options.connect);
  for (unsigned round = 0; round < rounds; ++round)
    for (unsigned slot = 0; slot < 2; ++slot) {
      if ((round + slot) % 2 == 0) zkr_round(locks, duration, zkr);
      else if (curator) curator_read_write_round(ctx, *curator, duration, curator_tally);
    }

  std::optional<double> curator_rate;
  if (curator)
    curator_rate = report_read_write(ctx, "curator", "Curator 5.4 InterProcessReadWriteLock",
                                     curator_tally, {});
  (void)report_read_write(ctx, "zkr", "InterProcessReadWriteLock", zkr, curator_rate);
  const auto most = zkr.judgement.report.most_shared_at_once;
  ctx.reporter.verdict({"W6 readers share the lock (more than one held at once)", false, most > 1,
                        !ctx.options.quick, strprintf("up to %zu readers at once", most)});
}

}  // namespace zkr::bench
