// W4: what a lock costs as the lock root fills up. At each N, the root first
// gets N other lock keys: empty key directories, as other libraries leave
// behind (containers that never had a child, which the server never reaps).
// Then: cycles on fresh keys, a listing of the root, and a sweep with
// clean_lock_root, which removes those N again. Flat and hashed layouts.
#include <set>

#include "progress.hpp"
#include "seeder.hpp"
#include "w4_verdict.hpp"
#include "workloads.hpp"
#include "zkr/cleanup.hpp"
#include "zkr/lock_factory.hpp"
#include "zkr/path.hpp"

namespace zkr::bench {
namespace {

constexpr unsigned kSeedSessions = 4;
// Above every N we make: the timed listing is meant to succeed, so that its
// cost is measured; the library's default limit is tried too, to show the
// guard refusing.
constexpr std::uint64_t kListLimit = 2'000'000;

// Requests the sweep keeps in flight. The library's default (1,000) cleaned
// 2,500-3,200 directories/s here and 10,000 cleaned 4,000-5,600/s (the sweep
// waits for each page before sending the next), which keeps a full run with
// a million keys per layout within its time.
constexpr std::size_t kCleanPage = 10'000;

std::string other_key(std::uint64_t i) { return "other-" + std::to_string(i); }

struct Layout {
  std::string name;
  LockLayout layout;
};

void seed(Context& ctx, const std::vector<Client*>& sessions, const LockFactory& factory,
          const Layout& layout, std::uint64_t n) {
  auto keeper = sessions.front()->keeper();
  const auto start = Clock::now();
  create_marked_parents(*keeper, join_path(factory.root(), "x"));
  if (!keeper->exists(factory.root())) keeper->create(factory.root(), {}, CreateMode::container);
  std::uint64_t buckets = 0;
  if (layout.layout.kind == LockLayout::Kind::hashed) {
    std::set<std::string> paths;
    for (std::uint64_t i = 0; i < n; ++i) paths.insert(factory.bucket_for(other_key(i)));
    const std::vector<std::string> bucket_paths(paths.begin(), paths.end());
    create_nodes(sessions, bucket_paths.size(), [&](std::uint64_t i) { return bucket_paths[i]; },
                 {});
    buckets = bucket_paths.size();
  }
  create_nodes(
      sessions, n, [&](std::uint64_t i) { return factory.path_for(other_key(i)); },
      {.window = 1000,
       .mode = CreateMode::container,
       .progress_label = "W4 " + layout.name + ": creating " + std::to_string(n) + " keys"});
  Record r;
  r.workload = "W4-seed";
  r.label = layout.name + " N=" + std::to_string(n);
  r.params["layout"] = layout.name;
  r.params["n"] = n;
  r.params["sessions"] = static_cast<unsigned>(sessions.size());
  r.params["window"] = 1000;
  r.ops = n + buckets;
  r.seconds = seconds_since(start);
  r.extra["creates_per_sec"] = r.ops_per_sec();
  r.extra["buckets_created"] = buckets;
  r.note = "pipelined async_create (containers)";
  ctx.reporter.add(std::move(r));
}

struct CycleResult {
  Percentiles under_n;  // on the root with N other keys
  Percentiles control;  // on an empty root, in the same seconds
};

// Cycles on fresh keys, alternately under the root with N keys and under an
// empty control root of the same layout: the load of a shared machine drifts
// over minutes, and the control, measured in the same seconds, tells the
// drift from the cost of N. A short warm-up goes first, unrecorded: right
// after a million creates the servers are still busy (snapshots, GC), and a
// few seconds' sample would measure that rather than the lock; for the same
// reason the sample has a minimum size as well as a minimum duration.
CycleResult growth_cycles(Context& ctx, const LockFactory& factory, const LockFactory& control,
                          const Layout& layout, std::uint64_t n) {
  const Plan& plan = ctx.plan;
  Samples samples(plan.w4_cycles), control_samples(plan.w4_cycles), unused;
  double seconds = 0;
  std::uint64_t i = 0;
  const auto cycle = [&](const LockFactory& f, Samples& out) {
    const auto t0 = Clock::now();
    auto mutex = f.mutex("probe-" + std::to_string(n) + "-" + std::to_string(i));
    if (!mutex->try_acquire_for(std::chrono::seconds(30)))
      throw RunError("W4: acquiring " + mutex->path() + " timed out");
    mutex->release();
    out.add(ms_between(t0, Clock::now()));
    return seconds_since(t0);
  };
  const auto warmup_end = Clock::now() + plan.w4_warmup;
  for (; i < plan.w4_cycles && Clock::now() < warmup_end; ++i) {
    (void)cycle(factory, unused);
    (void)cycle(control, unused);
  }
  const auto start = Clock::now();
  const auto enough = [&] {
    const auto now = Clock::now();
    if (now >= start + plan.w4_max_duration) return true;
    return now >= start + plan.w4_duration && samples.size() >= plan.w4_min_cycles;
  };
  for (std::uint64_t measured = 0; measured < plan.w4_cycles && !enough(); ++measured, ++i) {
    seconds += cycle(factory, samples);
    (void)cycle(control, control_samples);
  }
  Record r;
  r.workload = "W4";
  r.label = layout.name + " N=" + std::to_string(n);
  r.params["layout"] = layout.name;
  r.params["n"] = n;
  if (layout.layout.kind == LockLayout::Kind::hashed) r.params["buckets"] = layout.layout.buckets;
  r.ops = samples.size();
  r.seconds = seconds;
  r.latency = samples.percentiles();
  const CycleResult result{*r.latency, control_samples.percentiles()};
  r.extra["control_p50_ms"] = result.control.p50_ms;
  r.extra["control_p99_ms"] = result.control.p99_ms;
  r.extra["p50_over_control"] =
      result.control.p50_ms > 0 ? result.under_n.p50_ms / result.control.p50_ms : 0.0;
  r.note = strprintf("new key each; empty-root control p50 %.2f ms", result.control.p50_ms);
  ctx.reporter.add(std::move(r));
  return result;
}

// Lists the root (hashed: the root, then every bucket); returns the names
// seen and says how it went.
void list_root(Context& ctx, Client& client, const Layout& layout, const std::string& root,
               std::uint64_t n) {
  auto keeper = client.keeper();
  Record r;
  r.workload = "W4-list";
  r.label = layout.name + " N=" + std::to_string(n);
  r.params["layout"] = layout.name;
  r.params["n"] = n;
  r.params["limit"] = kListLimit;
  std::string outcome = "ok";
  std::uint64_t names = 0, listings = 0;
  const auto start = Clock::now();
  try {
    const auto top = list_children(*keeper, root, kListLimit);
    ++listings;
    names += top.names.size();
    if (layout.layout.kind == LockLayout::Kind::hashed) {
      names = 0;
      for (const auto& bucket : top.names) {
        names += list_children(*keeper, join_path(root, bucket), kListLimit).names.size();
        ++listings;
      }
    }
  } catch (const ListingTooLarge& e) {
    outcome = std::string("refused: ") + e.what();
  } catch (const KeeperError& e) {
    outcome = e.errc() == Errc::no_node ? "root absent (nothing was ever under it, or reaped)"
                                        : std::string("failed: ") + e.what();
  }
  r.ops = names;
  r.seconds = seconds_since(start);
  r.extra["outcome"] = outcome;
  r.extra["listings"] = listings;
  r.note = outcome == "ok" ? std::to_string(listings) + " listing(s)" : outcome;

  // The guard: with the library's default limit a flat root this big is
  // refused at once (one stat) instead of pulling a huge reply.
  if (layout.layout.kind == LockLayout::Kind::flat && n > kDefaultListingLimit) {
    std::string guard = "listed (no refusal)";
    const auto t0 = Clock::now();
    try {
      (void)list_children(*keeper, root, kDefaultListingLimit);
    } catch (const ListingTooLarge& e) {
      guard = std::string("refused: ") + e.what();
    }
    const double guard_ms = ms_between(t0, Clock::now());
    r.extra["default_limit"] = kDefaultListingLimit;
    r.extra["default_limit_outcome"] = guard;
    r.extra["default_limit_ms"] = guard_ms;
    r.note += strprintf("; with the default limit (%llu): %s in %.1f ms",
                        static_cast<unsigned long long>(kDefaultListingLimit),
                        guard.rfind("refused", 0) == 0 ? "refused" : "listed", guard_ms);
  }
  ctx.reporter.add(std::move(r));
}

void clean_root(Context& ctx, Client& client, const Layout& layout, const std::string& root,
                std::uint64_t n) {
  Record r;
  r.workload = "W4-clean";
  r.label = layout.name + " N=" + std::to_string(n);
  r.params["layout"] = layout.name;
  r.params["n"] = n;
  r.params["page_size"] = static_cast<std::uint64_t>(kCleanPage);
  CleanOptions options;
  options.remove_root = true;
  options.page_size = kCleanPage;
  Progress progress("W4 " + layout.name + ": cleaning N=" + std::to_string(n) + ", nodes looked at",
                    n);
  options.on_progress = [&](const WalkProgress& p) { progress.update(p.nodes); };
  const auto start = Clock::now();
  try {
    const auto report = clean_lock_root(client, root, options);
    r.ops = report.empty_directories;
    r.extra["directories_seen"] = report.directories_seen;
    r.extra["empty_directories"] = report.empty_directories;
    r.extra["not_ours"] = report.not_ours;
    r.extra["live_lock_nodes"] = report.live_lock_nodes;
    r.extra["raced"] = report.raced;
    r.note = std::to_string(report.empty_directories) + " empty directories removed";
  } catch (const KeeperError& e) {
    if (e.errc() != Errc::no_node) throw;
    r.note = "root absent: nothing to clean";
  }
  r.seconds = seconds_since(start);
  // The cleaner leaves a directory that this Client's own lazy removal has
  // pinned with a probe child at that moment: that removal finishes it, so
  // what is left must go within the W3 settling time.
  auto keeper = client.keeper();
  const auto left_at_once = paths_below(*keeper, root, 2);
  const auto settle_by = Clock::now() + ctx.plan.w3_settle;
  std::uint64_t left = 0;
  std::string first_left;
  for (const auto& path : left_at_once)
    if (!wait_gone(*keeper, path, settle_by) && left++ == 0) first_left = path;
  r.extra["left_at_once"] = static_cast<std::uint64_t>(left_at_once.size());
  r.extra["left_below_root"] = left;
  r.extra["removes_per_sec"] = r.ops_per_sec();
  if (left > 0)
    throw RunError(
        "W4: " + std::to_string(left) + " znodes left under " + root + " " +
        std::to_string(
            std::chrono::duration_cast<std::chrono::seconds>(ctx.plan.w3_settle).count()) +
        " s after cleaning (the first: " + first_left + ")");
  ctx.reporter.add(std::move(r));
}

}  // namespace

void run_w4_znode_growth(Context& ctx) {
  auto client = ctx.connect();
  std::vector<std::unique_ptr<Client>> seeders;
  std::vector<Client*> sessions;
  for (unsigned i = 0; i < kSeedSessions; ++i) {
    seeders.push_back(ctx.connect());
    sessions.push_back(seeders.back().get());
  }
  const std::uint64_t max_n = ctx.plan.w4_keys.empty() ? 0 : ctx.plan.w4_keys.back();
  const std::vector<Layout> layouts = {
      {"flat", LockLayout::flat()},
      {"hashed", LockLayout::hashed_for(std::max<std::uint64_t>(max_n, 1))}};
  for (const auto& layout : layouts) {
    const std::string root = ctx.path("w4-" + layout.name);
    const LockFactory factory(*client, root, layout.layout);
    const LockFactory control(*client, ctx.path("w4-control-" + layout.name), layout.layout);
    std::vector<W4Point> points;
    for (const std::uint64_t n : ctx.plan.w4_keys) {
      if (n > 0) seed(ctx, sessions, factory, layout, n);
      const auto result = growth_cycles(ctx, factory, control, layout, n);
      points.push_back({n, result.under_n.p50_ms, result.control.p50_ms});
      list_root(ctx, *client, layout, root, n);
      clean_root(ctx, *client, layout, root, n);
    }
    if (layout.layout.kind == LockLayout::Kind::hashed)
      ctx.reporter.verdict(
          w4_flatness_verdict(layout.name, points, !ctx.options.quick && max_n >= 1'000'000));
  }
}

}  // namespace zkr::bench
