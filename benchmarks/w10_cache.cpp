// W10b, cache convergence: one ChildrenCache on its own session watches a
// group; a writer session makes the member changes of w10_changes.hpp
// (ephemeral children created, their data set, deleted) one after the
// other, as fast as the replies come. Timed: from the last change's reply to
// the event after which the cache's snapshot holds the final members and
// their data. Checked: the snapshot then equals the servers' tree read
// afresh (names, data, czxid and mzxid). Cost: the servers' requests over
// the round less the writer's one per change, per change: what the cache
// sent to follow them. Curator's CuratorCache (Curator 5.4's cache; its
// PathChildrenCache is deprecated) runs the same rounds in the Java peer.
#include <algorithm>
#include <condition_variable>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "context.hpp"
#include "curator_peer.hpp"
#include "server_cost.hpp"
#include "stats.hpp"
#include "w10_changes.hpp"
#include "workloads.hpp"
#include "zkr/children_cache.hpp"
#include "zkr/cleanup.hpp"

namespace zkr::bench {
namespace {

constexpr auto kConvergeBound = std::chrono::seconds(60);

// The writer's side: the changes, each waited for; the time of the last reply.
Clock::time_point make_changes(Keeper& keeper, const std::string& group,
                               const std::vector<MemberChange>& changes) {
  for (const auto& c : changes) {
    const std::string path = group + "/" + c.name;
    switch (c.kind) {
      case MemberChange::Kind::create: keeper.create(path, c.data, CreateMode::ephemeral); break;
      case MemberChange::Kind::set: keeper.set(path, c.data); break;
      case MemberChange::Kind::remove: keeper.remove(path); break;
    }
  }
  return Clock::now();
}

std::map<std::string, std::string> names_and_data(const ChildMap& view) {
  std::map<std::string, std::string> out;
  for (const auto& [name, node] : view) out.emplace(name, node.data);
  return out;
}

// The servers' tree, read afresh, as a cache would hold it.
ChildMap read_tree(Keeper& keeper, const std::string& group) {
  ChildMap tree;
  for (const auto& name : keeper.children(group).names) {
    const auto got = keeper.get(group + "/" + name);
    tree.emplace(name, ChildNode{got.data, got.stat});
  }
  return tree;
}

struct Round {
  double converge_ms = 0;
  bool equal_to_servers = false;
};

Round our_round(Client& writer, Client& reader, const std::string& group,
                const std::vector<MemberChange>& changes, CostMeter& cost) {
  const auto target = final_members(changes);
  auto& keeper = *writer.keeper();
  // The group itself persistent (it is empty at times), its parents ours to
  // sweep: the next run's check of its root finds nothing it must refuse.
  // The parents are containers, which the servers may reap between the two
  // creates: then again, a few times.
  for (int attempt = 1;; ++attempt) {
    create_marked_parents(keeper, group);
    const auto made = keeper.try_create(group, "", CreateMode::persistent);
    if (made.ok() || made.error() == Errc::node_exists) break;
    if (made.error() != Errc::no_node || attempt == 3)
      throw RunError("W10: cannot create " + group + ": " + std::string(errc_name(made.error())));
  }

  std::mutex mutex;
  std::condition_variable cv;
  std::optional<Clock::time_point> converged_at;  // guarded by mutex
  ChildrenCache* cache_ptr = nullptr;
  ChildrenCacheOptions options;
  // snapshot() already shows the event's read when it is told.
  options.on_event = [&](const ChildEvent&) {
    const auto now = Clock::now();
    const bool equal = names_and_data(cache_ptr->snapshot()) == target;
    std::lock_guard lock(mutex);
    if (equal && !converged_at) {
      converged_at = now;
      cv.notify_all();
    }
  };
  ChildrenCache cache(reader, group, options);
  cache_ptr = &cache;
  cache.start();
  if (!cache.wait_until_initialized(std::chrono::seconds(30)))
    throw RunError("W10: the cache did not read the group within 30 s");

  cost.begin();
  const auto last_reply = make_changes(keeper, group, changes);
  bool converged = false;
  {
    std::unique_lock lock(mutex);
    converged = cv.wait_for(lock, kConvergeBound, [&] { return converged_at.has_value(); });
  }
  cost.end(changes.size());
  if (!converged) throw RunError("W10: the cache did not reach the final members within 60 s");
  Round round;
  round.converge_ms = std::max(0.0, ms_between(last_reply, *converged_at));
  round.equal_to_servers = cache.snapshot() == read_tree(keeper, group);
  cache.close();
  for (const auto& name : keeper.children(group).names) keeper.remove(group + "/" + name);
  keeper.remove(group);
  return round;
}

Record record_for(Context& ctx, const std::string& impl, const Samples& converge,
                  const CostMeter& cost, std::uint64_t changes, std::uint64_t rounds,
                  std::uint64_t unequal) {
  Record r;
  r.impl = impl;
  r.workload = "W10-cache";
  r.label = strprintf("%llu changes, %u members", static_cast<unsigned long long>(changes),
                      ctx.plan.w10_members);
  r.params["changes"] = changes;
  r.params["members"] = ctx.plan.w10_members;
  r.params["rounds"] = rounds;
  r.params["recipe"] = impl == "curator" ? "Curator 5.4 CuratorCache" : "ChildrenCache";
  r.ops = rounds;
  r.latency = converge.percentiles();
  r.requests_per_op = cost.requests_per_op();
  r.writes_per_op = cost.writes_per_op();
  // The writer sends one request per change; the rest is the cache's.
  if (const auto req = cost.requests_per_op()) r.extra["cache_requests_per_change"] = *req - 1.0;
  r.extra["unequal_to_servers"] = unequal;
  r.note = "latency = last change's reply to cache equal";
  return r;
}

}  // namespace

void run_w10_cache(Context& ctx) {
  const auto changes = member_changes(ctx.plan.w10_changes, ctx.plan.w10_members);
  const std::uint64_t rounds = ctx.plan.w10_cache_rounds;

  std::optional<double> curator_p50;
  if (ctx.curator) {
    std::cerr << "bench: W10 cache convergence, Curator's CuratorCache\n";
    Samples converge(rounds);
    CostMeter cost(ctx.options.connect);
    std::uint64_t unequal = 0;
    const auto start = Clock::now();
    for (std::uint64_t r = 0; r < rounds; ++r) {
      ctx.curator->w10_cache_start(ctx.path("curator-w10/group-" + std::to_string(r)));
      cost.begin();
      const double ms = ctx.curator->w10_cache_run(ctx.plan.w10_changes, ctx.plan.w10_members);
      cost.end(ctx.plan.w10_changes);
      converge.add(ms);
      if (!ctx.curator->w10_cache_check()) ++unequal;
    }
    Record rec = record_for(ctx, "curator", converge, cost, ctx.plan.w10_changes, rounds, unequal);
    rec.seconds = seconds_since(start);
    rec.note += " (Java)";
    if (rec.latency->count > 0) curator_p50 = rec.latency->p50_ms;
    ctx.reporter.add(std::move(rec));
    ctx.reporter.verdict(
        {"W10 Curator: the cache equals the servers' tree", true, unequal == 0, true,
         strprintf("%llu of %llu rounds unequal", static_cast<unsigned long long>(unequal),
                   static_cast<unsigned long long>(rounds))});
  }

  std::cerr << "bench: W10 cache convergence, " << changes.size() << " member changes\n";
  const auto writer = ctx.connect();
  const auto reader = ctx.connect();
  Samples converge(rounds);
  CostMeter cost(ctx.options.connect);
  std::uint64_t unequal = 0;
  const auto start = Clock::now();
  for (std::uint64_t r = 0; r < rounds; ++r) {
    const Round round =
        our_round(*writer, *reader, ctx.path("w10/group-" + std::to_string(r)), changes, cost);
    converge.add(round.converge_ms);
    if (!round.equal_to_servers) ++unequal;
  }
  Record rec = record_for(ctx, "zkr", converge, cost, ctx.plan.w10_changes, rounds, unequal);
  rec.seconds = seconds_since(start);
  if (curator_p50 && *curator_p50 > 0 && rec.latency->count > 0)
    rec.extra["x_curator_p50"] = rec.latency->p50_ms / *curator_p50;
  ctx.reporter.add(std::move(rec));
  ctx.reporter.verdict(
      {"W10 ours: the cache equals the servers' tree", true, unequal == 0, true,
       strprintf("%llu of %llu rounds unequal", static_cast<unsigned long long>(unequal),
                 static_cast<unsigned long long>(rounds))});
}

}  // namespace zkr::bench
