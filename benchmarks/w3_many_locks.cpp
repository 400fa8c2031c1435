// W3: K distinct keys, each locked and released once, by several threads
// over a few sessions (as services locking one key per request would): one
// session alone is slower, since the server answers a session's requests in
// order.
// Nothing of the library may stay behind: a release removes its own lock
// directory, and the server reaps the empty container parents.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "curator_peer.hpp"
#include "mntr.hpp"
#include "progress.hpp"
#include "rss.hpp"
#include "server_cost.hpp"
#include "workloads.hpp"
#include "zkr/lock_factory.hpp"

namespace zkr::bench {
namespace {

struct ManyLocksShared {
  std::atomic<std::uint64_t> next{0};
  std::atomic<std::uint64_t> done{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::condition_variable finished;  // a worker has returned
  unsigned running = 0;              // guarded by mutex
  std::string first_error;           // guarded by mutex
};

// Tells the main thread a worker is done, however it ends.
struct Finish {
  ManyLocksShared& shared;
  ~Finish() {
    {
      std::lock_guard lock(shared.mutex);
      --shared.running;
    }
    shared.finished.notify_all();
  }
};

void cycle_keys(const LockFactory& factory, std::uint64_t k, std::uint64_t keys,
                Clock::time_point deadline, ManyLocksShared& shared, Samples& out) {
  const Finish finish{shared};
  try {
    for (std::uint64_t i = shared.next.fetch_add(1); i < keys; i = shared.next.fetch_add(1)) {
      if (shared.failed.load() || Clock::now() >= deadline) return;
      const auto t0 = Clock::now();
      auto mutex = factory.mutex("k" + std::to_string(k) + "-" + std::to_string(i));
      // Bounded: nobody else ever holds these keys.
      if (!mutex->try_acquire_for(std::chrono::seconds(30)))
        throw std::runtime_error("acquiring " + mutex->path() + " timed out");
      mutex->release();
      out.add(ms_between(t0, Clock::now()));
      shared.done.fetch_add(1);
    }
  } catch (const std::exception& e) {
    shared.failed = true;
    std::lock_guard lock(shared.mutex);
    if (shared.first_error.empty()) shared.first_error = e.what();
  }
}

std::string count_text(const std::optional<std::int64_t>& n) {
  return n ? std::to_string(*n) : "?";
}

void add_count(nlohmann::ordered_json& o, const char* key, const std::optional<std::int64_t>& n) {
  if (n) o[key] = *n;
  else o[key] = nullptr;
}

// Curator's InterProcessMutex on the same K keys (under a root of its own),
// after ours has settled: its cycles, its costs, and what it leaves behind
// (its parents are containers, which the server reaps on its own schedule).
void run_curator(Context& ctx, CuratorPeer& peer, std::uint64_t keys, unsigned threads,
                 Clock::duration limit) {
  const std::string root = ctx.path("curator-w3");
  CostMeter cost(ctx.options.connect);
  cost.begin();
  const auto start = Clock::now();
  const auto result =
      peer.w3(root, keys, threads, std::chrono::duration_cast<std::chrono::milliseconds>(limit));
  const double seconds = seconds_since(start);
  cost.end(result.cycles);
  std::this_thread::sleep_for(ctx.plan.w3_settle);  // a measurement, as ours
  auto client = ctx.connect();
  const std::uint64_t leftover = count_below(*client->keeper(), root, 1);
  Samples samples(result.latencies_ms.size());
  for (const double ms : result.latencies_ms) samples.add(ms);
  Record r;
  r.impl = "curator";
  r.workload = "W3";
  r.label = "K=" + std::to_string(keys);
  r.params["keys"] = keys;
  r.params["threads"] = threads;
  r.params["lock"] = "Curator 5.4 InterProcessMutex";
  r.ops = result.cycles;
  r.seconds = seconds;
  r.latency = samples.percentiles();
  r.requests_per_op = cost.requests_per_op();
  r.writes_per_op = cost.writes_per_op();
  r.extra["cycles_per_sec"] = r.ops_per_sec();
  r.extra["leftover_znodes"] = leftover;
  r.note = "left " + std::to_string(leftover) + " after " +
           std::to_string(ctx.plan.w3_settle.count() / 1000) + " s (containers the server reaps)";
  ctx.reporter.add(std::move(r));
  if (result.cycles < keys) throw RunError("W3 curator K=" + std::to_string(keys) + ": timed out");
}

}  // namespace

void run_w3_many_locks(Context& ctx) {
  const std::string root = ctx.path("w3");
  const unsigned threads = ctx.plan.w3_threads;
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<LockFactory> factories;
  for (unsigned s = 0; s < ctx.plan.w3_sessions; ++s) clients.push_back(ctx.connect());
  for (const auto& c : clients) factories.emplace_back(*c, root, LockLayout::flat());
  auto& client = clients.front();
  std::optional<std::uint64_t> first_peak;
  std::uint64_t first_keys = 0;
  std::uint64_t leftover_total = 0;

  for (const std::uint64_t keys : ctx.plan.w3_keys) {
    const auto before = leader_znode_count(ctx.options.connect);
    ManyLocksShared shared;
    std::vector<Samples> samples(threads);
    CostMeter cost(ctx.options.connect);
    cost.begin();
    const auto start = Clock::now();
    // Generous: a healthy ensemble does 100,000 in a minute or two here.
    const auto deadline = start + std::chrono::milliseconds(60) * static_cast<std::int64_t>(keys) +
                          std::chrono::seconds(60);
    {
      shared.running = threads;
      std::vector<std::jthread> workers;
      for (unsigned t = 0; t < threads; ++t)
        workers.emplace_back([&, t] {
          cycle_keys(factories[t % factories.size()], keys, keys, deadline, shared, samples[t]);
        });
      // The main thread only reports progress until every worker has returned
      // (each stops at the deadline on its own).
      Progress progress("W3 K=" + std::to_string(keys), keys);
      std::unique_lock lock(shared.mutex);
      while (!shared.finished.wait_for(lock, std::chrono::seconds(1),
                                       [&] { return shared.running == 0; }))
        progress.update(shared.done.load());
    }  // joins
    const double seconds = seconds_since(start);
    cost.end(keys);
    if (shared.failed) throw RunError("W3 K=" + std::to_string(keys) + ": " + shared.first_error);
    if (shared.done.load() < keys) throw RunError("W3 K=" + std::to_string(keys) + ": timed out");

    const auto right_after = leader_znode_count(ctx.options.connect);
    const std::uint64_t peak_after = peak_rss_kib();
    const std::uint64_t rss_after = current_rss_kib();
    // A measurement, not a wait for a condition: the server reaps empty
    // container parents on its own schedule.
    std::this_thread::sleep_for(ctx.plan.w3_settle);
    const auto settled = leader_znode_count(ctx.options.connect);
    auto keeper = client->keeper();
    const std::uint64_t leftover = count_below(*keeper, root);
    const bool root_present = keeper->exists(root).has_value();
    leftover_total += leftover;

    Samples all;
    for (const auto& s : samples) all.merge(s);
    Record r;
    r.workload = "W3";
    r.label = "K=" + std::to_string(keys);
    r.params["keys"] = keys;
    r.params["threads"] = threads;
    r.params["sessions"] = ctx.plan.w3_sessions;
    r.params["layout"] = "flat";
    r.ops = keys;
    r.seconds = seconds;
    r.latency = all.percentiles();
    r.requests_per_op = cost.requests_per_op();
    r.writes_per_op = cost.writes_per_op();
    r.extra["cycles_per_sec"] = r.ops_per_sec();
    add_count(r.extra, "znodes_before", before);
    add_count(r.extra, "znodes_right_after", right_after);
    add_count(r.extra, "znodes_after_settle", settled);
    r.extra["settle_s"] = static_cast<double>(ctx.plan.w3_settle.count()) / 1000.0;
    r.extra["leftover_znodes"] = leftover;
    r.extra["root_present_after_settle"] = root_present;
    r.extra["peak_rss_kib"] = peak_after;
    r.extra["rss_kib"] = rss_after;
    r.note = "znodes " + count_text(before) + " -> " + count_text(right_after) + " -> " +
             count_text(settled) + " after " + std::to_string(ctx.plan.w3_settle.count() / 1000) +
             " s; left " + std::to_string(leftover) + "; peak RSS " +
             std::to_string(peak_after / 1024) + " MiB";
    ctx.reporter.add(std::move(r));
    if (ctx.curator) run_curator(ctx, *ctx.curator, keys, threads, deadline - start);
    if (!first_peak) {
      first_peak = peak_after;
      first_keys = keys;
    } else if (keys == ctx.plan.w3_keys.back()) {
      const double ratio = static_cast<double>(peak_after) / static_cast<double>(*first_peak);
      ctx.reporter.verdict(
          {"W3 peak RSS after the largest K within 1.2x of after the smallest", false, ratio <= 1.2,
           !ctx.options.quick,
           strprintf(
               "peak RSS %.1f MiB after K=%llu, %.1f MiB after K=%llu: %.2fx (wanted <= 1.2x)",
               static_cast<double>(peak_after) / 1024, static_cast<unsigned long long>(keys),
               static_cast<double>(*first_peak) / 1024, static_cast<unsigned long long>(first_keys),
               ratio)});
    }
  }
  ctx.reporter.verdict({"W3 zero znodes of the library left", true, leftover_total == 0, true,
                        strprintf("%llu znodes left below %s after the runs",
                                  static_cast<unsigned long long>(leftover_total), root.c_str())});
}

}  // namespace zkr::bench
