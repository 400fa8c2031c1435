// Floor and W1: one session acquiring and releasing one lock, as fast as it can.
#include "floor.hpp"
#include "progress.hpp"
#include "rss.hpp"
#include "workloads.hpp"
#include "zkr/lock.hpp"

namespace zkr::bench {
namespace {
constexpr std::uint64_t kMaxCycles = 10'000'000;  // the duration ends it long before
}

void run_floor_workload(Context& ctx) {
  const auto floor = run_floor(ctx.options.connect, ctx.options.root, ctx.plan.floor_duration, kMaxCycles);
  Record r;
  r.impl = "floor";
  r.workload = "W1";
  r.label = "bare C client";
  r.params.add("sessions", 1).add("protocol", "sync create(ephemeral_sequential), get_children, delete");
  r.ops = floor.cycles;
  r.seconds = floor.seconds;
  r.latency = floor.cycle_ms.percentiles();
  r.note = "create+list+delete, sync";
  ctx.reporter.set_floor(r.ops_per_sec(), r.latency->p50_ms);
  ctx.reporter.add(std::move(r));
}

void run_w1_uncontended(Context& ctx) {
  auto client = ctx.connect();
  InterProcessMutex mutex(*client, ctx.path("w1/lock"));
  Samples cycles;
  Progress progress("W1 cycles", 0);
  std::uint64_t n = 0;
  const auto start = Clock::now();
  const auto deadline = start + ctx.plan.w1_duration;
  for (; n < kMaxCycles; ++n) {
    const auto t0 = Clock::now();
    if (t0 >= deadline) break;
    mutex.acquire();
    mutex.release();
    cycles.add(ms_between(t0, Clock::now()));
    progress.update(n);
  }
  Record r;
  r.workload = "W1";
  r.label = "one session, one key";
  r.params.add("sessions", 1).add("lock", "InterProcessMutex");
  r.ops = n;
  r.seconds = seconds_since(start);
  r.latency = cycles.percentiles();
  r.extra.add("peak_rss_kib", peak_rss_kib());
  r.note = "acquire+release";
  const double rate = r.ops_per_sec();
  double floor_rate = 0;
  for (const auto& rec : ctx.reporter.records())
    if (rec.impl == "floor") floor_rate = rec.ops_per_sec();
  ctx.reporter.add(std::move(r));

  const auto detail = strprintf("%.1f cycles/s = %.2fx the floor's %.1f/s (wanted >= 1.3x)", rate,
                                floor_rate > 0 ? rate / floor_rate : 0.0, floor_rate);
  ctx.reporter.verdict({"W1 uncontended cycles >= 1.3x floor rate", false,
                        floor_rate > 0 && rate >= 1.3 * floor_rate, !ctx.options.quick, detail});
}

}  // namespace zkr::bench
