// W9, leader failover on a kill: the leader's session is abandoned, not
// closed. It runs through proxies of its own (one per local server), and the
// kill cuts them (both ways, sockets kept open): from then on the servers
// hear nothing from that session, exactly as when its process is SIGKILLed
// or frozen, and only the session's expiry deletes its node. Timed: from the
// cut to a standby's await returning, also as a ratio to the session
// timeout. Each round: a new victim session joins and leads, the standbys
// (sessions of their own, direct) queue behind it, the cut, the standby's
// term, the link mended and the victim's session closed (it finds it
// expired). Curator's LeaderLatch runs the same rounds first. Writes per
// round: the victim's session opened and expired, its join and the standbys'
// joins and leaves.
#include <atomic>
#include <iostream>
#include <memory>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "context.hpp"
#include "critical_section.hpp"
#include "curator_peer.hpp"
#include "mntr.hpp"
#include "report.hpp"
#include "server_cost.hpp"
#include "stats.hpp"
#include "tcp_proxy.hpp"
#include "workloads.hpp"
#include "zkr/leader_latch.hpp"

namespace zkr::bench {
namespace {

// The victim's way to the servers, cut and mended by the bench.
class Link {
 public:
  explicit Link(const std::string& connect) {
    for (const auto port : local_ports(connect)) {
      proxies_.push_back(std::make_unique<chaos::TcpProxy>(port));
      connect_ += (connect_.empty() ? "" : ",") + std::string("127.0.0.1:") +
                  std::to_string(proxies_.back()->port());
    }
    if (proxies_.empty())
      throw RunError("W9's kill needs the servers on 127.0.0.1 (its proxies run here): " + connect);
  }
  const std::string& connect_string() const noexcept { return connect_; }
  void cut() {
    for (auto& p : proxies_) p->set_mode(chaos::ProxyMode::blackhole);
  }
  void mend() {
    for (auto& p : proxies_) p->set_mode(chaos::ProxyMode::forward);
  }

 private:
  std::vector<std::unique_ptr<chaos::TcpProxy>> proxies_;
  std::string connect_;
};

constexpr auto kLeadWait = std::chrono::seconds(30);

// One round of ours: the failover's milliseconds.
double kill_round(const Context& ctx, Link& link, std::vector<std::unique_ptr<Client>>& standbys,
                  const std::string& path) {
  link.mend();
  ClientOptions victim_options;
  victim_options.connect_string = link.connect_string();
  victim_options.session_timeout = ctx.plan.w9_session_timeout;
  auto victim_client = std::make_unique<Client>(victim_options);
  if (!victim_client->block_until_connected(std::chrono::seconds(15)))
    throw RunError("W9 kill: the victim did not connect through its proxies");
  auto victim = std::make_unique<LeaderLatch>(*victim_client, path, "w9-zkr-victim");
  if (!victim->try_await_leadership_for(kLeadWait))
    throw RunError("W9 kill: the victim did not lead within 30 s");

  std::stop_source stop;
  std::atomic<std::int64_t> led_ns{0};
  std::atomic<unsigned> errors{0};
  const auto give_up = Clock::now() + ctx.plan.w9_session_timeout + kLeadWait;
  std::int64_t cut_ns = 0;
  {
    std::vector<std::jthread> threads;
    for (std::size_t i = 0; i < standbys.size(); ++i)
      threads.emplace_back([&, i] {
        try {
          LeaderLatch latch(*standbys[i], path, "w9-zkr-standby-" + std::to_string(i));
          if (!latch.try_await_leadership_until(give_up, stop.get_token())) return;
          led_ns = monotonic_ns();
          stop.request_stop();  // the other standby gives up; we close on return
        } catch (const std::exception& e) {
          std::cerr << "bench: W9 kill: standby " << i << ": " << e.what() << "\n";
          errors.fetch_add(1);
          stop.request_stop();
        }
      });
    if (!wait_for_children(*standbys[0]->keeper(), path, standbys.size() + 1,
                           Clock::now() + kLeadWait)) {
      stop.request_stop();
      throw RunError("W9 kill: the standbys did not queue");
    }
    cut_ns = monotonic_ns();
    link.cut();
  }
  link.mend();
  victim.reset();  // its session is gone: nothing to delete
  victim_client.reset();
  if (errors.load() > 0 || led_ns.load() == 0)
    throw RunError("W9 kill: no standby led after the victim's session expired");
  return static_cast<double>(led_ns.load() - cut_ns) / 1e6;  // negative: led before the cut
}

// A failover below zero is a standby that led while the victim still did.
Record kill_record(Context& ctx, const std::string& impl, const std::vector<double>& failovers_ms,
                   double seconds, const CostMeter& cost) {
  Samples failovers(failovers_ms.size());
  std::uint64_t violations = 0;
  for (const double ms : failovers_ms) {
    failovers.add(ms);
    if (ms < 0) ++violations;
  }
  const double timeout_ms = static_cast<double>(ctx.plan.w9_session_timeout.count());
  Record r;
  r.impl = impl;
  r.workload = "W9";
  r.label = "kill, session " + std::to_string(ctx.plan.w9_session_timeout.count()) + " ms";
  r.params["failure"] = "kill (the leader's link cut; its session expires)";
  r.params["participants"] = ctx.plan.w9_participants;
  r.params["session_timeout_ms"] = ctx.plan.w9_session_timeout.count();
  r.params["recipe"] = impl == "curator" ? "Curator 5.4 LeaderLatch" : "LeaderLatch";
  r.ops = failovers.size();
  r.seconds = seconds;
  r.latency = failovers.percentiles();
  r.requests_per_op = cost.requests_per_op();
  r.writes_per_op = cost.writes_per_op();
  r.extra["p50_x_session_timeout"] = r.latency->p50_ms / timeout_ms;
  r.extra["p99_x_session_timeout"] = r.latency->p99_ms / timeout_ms;
  r.extra["violations"] = violations;
  r.note = "latency = cut to next term";
  ctx.reporter.verdict({"W9 kill" + std::string(impl == "curator" ? " Curator" : "") +
                            ": no standby led before the leader's session was cut",
                        true, violations == 0, true,
                        strprintf("%llu of %zu rounds", static_cast<unsigned long long>(violations),
                                  failovers_ms.size())});
  return r;
}

}  // namespace

void run_w9_kill(Context& ctx) {
  const std::string connect = ctx.options.connect;
  // The cut needs proxies here, in front of the servers: skipped, not
  // failed, against a remote ensemble, so that a run of every workload goes on.
  if (local_ports(connect).empty()) {
    std::cerr << "bench: W9 kill skipped: it needs the servers on 127.0.0.1\n";
    return;
  }
  Link link(connect);
  const std::size_t standbys_n = ctx.plan.w9_participants - 1;
  if (ctx.curator) {
    std::cerr << "bench: W9 failover on a kill, Curator's LeaderLatch\n";
    std::vector<double> failovers;
    CostMeter cost(connect);
    cost.begin();
    const auto start = Clock::now();
    for (std::uint64_t round = 0; round < ctx.plan.w9_kill_rounds; ++round) {
      link.mend();
      ctx.curator->w9_victim(link.connect_string(), ctx.path("curator-w9-kill/latch"),
                             ctx.plan.w9_session_timeout, ctx.plan.w9_participants);
      const std::int64_t cut_ns = monotonic_ns();
      link.cut();
      const std::int64_t led_ns =
          ctx.curator->w9_standby_wait(std::chrono::duration_cast<std::chrono::milliseconds>(
              ctx.plan.w9_session_timeout + kLeadWait));
      link.mend();
      ctx.curator->w9_victim_close();
      failovers.push_back(static_cast<double>(led_ns - cut_ns) / 1e6);
    }
    const double seconds = seconds_since(start);
    cost.end(failovers.size());
    ctx.reporter.add(kill_record(ctx, "curator", failovers, seconds, cost));
  }
  std::cerr << "bench: W9 failover on a kill, " << ctx.plan.w9_participants << " participants\n";
  std::vector<std::unique_ptr<Client>> standbys;
  for (std::size_t i = 0; i < standbys_n; ++i) standbys.push_back(ctx.connect());
  std::vector<double> failovers;
  CostMeter cost(connect);
  cost.begin();
  const auto start = Clock::now();
  for (std::uint64_t round = 0; round < ctx.plan.w9_kill_rounds; ++round)
    failovers.push_back(kill_round(ctx, link, standbys, ctx.path("w9-kill/latch")));
  const double seconds = seconds_since(start);
  cost.end(failovers.size());
  ctx.reporter.add(kill_record(ctx, "zkr", failovers, seconds, cost));
}

}  // namespace zkr::bench
