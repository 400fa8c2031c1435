// W2: eight workers, each with its own session, on one lock. Mutual exclusion
// is checked in two independent ways: a counter of holders inside the
// critical section, and the fencing tokens, which must grow with every grant.
#include <algorithm>
#include <atomic>
#include <latch>
#include <mutex>
#include <thread>

#include "rss.hpp"
#include "workloads.hpp"
#include "zkr/lock.hpp"

namespace zkr::bench {
namespace {

constexpr std::uint64_t kMaxAcquisitionsPerWorker = 1'000'000;

struct Shared {
  std::atomic<int> holders{0};
  std::atomic<std::uint64_t> violations{0};
  std::int64_t last_token = 0;       // guarded by the lock under test itself
  std::atomic<std::uint64_t> errors{0};
  std::mutex error_mutex;
  std::string first_error;
};

struct WorkerResult {
  std::uint64_t acquisitions = 0;
  Samples waits{4096};
};

void worker(Client& client, const std::string& path, Clock::time_point deadline, Shared& shared,
            WorkerResult& out) {
  try {
    InterProcessMutex mutex(client, path);
    while (out.acquisitions < kMaxAcquisitionsPerWorker) {
      const auto t0 = Clock::now();
      if (t0 >= deadline) break;
      // Bounded: a fair lock among 8 never needs this long on a healthy ensemble.
      if (!mutex.try_acquire_for(std::chrono::seconds(30))) {
        shared.errors.fetch_add(1);
        break;
      }
      out.waits.add(ms_between(t0, Clock::now()));
      if (shared.holders.fetch_add(1) != 0) shared.violations.fetch_add(1);
      const std::int64_t token = mutex.lease().fencing_token();
      if (token <= shared.last_token) shared.violations.fetch_add(1);
      shared.last_token = token;
      shared.holders.fetch_sub(1);
      mutex.release();
      ++out.acquisitions;
    }
  } catch (const std::exception& e) {
    shared.errors.fetch_add(1);
    std::lock_guard lock(shared.error_mutex);
    if (shared.first_error.empty()) shared.first_error = e.what();
  }
}

}  // namespace

void run_w2_contended(Context& ctx) {
  const unsigned workers = ctx.plan.w2_workers;
  std::vector<std::unique_ptr<Client>> clients;
  for (unsigned i = 0; i < workers; ++i) clients.push_back(ctx.connect());
  const std::string path = ctx.path("w2/lock");
  Shared shared;
  std::vector<WorkerResult> results(workers);
  std::latch go(1);
  Clock::time_point deadline;
  std::vector<std::jthread> threads;
  for (unsigned i = 0; i < workers; ++i)
    threads.emplace_back([&, i] {
      go.wait();
      worker(*clients[i], path, deadline, shared, results[i]);
    });
  const auto start = Clock::now();
  deadline = start + ctx.plan.w2_duration;
  go.count_down();  // the latch orders the write of deadline before the reads
  threads.clear();  // joins
  const double seconds = seconds_since(start);
  if (!shared.first_error.empty()) throw RunError("W2: " + shared.first_error);

  Samples waits;
  std::uint64_t total = 0, most = 0, least = UINT64_MAX;
  for (const auto& w : results) {
    waits.merge(w.waits);
    total += w.acquisitions;
    most = std::max(most, w.acquisitions);
    least = std::min(least, w.acquisitions);
  }
  Record r;
  r.workload = "W2";
  r.label = std::to_string(workers) + " sessions, one key";
  r.params.add("workers", workers).add("sessions", workers).add("lock", "InterProcessMutex");
  r.ops = total;
  r.seconds = seconds;
  r.latency = waits.percentiles();
  const double fairness = least > 0 ? static_cast<double>(most) / static_cast<double>(least) : 0;
  r.extra.add("acquisitions_per_sec", r.ops_per_sec())
      .add("fairness_max_over_min", fairness)
      .add("max_per_worker", most)
      .add("min_per_worker", least)
      .add("violations", shared.violations.load())
      .add("timeouts", shared.errors.load())
      .add("peak_rss_kib", peak_rss_kib());
  r.note = strprintf("latency = wait; fairness %.2f, violations %llu", fairness,
                     static_cast<unsigned long long>(shared.violations.load()));
  ctx.reporter.add(std::move(r));
  ctx.reporter.verdict({"W2 mutual-exclusion violations == 0", true,
                        shared.violations.load() == 0 && shared.errors.load() == 0, true,
                        strprintf("%llu violations, %llu acquire timeouts in %llu acquisitions",
                                  static_cast<unsigned long long>(shared.violations.load()),
                                  static_cast<unsigned long long>(shared.errors.load()),
                                  static_cast<unsigned long long>(total))});
}

}  // namespace zkr::bench
