// W7: the semaphore on Curator's layout. First 16 workers, each with its own
// session, on one InterProcessSemaphoreV2 of 4 leases, each hold 40 reads
// long (the holder's work): throughput, the most
// holders seen at once (from the holders' own intervals: never above 4, and
// 4 reached), and fairness. Then the two semaphore mutexes side by side, 8
// workers each as in W2: ours of the lock queue (InterProcessSemaphoreMutex)
// and the Curator-layout one (CuratorSemaphoreMutex), with the requests and
// writes each acquisition costs the servers.
#include <algorithm>
#include <atomic>
#include <iostream>
#include <latch>
#include <mutex>
#include <queue>
#include <thread>

#include "critical_section.hpp"
#include "rss.hpp"
#include "server_cost.hpp"
#include "workloads.hpp"
#include "zkr/lock.hpp"
#include "zkr/semaphore.hpp"

namespace zkr::bench {
namespace {

constexpr unsigned kSemaphoreWorkers = 16;
constexpr std::int32_t kLeases = 4;
constexpr int kReadsPerHold = 40;
constexpr unsigned kMutexWorkers = 8;
constexpr std::uint64_t kMaxHoldsPerWorker = 1'000'000;

struct Hold {
  std::int64_t enter_ns, exit_ns;
};

// The most intervals that overlap at one time.
std::size_t most_at_once(std::vector<Hold> holds) {
  std::sort(holds.begin(), holds.end(), [](const Hold& a, const Hold& b) { return a.enter_ns < b.enter_ns; });
  std::priority_queue<std::int64_t, std::vector<std::int64_t>, std::greater<>> exits;
  std::size_t most = 0;
  for (const auto& h : holds) {
    while (!exits.empty() && exits.top() <= h.enter_ns) exits.pop();
    exits.push(h.exit_ns);
    most = std::max(most, exits.size());
  }
  return most;
}

struct Run {
  double seconds = 0;
  std::vector<std::uint64_t> per_worker;
  std::vector<Hold> holds;
  Samples waits{4096};
  std::uint64_t errors = 0;
  std::string first_error;
  CostMeter cost;
  explicit Run(std::string connect) : cost(std::move(connect)) {}
  std::uint64_t total() const {
    std::uint64_t n = 0;
    for (const auto v : per_worker) n += v;
    return n;
  }
  double fairness() const {
    const auto [least, most] = std::minmax_element(per_worker.begin(), per_worker.end());
    return *least > 0 ? static_cast<double>(*most) / static_cast<double>(*least) : 0;
  }
};

// Runs `hold_once(worker)` on every worker until the deadline; each returns
// false when it could not get the lock in time.
template <class HoldOnce>
void run_workers(Context& ctx, unsigned workers, HoldOnce hold_once, Run& run) {
  std::vector<std::vector<Hold>> holds(workers);
  std::vector<Samples> waits(workers, Samples(1024));
  run.per_worker.assign(workers, 0);
  std::atomic<std::uint64_t> errors{0};
  std::mutex error_mutex;
  std::latch go(1);
  Clock::time_point deadline;
  {
    std::vector<std::jthread> threads;
    for (unsigned i = 0; i < workers; ++i)
      threads.emplace_back([&, i] {
        go.wait();
        try {
          while (run.per_worker[i] < kMaxHoldsPerWorker && Clock::now() < deadline) {
            const auto t0 = Clock::now();
            Hold h{};
            if (!hold_once(i, [&] { waits[i].add(ms_between(t0, Clock::now())); h.enter_ns = monotonic_ns(); },
                           [&] { h.exit_ns = monotonic_ns(); })) {
              errors.fetch_add(1);
              break;
            }
            holds[i].push_back(h);
            ++run.per_worker[i];
          }
        } catch (const std::exception& e) {
          errors.fetch_add(1);
          std::lock_guard lock(error_mutex);
          if (run.first_error.empty()) run.first_error = e.what();
        }
      });
    run.cost.begin();
    deadline = Clock::now() + ctx.plan.w2_duration;
    go.count_down();
  }
  run.seconds = seconds_since(deadline - ctx.plan.w2_duration);
  run.cost.end(run.total());
  run.errors = errors.load();
  for (unsigned i = 0; i < workers; ++i) {
    run.holds.insert(run.holds.end(), holds[i].begin(), holds[i].end());
    run.waits.merge(waits[i]);
  }
}

Record record(const std::string& impl, const std::string& label, const std::string& lock,
              unsigned workers, const Run& run) {
  Record r;
  r.impl = impl;
  r.workload = "W7";
  r.label = label;
  r.params.add("workers", workers).add("sessions", workers).add("lock", lock);
  r.ops = run.total();
  r.seconds = run.seconds;
  r.latency = run.waits.percentiles();
  r.requests_per_op = run.cost.requests_per_op();
  r.writes_per_op = run.cost.writes_per_op();
  r.extra.add("acquisitions_per_sec", r.ops_per_sec())
      .add("fairness_max_over_min", run.fairness())
      .add("most_holders_at_once", static_cast<std::uint64_t>(most_at_once(run.holds)))
      .add("timeouts", run.errors)
      .add("peak_rss_kib", peak_rss_kib());
  return r;
}

void semaphore_run(Context& ctx) {
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::unique_ptr<InterProcessSemaphoreV2>> semaphores;
  for (unsigned i = 0; i < kSemaphoreWorkers; ++i) {
    clients.push_back(ctx.connect());
    semaphores.push_back(std::make_unique<InterProcessSemaphoreV2>(*clients.back(), ctx.path("w7/semaphore"),
                                                                    SemaphoreLimit::fixed(kLeases)));
  }
  const std::string resource = ctx.path("w7/semaphore");
  Run run(ctx.options.connect);
  run_workers(
      ctx, kSemaphoreWorkers,
      [&](unsigned i, auto granted, auto leaving) {
        auto leases = semaphores[i]->try_acquire(1, std::chrono::seconds(30));
        if (leases.empty()) return false;
        granted();
        // The holder's work: a few reads of the resource, so that holds last
        // longer than a grant takes and the bound, not the grant rate, limits.
        for (int read = 0; read < kReadsPerHold; ++read) (void)clients[i]->keeper()->exists(resource);
        leaving();
        return true;
      },
      run);
  if (!run.first_error.empty()) throw RunError("W7: " + run.first_error);
  const auto most = most_at_once(run.holds);
  Record r = record("zkr", std::to_string(kSemaphoreWorkers) + " sessions, a semaphore of " +
                                    std::to_string(kLeases) + " leases",
                    "InterProcessSemaphoreV2", kSemaphoreWorkers, run);
  r.note = strprintf("latency = wait; up to %zu holders at once; fairness %.2f", most, run.fairness());
  ctx.reporter.add(std::move(r));
  ctx.reporter.verdict({"W7 never more holders than leases (4)", true, most <= kLeases && run.errors == 0, true,
                        strprintf("up to %zu holders at once, %llu acquire timeouts", most,
                                  static_cast<unsigned long long>(run.errors))});
  ctx.reporter.verdict({"W7 the bound is reached (4 holders at once)", false, most == kLeases,
                        !ctx.options.quick, strprintf("up to %zu holders at once", most)});
}

template <class Mutex>
Run mutex_run(Context& ctx, const std::string& path, unsigned workers) {
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::unique_ptr<Mutex>> mutexes;
  for (unsigned i = 0; i < workers; ++i) {
    clients.push_back(ctx.connect());
    mutexes.push_back(std::make_unique<Mutex>(*clients.back(), path));
  }
  Run run(ctx.options.connect);
  run_workers(
      ctx, workers,
      [&](unsigned i, auto granted, auto leaving) {
        if (!mutexes[i]->try_acquire_for(std::chrono::seconds(30))) return false;
        granted();
        std::this_thread::yield();
        leaving();
        mutexes[i]->release();
        return true;
      },
      run);
  if (!run.first_error.empty()) throw RunError("W7: " + run.first_error);
  return run;
}

}  // namespace

void run_w7_semaphore(Context& ctx) {
  semaphore_run(ctx);
  // The two semaphore mutexes, uncontended (one session, as W1) and
  // contended (as W2).
  for (const unsigned workers : {1u, kMutexWorkers}) {
    const auto tag = std::to_string(workers);
    const auto queue = mutex_run<InterProcessSemaphoreMutex>(ctx, ctx.path("w7/queue-mutex-" + tag), workers);
    const auto curator_layout =
        mutex_run<CuratorSemaphoreMutex>(ctx, ctx.path("w7/curator-layout-mutex-" + tag), workers);
    for (const auto* run : {&queue, &curator_layout}) {
      const bool ours = run == &queue;
      const std::string lock = ours ? "InterProcessSemaphoreMutex" : "CuratorSemaphoreMutex";
      Record r = record("zkr", tag + (workers == 1 ? " session, " : " sessions, ") + lock, lock, workers, *run);
      const auto most = most_at_once(run->holds);
      r.note = strprintf("latency = wait; %.2f writes, %.2f requests per acquisition; up to %zu holders at once",
                         run->cost.writes_per_op().value_or(0), run->cost.requests_per_op().value_or(0), most);
      ctx.reporter.add(std::move(r));
      ctx.reporter.verdict({"W7 " + lock + " with " + tag + " sessions excludes (one holder at a time)", true,
                            most <= 1 && run->errors == 0, true, strprintf("up to %zu holders at once", most)});
    }
  }
}

}  // namespace zkr::bench
