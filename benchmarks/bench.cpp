// zkr::bench::run: options, the ensemble, the workloads in order, the report.
#include "bench.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "context.hpp"
#include "curator_peer.hpp"
#include "delayed_ensemble.hpp"
#include "plots.hpp"
#include "rss.hpp"
#include "server_cost.hpp"
#include "workloads.hpp"
#include "zkr/cleanup.hpp"
#include "zkr/path.hpp"

namespace zkr::bench {
namespace {

// The root must hold nothing but what a sweep may remove: what a crashed run
// left (empty lock directories; its lock nodes went with its sessions). Any
// other content means the root is someone else's: refuse rather than touch it.
void prepare_root(Client& client, const std::string& root) {
  auto keeper = client.keeper();
  if (!keeper->exists(root)) return;
  CleanOptions options;
  options.max_children = 10'000'000;  // a crashed W4 may have left a million keys
  options.on_progress = [](const WalkProgress& p) {
    static Clock::time_point last;
    if (Clock::now() - last < std::chrono::seconds(3)) return;
    last = Clock::now();
    std::cerr << "bench:   sweeping what an earlier run left: " << p.directories
              << " directories\n";
  };
  const auto report = clean_lock_root(client, root, options);
  if (report.empty_directories > 0)
    std::cerr << "bench: removed " << report.empty_directories
              << " empty lock directories left under " << root << " by an earlier run\n";
  const std::uint64_t left = count_below(*keeper, root);
  if (left > 0)
    throw RunError("--root " + root + " holds " + std::to_string(left) +
                   " znodes that are not leftovers of a benchmark (live locks or data): "
                   "choose another --root");
}

// The directories the Curator peer made under the paths the run gave it
// (root/curator-*): Curator makes them as containers with no data, which the
// servers reap in their own time (a minute by default), and which the next
// run's check of its root could not tell from someone else's nodes. Removed
// deepest first, each only while empty, with no data and no owner session:
// anything else there is left as it is.
void remove_curator_directories(Client& client, const std::string& root) {
  auto keeper = client.keeper();
  auto listed = keeper->try_children(root);
  if (!listed.ok()) return;
  for (const auto& name : listed.value().names) {
    if (!name.starts_with("curator-")) continue;
    auto paths = paths_below(*keeper, join_path(root, name));
    paths.insert(paths.begin(), join_path(root, name));
    for (auto path = paths.rbegin(); path != paths.rend(); ++path) {
      const auto node = keeper->try_get(*path);
      if (!node.ok() || !node.value().data.empty() || node.value().stat.num_children != 0 ||
          node.value().stat.ephemeral_owner != 0)
        continue;
      (void)keeper->try_remove(*path, node.value().stat.version);
    }
  }
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) throw RunError("cannot write " + path);
}

int run_workloads(const Options& options) {
  const Plan plan = make_plan(options);
  if (options.out_dir) {
    std::error_code ec;
    std::filesystem::create_directories(*options.out_dir, ec);
    if (ec) throw RunError("cannot create --out " + *options.out_dir + ": " + ec.message());
  }
  Reporter reporter(options.json, options.out_dir);
  Context ctx{options, plan, reporter};
  {
    auto client = ctx.connect();  // a clear error first if the ensemble is unreachable
    prepare_root(*client, options.root);
  }
  std::cerr << "bench: ensemble " << options.connect << ", root " << options.root
            << (options.quick ? ", quick sizes" : "")
            << (options.no_lock ? ", NO LOCK in W2 and W5" : "") << "\n";
  const auto counters_before = read_server_counters(options.connect);
  // Curator: javac once; a JVM of sessions per ensemble address (direct, or
  // through the delay proxies).
  std::optional<CuratorBuild> curator_build;
  std::unique_ptr<CuratorPeer> curator;
  bool curator_wanted = false;
  for (const char* w : {"W1", "W2", "W3", "W5", "W6", "W7", "W9", "W10"})
    curator_wanted = curator_wanted || options.wants(w);
  curator_wanted = curator_wanted && options.curator;
  if (curator_wanted) {
    std::cerr << "bench: compiling and starting the Curator peer\n";
    curator_build.emplace();
    // As many sessions as the widest workload gives a worker each.
    unsigned sessions = plan.w2_workers;
    if (options.wants("W6")) sessions = std::max(sessions, kW6Workers);
    if (options.wants("W7")) sessions = std::max(sessions, kW7SemaphoreWorkers);
    if (options.wants("W9")) sessions = std::max(sessions, plan.w9_participants);
    if (options.wants("W10")) sessions = std::max(sessions, plan.w10_workers);
    curator = std::make_unique<CuratorPeer>(*curator_build, options.connect, sessions);
    ctx.curator = curator.get();
  }

  run_floor_and_w1(ctx, options.wants("W1"));
  if (options.wants("W2")) run_w2_contended(ctx);
  for (const double rtt : plan.rtts_ms) {
    if (rtt <= 0 || !(options.wants("W1") || options.wants("W2"))) continue;
    const DelayedEnsemble delayed(options.connect, rtt);
    Context at_rtt{options, plan, reporter, delayed.connect_string(), rtt};
    std::unique_ptr<CuratorPeer> delayed_curator;
    if (curator_wanted) {
      delayed_curator =
          std::make_unique<CuratorPeer>(*curator_build, delayed.connect_string(), plan.w2_workers);
      at_rtt.curator = delayed_curator.get();
    }
    std::cerr << "bench: W1 and W2 with " << rtt << " ms of round trip added ("
              << delayed.connect_string() << ")\n";
    if (options.wants("W1")) run_floor_and_w1(at_rtt, true);
    if (options.wants("W2")) run_w2_contended(at_rtt);
  }
  if (options.wants("W3")) run_w3_many_locks(ctx);
  // The JVM waits (idle sessions) through W4, and runs W5 beside ours.
  ctx.curator = nullptr;
  if (options.wants("W4")) run_w4_znode_growth(ctx);
  ctx.curator = curator.get();
  if (options.wants("W5")) run_w5_queue_depth(ctx);
  if (options.wants("W6")) run_w6_read_write(ctx);
  if (options.wants("W7")) run_w7_semaphore(ctx);
  if (options.wants("W9")) {
    run_w9_failover(ctx);
    run_w9_kill(ctx);
  }
  if (options.wants("W10")) {
    run_w10_counter(ctx);
    run_w10_cache(ctx);
  }
  ctx.curator = nullptr;
  curator.reset();
  if (curator_wanted) remove_curator_directories(*ctx.connect(), options.root);
  // Last, and with no JVM beside it: its 10,000 threads raise the peak RSS
  // the table ends with.
  if (options.wants("W8")) run_w8_many_waiters(ctx);

  std::string table = reporter.table();
  table += "\n" + durability_line(counters_before, read_server_counters(options.connect)) + "\n";
  table += "Client peak RSS (getrusage): " + std::to_string(peak_rss_kib() / 1024) + " MiB\n";
  (options.json ? std::cerr : std::cout) << "\n" << table << std::flush;
  if (options.out_dir) {
    write_file(*options.out_dir + "/results.txt", table);
    write_file(*options.out_dir + "/targets.json", reporter.verdicts_json());
    for (const auto& png : write_plots(reporter.records(), *options.out_dir))
      std::cerr << "bench: wrote " << png << "\n";
  }
  if (reporter.any_check_failed()) {
    std::cerr << "bench: a correctness check FAILED (see above)\n";
    return kExitCheckFailed;
  }
  if (options.strict && reporter.any_target_missed()) {
    std::cerr << "bench: a target was missed (--strict)\n";
    return kExitCheckFailed;
  }
  return kExitOk;
}

}  // namespace

int run(const std::vector<std::string>& args) {
  Options options;
  try {
    options = parse_options(args);
  } catch (const UsageError& e) {
    std::cerr << "zkr bench: " << e.what() << "\n";
    return kExitUsage;
  }
  if (options.help) {
    std::cout << usage_text();
    return kExitOk;
  }
  try {
    return run_workloads(options);
  } catch (const std::exception& e) {
    std::cerr << "zkr bench: error: " << e.what() << "\n";
    return kExitRunFailed;
  }
}

}  // namespace zkr::bench
