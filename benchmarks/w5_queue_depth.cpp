// W5: hand-off latency down a queue. N + 2 contenders cycle on one lock (a
// few sessions shared by one thread per contender): at every hand-off one
// releases, one receives the lock, and N wait behind the receiver; the one
// that released queues again at the end, so the depth stays N. The hand-off
// latency is from just before release() to the receiver's acquire returning.
// Each holder does a read-modify-write of a counter only the lock protects;
// the exclusion checker judges the holds at each N. With --no-lock the
// contenders take no lock (nobody queues): the control, which must fail.
#include <algorithm>
#include <atomic>
#include <iostream>
#include <mutex>
#include <thread>

#include "critical_section.hpp"
#include "curator_peer.hpp"
#include "holder_lock.hpp"
#include "rss.hpp"
#include "server_cost.hpp"
#include "workloads.hpp"

namespace zkr::bench {
namespace {

constexpr unsigned kMaxSessions = 8;
constexpr auto kAcquireTimeout = std::chrono::seconds(120);
constexpr std::uint64_t kMaxRoundsPerContender = 1'000'000;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

struct QueueDepthShared {
  std::uint64_t target = 0;  // hand-offs to measure
  Clock::time_point deadline;
  std::atomic<bool> measuring{false};
  std::atomic<bool> stop{false};
  std::atomic<std::int64_t> last_release_ns{0};
  std::atomic<std::uint64_t> handoffs{0};
  bool no_lock = false;
  GuardedCounter counter;
  std::atomic<std::uint64_t> timeouts{0};
  std::mutex mutex;
  std::string first_error;       // guarded by mutex
  Clock::time_point stopped_at;  // written by the thread that sets stop
};

void contender(Client& client, const std::string& path, QueueDepthShared& shared, Samples& out,
               HoldLog& holds) {
  try {
    HolderLock mutex(client, path, shared.no_lock);
    for (std::uint64_t round = 0; round < kMaxRoundsPerContender; ++round) {
      if (!mutex.try_acquire_for(kAcquireTimeout)) {
        shared.timeouts.fetch_add(1);
        return;
      }
      const std::int64_t granted = now_ns();
      holds.hold(shared.counter, mutex.token());
      if (shared.measuring.load() && !shared.stop.load()) {
        out.add(static_cast<double>(granted - shared.last_release_ns.load()) / 1e6);
        if (shared.handoffs.fetch_add(1) + 1 >= shared.target || Clock::now() >= shared.deadline) {
          shared.stopped_at = Clock::now();
          shared.stop = true;  // the lock orders stopped_at before the next holder's reads
        }
      }
      const bool leave = shared.stop.load();
      shared.last_release_ns = now_ns();
      mutex.release();
      if (leave) return;  // the queue drains: each leaves after one last turn
    }
  } catch (const std::exception& e) {
    std::lock_guard lock(shared.mutex);
    if (shared.first_error.empty()) shared.first_error = e.what();
  }
}

}  // namespace

void run_w5_queue_depth(Context& ctx) {
  auto holder_client = ctx.connect();
  std::vector<std::unique_ptr<Client>> clients;
  for (unsigned i = 0; i < kMaxSessions; ++i) clients.push_back(ctx.connect());
  std::optional<double> p50_at_10, p50_at_max;
  std::uint64_t max_n = 0, violations = 0;

  for (const std::uint64_t n : ctx.plan.w5_waiters) {
    const std::string path = ctx.path("w5/lock-" + std::to_string(n));
    const std::uint64_t contenders = n + 2;
    const auto sessions = static_cast<unsigned>(std::min<std::uint64_t>(contenders, kMaxSessions));
    QueueDepthShared shared;
    shared.no_lock = ctx.options.no_lock;
    HolderLock holder(*holder_client, path, shared.no_lock);
    if (!holder.try_acquire_for(std::chrono::seconds(30)))
      throw RunError("W5: " + path + " is held by someone else");

    shared.target = ctx.plan.w5_handoffs;
    std::vector<Samples> samples(contenders);
    std::vector<HoldLog> holds;
    for (std::uint64_t c = 0; c < contenders; ++c)
      holds.emplace_back(static_cast<std::int64_t>(c), holder.kind());
    std::vector<std::jthread> threads;
    for (std::uint64_t c = 0; c < contenders; ++c)
      threads.emplace_back(
          [&, c] { contender(*clients[c % sessions], path, shared, samples[c], holds[c]); });
    // Everyone queued behind the holder: its node and contenders' nodes.
    // Without a lock nobody queues, and nobody waits for the holder.
    const bool queued =
        shared.no_lock || wait_for_children(*holder_client->keeper(), path, contenders + 1,
                                            Clock::now() + std::chrono::seconds(120));
    CostMeter cost(ctx.options.connect);
    cost.begin();
    const auto start = Clock::now();
    shared.deadline = start + ctx.plan.w5_duration;
    shared.measuring = true;
    shared.last_release_ns = now_ns();
    holder.release();
    if (!queued)
      std::fprintf(stderr, "bench:   W5 N=%llu: not every contender queued within 120 s\n",
                   static_cast<unsigned long long>(n));
    if (n >= 100)
      std::fprintf(stderr, "bench:   W5 N=%llu: queue of %llu formed; measuring\n",
                   static_cast<unsigned long long>(n), static_cast<unsigned long long>(contenders));
    threads.clear();  // joins: each contender ends after the stop, or after its acquire timeout
    // Per hand-off, counting the queue's last turns after the stop (N + 2 of them).
    cost.end(shared.handoffs.load() + contenders);
    if (!shared.first_error.empty())
      throw RunError("W5 N=" + std::to_string(n) + ": " + shared.first_error);

    Samples all;
    for (const auto& s : samples) all.merge(s);
    std::vector<const HoldLog*> logs;
    for (const auto& h : holds) logs.push_back(&h);
    const Judgement judgement = judge(logs, shared.counter);
    if (!judgement.report.ok())
      std::cerr << "bench: W5 N=" << n << ": " << exclusion::format_report(judgement.report);
    Record r;
    r.workload = "W5";
    r.label = "N=" + std::to_string(n) + " waiters" + (shared.no_lock ? ", NO LOCK" : "");
    r.params["waiters"] = n;
    r.params["contenders"] = contenders;
    r.params["sessions"] = sessions;
    r.params["lock"] = shared.no_lock ? "none (--no-lock control)" : "InterProcessMutex";
    r.ops = all.size();
    r.seconds = shared.stop ? ms_between(start, shared.stopped_at) / 1000.0 : seconds_since(start);
    r.latency = all.percentiles();
    r.requests_per_op = cost.requests_per_op();
    r.writes_per_op = cost.writes_per_op();
    r.extra["handoffs_per_sec"] = r.ops_per_sec();
    r.extra["timeouts"] = shared.timeouts.load();
    r.extra["peak_rss_kib"] = peak_rss_kib();
    add_judgement(r.extra, judgement);
    r.note = "latency = hand-off";
    violations += judgement.violations() + shared.timeouts.load();
    if (n == 10) p50_at_10 = r.latency->p50_ms;
    if (n >= max_n) {
      max_n = n;
      p50_at_max = r.latency->p50_ms;
    }
    ctx.reporter.add(std::move(r));
    if (ctx.curator && !ctx.options.no_lock) {
      CostMeter curator_cost(ctx.options.connect);
      curator_cost.begin();
      const auto c = ctx.curator->w5(ctx.path("curator-w5/lock-" + std::to_string(n)), n,
                                     ctx.plan.w5_handoffs, ctx.plan.w5_duration);
      curator_cost.end(c.handoffs + contenders);  // as ours: the last turns counted
      Samples handoffs(c.handoffs_ms.size());
      for (const double ms : c.handoffs_ms) handoffs.add(ms);
      Record cr;
      cr.impl = "curator";
      cr.workload = "W5";
      cr.label = "N=" + std::to_string(n) + " waiters";
      cr.params["waiters"] = n;
      cr.params["contenders"] = contenders;
      cr.params["lock"] = "Curator 5.4 InterProcessMutex";
      cr.ops = handoffs.size();
      cr.seconds = c.seconds;
      cr.latency = handoffs.percentiles();
      cr.requests_per_op = curator_cost.requests_per_op();
      cr.writes_per_op = curator_cost.writes_per_op();
      cr.extra["handoffs_per_sec"] = cr.ops_per_sec();
      cr.note = "latency = hand-off (Java)";
      ctx.reporter.add(std::move(cr));
    }
  }
  if (p50_at_10 && p50_at_max && max_n > 10) {
    const double ratio = *p50_at_max / *p50_at_10;
    ctx.reporter.verdict(
        {"W5 hand-off at the largest N within 2x of at 10 waiters", false, ratio <= 2.0,
         !ctx.options.quick && max_n >= 1000,
         strprintf("p50 %.2f ms at %llu waiters, %.2f ms at 10: %.2fx (wanted <= 2x)", *p50_at_max,
                   static_cast<unsigned long long>(max_n), *p50_at_10, ratio)});
  }
  ctx.reporter.verdict({"W5 mutual-exclusion violations == 0", true, violations == 0, true,
                        strprintf("%llu violations or acquire timeouts",
                                  static_cast<unsigned long long>(violations))});
}

}  // namespace zkr::bench
