// W7: the semaphore on Curator's layout. First 16 workers, each with its own
// session, on one InterProcessSemaphoreV2 of 4 leases, each hold 40 reads
// long (the holder's work): throughput, the most
// holders seen at once (from the holders' own intervals: never above 4, and
// 4 reached), and fairness. Then the two semaphore mutexes side by side, 8
// workers each as in W2: ours of the lock queue (NonReentrantMutex)
// and the Curator-layout one (InterProcessSemaphoreMutex), with the requests and
// writes each acquisition costs the servers. With --peers curator, Curator's
// own InterProcessSemaphoreV2 and InterProcessSemaphoreMutex run each part
// too, in rounds interleaved with ours as in W2.
#include <algorithm>
#include <atomic>
#include <functional>
#include <iostream>
#include <mutex>
#include <optional>
#include <queue>
#include <thread>

#include "critical_section.hpp"
#include "curator_peer.hpp"
#include "rss.hpp"
#include "server_cost.hpp"
#include "timed_round.hpp"
#include "workloads.hpp"
#include "zkr/lock.hpp"
#include "zkr/semaphore.hpp"

namespace zkr::bench {
namespace {

constexpr unsigned kSemaphoreWorkers = kW7SemaphoreWorkers;
constexpr std::int32_t kLeases = 4;
constexpr int kReadsPerHold = 40;
constexpr unsigned kMutexWorkers = 8;
constexpr std::uint64_t kMaxSemaphoreHoldsPerWorker = 1'000'000;
// Rounds per implementation when Curator's runs too, in a full run (--quick: one).
constexpr unsigned kSemaphoreRounds = 3;

struct Hold {
  std::int64_t enter_ns, exit_ns;
};

// The most intervals that overlap at one time.
std::size_t most_at_once(std::vector<Hold> holds) {
  std::sort(holds.begin(), holds.end(),
            [](const Hold& a, const Hold& b) { return a.enter_ns < b.enter_ns; });
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

// Adds one round's holds by worker to a run.
void add_per_worker(Run& run, const std::vector<std::uint64_t>& per_worker) {
  run.per_worker.resize(std::max(run.per_worker.size(), per_worker.size()), 0);
  for (std::size_t i = 0; i < per_worker.size(); ++i) run.per_worker[i] += per_worker[i];
}

// One round: `hold_once(worker)` on every worker until `duration` has passed;
// each returns false when it could not get the lock in time. Adds to `run`.
template <class HoldOnce>
void run_workers(unsigned workers, std::chrono::milliseconds duration, HoldOnce hold_once,
                 Run& run) {
  std::vector<std::vector<Hold>> holds(workers);
  std::vector<Samples> waits(workers, Samples(1024));
  std::vector<std::uint64_t> per_worker(workers, 0);
  std::atomic<std::uint64_t> errors{0};
  std::mutex error_mutex;
  run.seconds +=
      run_timed_round(workers, duration, run.cost, [&](unsigned i, Clock::time_point deadline) {
        try {
          while (per_worker[i] < kMaxSemaphoreHoldsPerWorker && Clock::now() < deadline) {
            const auto t0 = Clock::now();
            Hold h{};
            if (!hold_once(
                    i,
                    [&] {
                      waits[i].add(ms_between(t0, Clock::now()));
                      h.enter_ns = monotonic_ns();
                    },
                    [&] { h.exit_ns = monotonic_ns(); })) {
              errors.fetch_add(1);
              break;
            }
            holds[i].push_back(h);
            ++per_worker[i];
          }
        } catch (const std::exception& e) {
          errors.fetch_add(1);
          std::lock_guard lock(error_mutex);
          if (run.first_error.empty()) run.first_error = e.what();
        }
      });
  std::uint64_t total = 0;
  for (const auto n : per_worker) total += n;
  run.cost.end(total);
  add_per_worker(run, per_worker);
  run.errors += errors.load();
  for (unsigned i = 0; i < workers; ++i) {
    run.holds.insert(run.holds.end(), holds[i].begin(), holds[i].end());
    run.waits.merge(waits[i]);
  }
}

Record semaphore_record(const std::string& impl, const std::string& label, const std::string& lock,
                        unsigned workers, const Run& run, std::optional<double> curator_rate) {
  Record r;
  r.impl = impl;
  r.workload = "W7";
  r.label = label;
  r.params["workers"] = workers;
  r.params["sessions"] = workers;
  r.params["lock"] = lock;
  r.ops = run.total();
  r.seconds = run.seconds;
  r.latency = run.waits.percentiles();
  r.requests_per_op = run.cost.requests_per_op();
  r.writes_per_op = run.cost.writes_per_op();
  r.extra["acquisitions_per_sec"] = r.ops_per_sec();
  r.extra["fairness_max_over_min"] = run.fairness();
  r.extra["most_holders_at_once"] = static_cast<std::uint64_t>(most_at_once(run.holds));
  r.extra["timeouts"] = run.errors;
  r.extra["peak_rss_kib"] = peak_rss_kib();
  if (curator_rate && *curator_rate > 0)
    r.extra["x_curator_rate"] = r.ops_per_sec() / *curator_rate;
  return r;
}

// "; 1.23x Curator's rate" for a note, when Curator's ran.
std::string versus_curator(const Record& r, std::optional<double> curator_rate) {
  if (!curator_rate || *curator_rate <= 0) return "";
  return strprintf("; %.2fx Curator's rate", r.ops_per_sec() / *curator_rate);
}

// One round of Curator's, in its JVM (`call` runs it): its holds, read back
// from the peer's interval file, added to the run.
template <class Call>
void curator_semaphore_round(unsigned workers, Call call, Run& run) {
  run.cost.begin();
  const auto start = Clock::now();
  const CuratorPeer::W7 result = call();
  run.seconds += seconds_since(start);
  run.cost.end(result.acquisitions);
  for (const double ms : result.waits_ms) run.waits.add(ms);
  std::vector<std::uint64_t> per_worker(workers, 0);
  for (const auto& h : exclusion::read_interval_file(result.interval_file)) {
    if (h.thread >= 0 && h.thread < static_cast<std::int64_t>(workers))
      ++per_worker[static_cast<std::size_t>(h.thread)];
    run.holds.push_back({h.enter_ns, h.exit_ns});
  }
  add_per_worker(run, per_worker);
}

using Slot = std::function<void(std::chrono::milliseconds)>;

// Each implementation's rounds, each first in turn, as W2 does: a shared
// machine's load drifts, and each gets its share of every stretch. One round
// unless Curator's runs beside ours in a full run.
void interleave(const Context& ctx, const std::vector<Slot>& slots) {
  const unsigned rounds = ctx.options.quick || !ctx.curator ? 1 : kSemaphoreRounds;
  const auto duration = ctx.plan.w2_duration / rounds;
  for (unsigned round = 0; round < rounds; ++round)
    for (std::size_t slot = 0; slot < slots.size(); ++slot)
      slots[(round + slot) % slots.size()](duration);
}

// Our semaphore's workers, each with its own session, for every round.
struct SemaphoreWorkers {
  explicit SemaphoreWorkers(Context& ctx) : resource(ctx.path("w7/semaphore")) {
    for (unsigned i = 0; i < kSemaphoreWorkers; ++i) {
      clients.push_back(ctx.connect());
      semaphores.push_back(std::make_unique<InterProcessSemaphoreV2>(
          *clients.back(), resource, SemaphoreLimit::fixed(kLeases)));
    }
  }

  void round(std::chrono::milliseconds duration, Run& run) {
    run_workers(
        kSemaphoreWorkers, duration,
        [&](unsigned i, auto granted, auto leaving) {
          auto leases = semaphores[i]->try_acquire_for(1, std::chrono::seconds(30));
          if (leases.empty()) return false;
          granted();
          // The holder's work: a few reads of the resource, so that holds last
          // longer than a grant takes and the bound, not the grant rate, limits.
          for (int read = 0; read < kReadsPerHold; ++read)
            (void)clients[i]->keeper()->exists(resource);
          leaving();
          return true;
        },
        run);
    if (!run.first_error.empty()) throw RunError("W7: " + run.first_error);
  }

  std::string resource;
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::unique_ptr<InterProcessSemaphoreV2>> semaphores;
};

// The record and the bound's check of one semaphore; its rate.
double report_semaphore(Context& ctx, const std::string& impl, const std::string& lock,
                        const Run& run, std::optional<double> curator_rate) {
  const auto most = most_at_once(run.holds);
  Record r = semaphore_record(impl,
                              std::to_string(kSemaphoreWorkers) + " sessions, a semaphore of " +
                                  std::to_string(kLeases) + " leases",
                              lock, kSemaphoreWorkers, run, curator_rate);
  r.note =
      strprintf("latency = wait; up to %zu holders at once; fairness %.2f", most, run.fairness()) +
      versus_curator(r, curator_rate);
  const double rate = r.ops_per_sec();
  ctx.reporter.add(std::move(r));
  const std::string who = impl == "zkr" ? "" : " " + impl;
  ctx.reporter.verdict({"W7" + who + " never more holders than leases (4)", true,
                        most <= kLeases && run.errors == 0, true,
                        strprintf("up to %zu holders at once, %llu acquire timeouts", most,
                                  static_cast<unsigned long long>(run.errors))});
  return rate;
}

void semaphore_part(Context& ctx) {
  SemaphoreWorkers ours(ctx);
  Run zkr(ctx.options.connect), curator(ctx.options.connect);
  std::vector<Slot> slots{[&](std::chrono::milliseconds d) { ours.round(d, zkr); }};
  if (ctx.curator)
    slots.push_back([&](std::chrono::milliseconds d) {
      curator_semaphore_round(
          kSemaphoreWorkers,
          [&] {
            return ctx.curator->w7_semaphore(ctx.path("curator-w7/semaphore"), kSemaphoreWorkers,
                                             kLeases, kReadsPerHold, d);
          },
          curator);
    });
  interleave(ctx, slots);
  std::optional<double> curator_rate;
  if (ctx.curator)
    curator_rate =
        report_semaphore(ctx, "curator", "Curator 5.4 InterProcessSemaphoreV2", curator, {});
  (void)report_semaphore(ctx, "zkr", "InterProcessSemaphoreV2", zkr, curator_rate);
  const auto most = most_at_once(zkr.holds);
  ctx.reporter.verdict({"W7 the bound is reached (4 holders at once)", false, most == kLeases,
                        !ctx.options.quick, strprintf("up to %zu holders at once", most)});
}

// One of our semaphore mutexes: its workers, each with its own session, for
// every round.
template <class Mutex>
struct MutexWorkers {
  MutexWorkers(Context& ctx, const std::string& path, unsigned workers) {
    for (unsigned i = 0; i < workers; ++i) {
      clients.push_back(ctx.connect());
      mutexes.push_back(std::make_unique<Mutex>(*clients.back(), path));
    }
  }

  void round(std::chrono::milliseconds duration, Run& run) {
    run_workers(
        static_cast<unsigned>(mutexes.size()), duration,
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
  }

  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::unique_ptr<Mutex>> mutexes;
};

// The record and the exclusion check of one semaphore mutex; its rate.
double report_mutex(Context& ctx, const std::string& impl, const std::string& lock,
                    unsigned workers, const Run& run, std::optional<double> curator_rate) {
  const auto tag = std::to_string(workers);
  Record r = semaphore_record(impl, tag + (workers == 1 ? " session, " : " sessions, ") + lock,
                              lock, workers, run, curator_rate);
  const auto most = most_at_once(run.holds);
  r.note =
      strprintf(
          "latency = wait; %.2f writes, %.2f requests per acquisition; up to %zu holders at once",
          run.cost.writes_per_op().value_or(0), run.cost.requests_per_op().value_or(0), most) +
      versus_curator(r, curator_rate);
  const double rate = r.ops_per_sec();
  ctx.reporter.add(std::move(r));
  ctx.reporter.verdict({"W7 " + lock + " with " + tag + " sessions excludes (one holder at a time)",
                        true, most <= 1 && run.errors == 0, true,
                        strprintf("up to %zu holders at once", most)});
  return rate;
}

// Our two semaphore mutexes, and Curator's InterProcessSemaphoreMutex when
// its peer runs, with `workers` sessions each.
void mutex_part(Context& ctx, unsigned workers) {
  const auto tag = std::to_string(workers);
  MutexWorkers<NonReentrantMutex> queue_workers(ctx, ctx.path("w7/queue-mutex-" + tag), workers);
  MutexWorkers<InterProcessSemaphoreMutex> layout_workers(
      ctx, ctx.path("w7/curator-layout-mutex-" + tag), workers);
  Run queue(ctx.options.connect), curator_layout(ctx.options.connect), curator(ctx.options.connect);
  std::vector<Slot> slots{
      [&](std::chrono::milliseconds d) { queue_workers.round(d, queue); },
      [&](std::chrono::milliseconds d) { layout_workers.round(d, curator_layout); }};
  if (ctx.curator)
    slots.push_back([&](std::chrono::milliseconds d) {
      curator_semaphore_round(
          workers,
          [&] { return ctx.curator->w7_mutex(ctx.path("curator-w7/mutex-" + tag), workers, d); },
          curator);
    });
  interleave(ctx, slots);
  std::optional<double> curator_rate;
  if (ctx.curator)
    curator_rate = report_mutex(ctx, "curator", "Curator 5.4 InterProcessSemaphoreMutex", workers,
                                curator, {});
  (void)report_mutex(ctx, "zkr", "NonReentrantMutex", workers, queue, curator_rate);
  (void)report_mutex(ctx, "zkr", "InterProcessSemaphoreMutex", workers, curator_layout,
                     curator_rate);
}

}  // namespace

void run_w7_semaphore(Context& ctx) {
  semaphore_part(ctx);
  // The semaphore mutexes, uncontended (one session, as W1) and contended
  // (as W2).
  for (const unsigned workers : {1u, kMutexWorkers}) mutex_part(ctx, workers);
}

}  // namespace zkr::bench
