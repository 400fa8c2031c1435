// W6: a read-mostly mix on one InterProcessReadWriteLock. Eight workers, each
// with its own session; every fifth hold of each writes (a read-modify-write
// of the counter), the others read it. The exclusion checker judges the holds
// (no reader beside a writer, no writer beside anyone, no lost update) and
// says how many readers held at once; the writers' waits give the p99 a
// writer pays for the readers ahead of it.
#include <algorithm>
#include <atomic>
#include <iostream>
#include <latch>
#include <mutex>
#include <thread>

#include "critical_section.hpp"
#include "rss.hpp"
#include "server_cost.hpp"
#include "workloads.hpp"
#include "zkr/read_write_lock.hpp"

namespace zkr::bench {
namespace {

constexpr unsigned kWorkers = 8;
constexpr unsigned kWriteEvery = 5;  // every fifth hold writes
constexpr std::uint64_t kMaxHoldsPerWorker = 1'000'000;

struct Shared {
  GuardedCounter counter;
  std::atomic<std::uint64_t> errors{0};
  std::mutex error_mutex;
  std::string first_error;
};

struct WorkerResult {
  explicit WorkerResult(std::int64_t index) : holds(index, "write") {}
  std::uint64_t reads = 0, writes = 0;
  Samples read_waits{4096}, write_waits{1024};
  HoldLog holds;
};

void worker(InterProcessReadWriteLock& lock, Clock::time_point deadline, Shared& shared, WorkerResult& out) {
  try {
    for (std::uint64_t i = 0; i < kMaxHoldsPerWorker; ++i) {
      const auto t0 = Clock::now();
      if (t0 >= deadline) break;
      const bool write = i % kWriteEvery == kWriteEvery - 1;
      auto& side = write ? lock.write_lock() : lock.read_lock();
      if (!side.try_acquire_for(std::chrono::seconds(30))) {  // bounded: never needed when healthy
        shared.errors.fetch_add(1);
        break;
      }
      (write ? out.write_waits : out.read_waits).add(ms_between(t0, Clock::now()));
      const auto token = side.lease().fencing_token();
      if (write) out.holds.hold(shared.counter, token);
      else out.holds.shared_hold(shared.counter, token);
      side.release();
      ++(write ? out.writes : out.reads);
    }
  } catch (const std::exception& e) {
    shared.errors.fetch_add(1);
    std::lock_guard guard(shared.error_mutex);
    if (shared.first_error.empty()) shared.first_error = e.what();
  }
}

}  // namespace

void run_w6_read_write(Context& ctx) {
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::unique_ptr<InterProcessReadWriteLock>> locks;
  for (unsigned i = 0; i < kWorkers; ++i) {
    clients.push_back(ctx.connect());
    locks.push_back(std::make_unique<InterProcessReadWriteLock>(*clients.back(), ctx.path("w6/lock")));
  }
  Shared shared;
  std::vector<WorkerResult> results;
  for (unsigned i = 0; i < kWorkers; ++i) results.emplace_back(i);
  CostMeter cost(ctx.options.connect);
  std::latch go(1);
  Clock::time_point deadline;
  {
    std::vector<std::jthread> threads;
    for (unsigned i = 0; i < kWorkers; ++i)
      threads.emplace_back([&, i] {
        go.wait();
        worker(*locks[i], deadline, shared, results[i]);
      });
    cost.begin();
    deadline = Clock::now() + ctx.plan.w2_duration;
    go.count_down();  // the latch orders the write of deadline before the reads
  }
  const double seconds = seconds_since(deadline - ctx.plan.w2_duration);
  if (!shared.first_error.empty()) throw RunError("W6: " + shared.first_error);

  std::uint64_t reads = 0, writes = 0;
  Samples read_waits, write_waits;
  std::vector<const HoldLog*> logs;
  for (const auto& w : results) {
    reads += w.reads;
    writes += w.writes;
    read_waits.merge(w.read_waits);
    write_waits.merge(w.write_waits);
    logs.push_back(&w.holds);
  }
  cost.end(reads + writes);
  const Judgement judgement = judge(logs, shared.counter);
  const auto write_wait = write_waits.percentiles();

  Record r;
  r.impl = "zkr";
  r.workload = "W6";
  r.label = std::to_string(kWorkers) + " sessions, one read/write lock, 1 write in " + std::to_string(kWriteEvery);
  r.params.add("workers", kWorkers).add("write_every", kWriteEvery).add("lock", "InterProcessReadWriteLock");
  r.ops = reads + writes;
  r.seconds = seconds;
  r.latency = read_waits.percentiles();
  r.requests_per_op = cost.requests_per_op();
  r.writes_per_op = cost.writes_per_op();
  r.extra.add("acquisitions_per_sec", r.ops_per_sec())
      .add("reads", reads)
      .add("writes", writes)
      .add("most_readers_at_once", static_cast<std::uint64_t>(judgement.report.most_shared_at_once))
      .add("writer_wait_p50_ms", write_wait.p50_ms)
      .add("writer_wait_p99_ms", write_wait.p99_ms)
      .add("timeouts", shared.errors.load())
      .add("peak_rss_kib", peak_rss_kib());
  add_judgement(r.extra, judgement);
  r.note = strprintf("latency = reader wait; writer wait p50 %.2f p99 %.2f ms; up to %zu readers at once",
                     write_wait.p50_ms, write_wait.p99_ms, judgement.report.most_shared_at_once);
  ctx.reporter.add(std::move(r));
  if (!judgement.report.ok()) std::cerr << "bench: W6: " << exclusion::format_report(judgement.report);
  ctx.reporter.verdict({"W6 read/write exclusion violations == 0", true,
                        judgement.violations() == 0 && shared.errors.load() == 0, true,
                        strprintf("%zu overlaps, %zu token inversions, %lld lost updates in %llu holds",
                                  judgement.report.overlaps, judgement.report.token_inversions,
                                  static_cast<long long>(judgement.report.lost_updates),
                                  static_cast<unsigned long long>(reads + writes))});
  ctx.reporter.verdict({"W6 readers share the lock (more than one held at once)", false,
                        judgement.report.most_shared_at_once > 1, !ctx.options.quick,
                        strprintf("up to %zu readers at once", judgement.report.most_shared_at_once)});
}

}  // namespace zkr::bench
