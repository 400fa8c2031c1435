// The floor and W1: one session acquiring and releasing one lock as fast as
// it can, against the bare protocol on the C client. The two run in
// alternating slices of a second, so that both see the same machine: on a
// shared, busy machine the load drifts over tens of seconds, and running one
// after the other would compare two different moments.
#include "curator_peer.hpp"
#include "floor.hpp"
#include "progress.hpp"
#include "rss.hpp"
#include "server_cost.hpp"
#include "workloads.hpp"
#include "zkr/lock.hpp"

namespace zkr::bench {
namespace {

constexpr std::uint64_t kMaxCycles = 10'000'000;  // the duration ends it long before
constexpr auto kSlice = std::chrono::milliseconds(1000);

std::uint64_t zkr_cycles_for(InterProcessMutex& mutex, std::chrono::milliseconds duration, Samples& samples) {
  const auto deadline = Clock::now() + duration;
  std::uint64_t n = 0;
  for (; n < kMaxCycles; ++n) {
    const auto t0 = Clock::now();
    if (t0 >= deadline) break;
    mutex.acquire();
    mutex.release();
    samples.add(ms_between(t0, Clock::now()));
  }
  return n;
}

}  // namespace

void run_floor_and_w1(Context& ctx, bool with_w1) {
  Floor floor(ctx.session_connect(), ctx.options.root);
  const double rtt = ctx.added_rtt_ms;
  const std::string at_rtt = rtt > 0 ? strprintf(", +%g ms RTT", rtt) : "";
  std::unique_ptr<Client> client;
  std::unique_ptr<InterProcessMutex> mutex;
  if (with_w1) {
    client = ctx.connect();
    mutex = std::make_unique<InterProcessMutex>(*client, ctx.path("w1/lock"));
  }
  Samples floor_samples, zkr_samples, curator_samples;
  CostMeter floor_cost(ctx.options.connect), zkr_cost(ctx.options.connect), curator_cost(ctx.options.connect);
  std::uint64_t floor_cycles = 0, zkr_cycles = 0, curator_cycles = 0;
  double floor_seconds = 0, zkr_seconds = 0, curator_seconds = 0;
  CuratorPeer* curator = with_w1 ? ctx.curator : nullptr;
  const std::string curator_path = ctx.path("curator-w1/lock");
  // Unrecorded: the JVM's first second is its JIT compiler's.
  if (curator) (void)curator->w1(curator_path, kSlice);
  const auto total = ctx.plan.w1_duration;
  Progress progress(with_w1 ? "floor and W1, in alternating slices" : "floor", 0);
  for (auto done = std::chrono::milliseconds(0); done < total; done += kSlice) {
    const auto slice = std::min(kSlice, total - done);
    floor_cost.begin();
    auto t0 = Clock::now();
    const auto floor_done = floor.cycle_for(slice, kMaxCycles, floor_samples);
    floor_seconds += seconds_since(t0);
    floor_cost.end(floor_done);
    floor_cycles += floor_done;
    if (with_w1) {
      zkr_cost.begin();
      t0 = Clock::now();
      const auto zkr_done = zkr_cycles_for(*mutex, slice, zkr_samples);
      zkr_seconds += seconds_since(t0);
      zkr_cost.end(zkr_done);
      zkr_cycles += zkr_done;
    }
    if (curator) {
      curator_cost.begin();
      t0 = Clock::now();
      const auto result = curator->w1(curator_path, slice);
      curator_seconds += seconds_since(t0);
      curator_cost.end(result.cycles);
      curator_cycles += result.cycles;
      for (const double ms : result.latencies_ms) curator_samples.add(ms);
    }
    progress.update(floor_cycles + zkr_cycles);
  }

  Record f;
  f.impl = "floor";
  f.workload = "W1";
  f.label = "bare C client" + at_rtt;
  f.added_rtt_ms = rtt;
  f.params.add("sessions", 1).add("protocol", "sync create(ephemeral_sequential), get_children, delete");
  f.ops = floor_cycles;
  f.seconds = floor_seconds;
  f.latency = floor_samples.percentiles();
  f.requests_per_op = floor_cost.requests_per_op();
  f.writes_per_op = floor_cost.writes_per_op();
  f.note = "create+list+delete, sync";
  const double floor_rate = f.ops_per_sec();
  if (rtt == 0) ctx.reporter.set_floor(floor_rate, f.latency->p50_ms);
  ctx.reporter.add(std::move(f));
  if (!with_w1) return;

  Record r;
  r.workload = "W1";
  r.label = "one session, one key" + at_rtt;
  r.added_rtt_ms = rtt;
  r.params.add("sessions", 1).add("lock", "InterProcessMutex");
  r.ops = zkr_cycles;
  r.seconds = zkr_seconds;
  r.latency = zkr_samples.percentiles();
  r.extra.add("peak_rss_kib", peak_rss_kib());
  r.requests_per_op = zkr_cost.requests_per_op();
  r.writes_per_op = zkr_cost.writes_per_op();
  r.note = "acquire+release";
  const double rate = r.ops_per_sec();
  const auto writes = r.writes_per_op;
  ctx.reporter.add(std::move(r));
  std::optional<double> curator_rate;
  if (curator) {
    Record c;
    c.impl = "curator";
    c.workload = "W1";
    c.label = "one session, one key" + at_rtt;
    c.added_rtt_ms = rtt;
    c.params.add("sessions", 1).add("lock", "Curator 5.4 InterProcessMutex");
    c.ops = curator_cycles;
    c.seconds = curator_seconds;
    c.latency = curator_samples.percentiles();
    c.requests_per_op = curator_cost.requests_per_op();
    c.writes_per_op = curator_cost.writes_per_op();
    c.note = "acquire+release (Java)";
    curator_rate = c.ops_per_sec();
    ctx.reporter.add(std::move(c));
  }
  if (curator_rate && rtt == 0)
    ctx.reporter.verdict({"W1 uncontended cycles >= 1.3x Curator's InterProcessMutex", false,
                          *curator_rate > 0 && rate >= 1.3 * *curator_rate, !ctx.options.quick,
                          strprintf("%.1f cycles/s = %.2fx Curator's %.1f/s (wanted >= 1.3x)", rate,
                                    *curator_rate > 0 ? rate / *curator_rate : 0.0, *curator_rate)});
  if (rtt == 1)
    ctx.reporter.verdict({"W1 at 1 ms added round trip >= 2.5x the floor's rate", false,
                          floor_rate > 0 && rate >= 2.5 * floor_rate, !ctx.options.quick,
                          strprintf("%.1f cycles/s = %.2fx the floor's %.1f/s at +1 ms RTT (wanted >= 2.5x)", rate,
                                    floor_rate > 0 ? rate / floor_rate : 0.0, floor_rate)});
  if (rtt > 0) return;
  if (writes)
    ctx.reporter.verdict({"W1 writes per cycle <= 2.0 (the lock node's create and delete)", false,
                          *writes <= 2.05, !ctx.options.quick,
                          strprintf("%.2f writes per cycle (leader zxid); the floor's %.2f", *writes,
                                    floor_cost.writes_per_op().value_or(0))});
  ctx.reporter.verdict({"W1 uncontended cycles >= 1.3x floor rate", false,
                        floor_rate > 0 && rate >= 1.3 * floor_rate, !ctx.options.quick,
                        strprintf("%.1f cycles/s = %.2fx the floor's %.1f/s (wanted >= 1.3x)", rate,
                                  floor_rate > 0 ? rate / floor_rate : 0.0, floor_rate)});
}

}  // namespace zkr::bench
