// W9, leader failover on close: participants, each on a session of its own,
// join one LeaderLatch; whoever leads waits until every participant is
// queued, then closes, and joins again at the back. Timed: from the leader's
// close() call to the next leader's await returning, each term judged by the
// TermLedger (one leader at a time, rising epochs). Curator's LeaderLatch
// runs the same rounds in the Java peer, before ours. Writes per election:
// the leader's zxid growth over the whole run (the joins of the first round
// and the last leave included) shared among the failovers.
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "context.hpp"
#include "critical_section.hpp"
#include "curator_peer.hpp"
#include "server_cost.hpp"
#include "stats.hpp"
#include "w9_terms.hpp"
#include "workloads.hpp"
#include "zkr/leader_latch.hpp"

namespace zkr::bench {
namespace {

struct FailoverShared {
  FailoverShared(std::string path_, std::size_t participants_, std::uint64_t rounds_,
                 Clock::time_point deadline_, Clock::time_point give_up_)
      : path(std::move(path_)),
        participants(participants_),
        rounds(rounds_),
        deadline(deadline_),
        give_up(give_up_) {}

  const std::string path;
  const std::size_t participants;
  const std::uint64_t rounds;        // failovers to time, at most
  const Clock::time_point deadline;  // no new round after it
  const Clock::time_point give_up;   // an await still waiting then is an error
  TermLedger terms;
  std::stop_source stop;  // the last leader ends the others' awaits
  std::mutex mutex;
  Samples failovers;        // guarded by mutex
  std::string first_error;  // guarded by mutex

  void fail(const std::string& what) {
    {
      std::lock_guard lock(mutex);
      if (first_error.empty()) first_error = what;
    }
    stop.request_stop();
  }
};

// One participant: joins, leads, closes, joins again, until the rounds or
// the time are done.
void participant(Client& client, unsigned index, FailoverShared& shared) {
  const std::string id = "w9-zkr-" + std::to_string(index);
  try {
    for (std::uint64_t joins = 0; joins < 1'000'000; ++joins) {
      LeaderLatch latch(client, shared.path, id);
      if (!latch.try_await_leadership_until(shared.give_up, shared.stop.get_token())) {
        if (!shared.stop.stop_requested()) shared.fail(id + ": no leadership within the bound");
        return;
      }
      const auto failover = shared.terms.started(latch.epoch().value_or(0), monotonic_ns());
      bool last = false;
      if (failover) {
        std::lock_guard lock(shared.mutex);
        shared.failovers.add(*failover);
        last = shared.failovers.size() >= shared.rounds;
      }
      if (last || Clock::now() >= shared.deadline) {
        shared.stop.request_stop();  // before our close: nobody else starts a term
        shared.terms.closing(monotonic_ns());
        return;  // the latch closes as it goes
      }
      // Each failover with every other participant queued behind us.
      if (!wait_for_children(*client.keeper(), shared.path, shared.participants, shared.give_up)) {
        shared.fail(id + ": the other participants did not queue");
        return;
      }
      shared.terms.closing(monotonic_ns());
      latch.close();
    }
  } catch (const std::exception& e) {
    shared.fail(id + ": " + e.what());
  }
}

// Curator's LeaderLatch, the same rounds in the Java peer.
Record curator_close(Context& ctx, std::size_t participants, const std::string& label) {
  CostMeter cost(ctx.options.connect);
  cost.begin();
  const auto c = ctx.curator->w9_close(ctx.path("curator-w9/latch"), participants,
                                       ctx.plan.w9_rounds, ctx.plan.w9_duration);
  cost.end(c.elections);
  Samples failovers(c.failovers_ms.size());
  for (const double ms : c.failovers_ms) failovers.add(ms);
  Record r;
  r.impl = "curator";
  r.workload = "W9";
  r.label = label;
  r.params["failure"] = "close";
  r.params["participants"] = participants;
  r.params["recipe"] = "Curator 5.4 LeaderLatch";
  r.ops = c.elections;
  r.seconds = c.seconds;
  r.latency = failovers.percentiles();
  r.requests_per_op = cost.requests_per_op();
  r.writes_per_op = cost.writes_per_op();
  r.extra["violations"] = c.violations;
  r.note = "latency = close() to next term (Java)";
  ctx.reporter.verdict({"W9 Curator: one leader at a time", true, c.violations == 0, true,
                        strprintf("%llu terms began while another was held",
                                  static_cast<unsigned long long>(c.violations))});
  return r;
}

}  // namespace

void run_w9_failover(Context& ctx) {
  const std::size_t participants = ctx.plan.w9_participants;
  const std::string label = "close, " + std::to_string(participants) + " participants";
  // Curator's first, so that ours gets its ratio to it.
  std::optional<double> curator_p50;
  if (ctx.curator) {
    std::cerr << "bench: W9 failover on close, Curator's LeaderLatch\n";
    Record c = curator_close(ctx, participants, label);
    if (c.latency && c.latency->count > 0) curator_p50 = c.latency->p50_ms;
    ctx.reporter.add(std::move(c));
  }

  const std::string path = ctx.path("w9/latch");
  std::vector<std::unique_ptr<Client>> clients;
  for (std::size_t i = 0; i < participants; ++i) clients.push_back(ctx.connect());
  std::cerr << "bench: W9 failover on close, " << participants << " participants\n";

  const auto start = Clock::now();
  FailoverShared shared(path, participants, ctx.plan.w9_rounds, start + ctx.plan.w9_duration,
                        start + ctx.plan.w9_duration + std::chrono::seconds(60));
  CostMeter cost(ctx.options.connect);
  cost.begin();
  {
    std::vector<std::jthread> threads;
    for (std::size_t i = 0; i < participants; ++i)
      threads.emplace_back([&, i] { participant(*clients[i], static_cast<unsigned>(i), shared); });
  }
  const double seconds = seconds_since(start);
  const std::uint64_t elections = shared.failovers.size();
  cost.end(elections);
  if (!shared.first_error.empty()) throw RunError("W9: " + shared.first_error);

  Record r;
  r.workload = "W9";
  r.label = label;
  r.params["failure"] = "close";
  r.params["participants"] = participants;
  r.params["recipe"] = "LeaderLatch";
  r.ops = elections;
  r.seconds = seconds;
  r.latency = shared.failovers.percentiles();
  r.requests_per_op = cost.requests_per_op();
  r.writes_per_op = cost.writes_per_op();
  r.extra["terms"] = shared.terms.terms();
  r.extra["violations"] = shared.terms.violations();
  if (curator_p50 && *curator_p50 > 0 && elections > 0)
    r.extra["x_curator_p50"] = r.latency->p50_ms / *curator_p50;
  r.note = "latency = close() to next term";
  ctx.reporter.add(std::move(r));
  ctx.reporter.verdict({"W9 one leader at a time, rising epochs", true,
                        shared.terms.violations() == 0, true,
                        strprintf("%llu violations in %llu terms",
                                  static_cast<unsigned long long>(shared.terms.violations()),
                                  static_cast<unsigned long long>(shared.terms.terms()))});
}

}  // namespace zkr::bench
