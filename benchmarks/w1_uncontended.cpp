// The floor and W1: one session acquiring and releasing one lock as fast as
// it can, against the bare protocol on the C client. The two run in
// alternating slices of a second, so that both see the same machine: on a
// shared, busy machine the load drifts over tens of seconds, and running one
// after the other would compare two different moments.
#include "curator_peer.hpp"
#include "floor.hpp"
#include "progress.hpp"
#include "round_trip_bound.hpp"
#include "rss.hpp"
#include "server_cost.hpp"
#include "workloads.hpp"
#include "zkr/lock.hpp"

namespace zkr::bench {
namespace {

constexpr std::uint64_t kMaxCycles = 10'000'000;  // the duration ends it long before
constexpr auto kSlice = std::chrono::milliseconds(1000);

std::uint64_t zkr_cycles_for(InterProcessMutex& mutex, std::chrono::milliseconds duration,
                             Samples& samples) {
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

// One implementation's slices, summed.
struct UncontendedTally {
  explicit UncontendedTally(const std::string& connect) : cost(connect) {}
  Samples samples;
  CostMeter cost;
  std::uint64_t cycles = 0;
  double seconds = 0;

  // Runs one slice: slice() returns the cycles it did.
  template <class Slice>
  void run(Slice&& slice) {
    cost.begin();
    const auto t0 = Clock::now();
    const std::uint64_t done = slice();
    seconds += seconds_since(t0);
    cost.end(done);
    cycles += done;
  }

  Record record(const std::string& impl, const std::string& label, double rtt,
                const std::string& key, const std::string& value, const std::string& note) const {
    Record r;
    r.impl = impl;
    r.workload = "W1";
    r.label = label;
    r.added_rtt_ms = rtt;
    r.params["sessions"] = 1;
    r.params[key] = value;
    r.ops = cycles;
    r.seconds = seconds;
    r.latency = samples.percentiles();
    r.requests_per_op = cost.requests_per_op();
    r.writes_per_op = cost.writes_per_op();
    r.note = note;
    return r;
  }
};

// p50 of a W1 record of this run, if there is one.
std::optional<double> w1_p50(const Reporter& reporter, const std::string& impl, double rtt) {
  for (const auto& r : reporter.records())
    if (r.workload == "W1" && r.impl == impl && r.added_rtt_ms == rtt && r.latency)
      return r.latency->p50_ms;
  return std::nullopt;
}

// The bound the +1 ms target meets (round_trip_bound.hpp), said for the
// verdict; "" without the 0 ms figures.
std::string round_trip_bound_text(const Reporter& reporter, double floor_p50) {
  const auto floor_at_zero = w1_p50(reporter, "floor", 0);
  const auto ours_at_zero = w1_p50(reporter, "zkr", 0);
  if (!floor_at_zero || !ours_at_zero) return "";
  const auto bound = bench::one_round_trip_bound(*floor_at_zero, floor_p50, *ours_at_zero);
  if (!bound) return "";
  return strprintf(
      "; a cycle of one round trip can reach %.2fx at most here: the floor's p50 %.2f ms over "
      "%.2f ms, where one added round trip measures %.2f ms (the floor makes three) and our "
      "cycle with none costs %.2f ms",
      bound->ratio, floor_p50, bound->best_cycle_ms, bound->round_trip_ms, *ours_at_zero);
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
  UncontendedTally floor_tally(ctx.options.connect), zkr_tally(ctx.options.connect),
      curator_tally(ctx.options.connect);
  CuratorPeer* curator = with_w1 ? ctx.curator : nullptr;
  const std::string curator_path = ctx.path("curator-w1/lock");
  // Unrecorded: the JVM's first second is its JIT compiler's.
  if (curator) (void)curator->w1(curator_path, kSlice);
  const auto total = ctx.plan.w1_duration;
  Progress progress(with_w1 ? "floor and W1, in alternating slices" : "floor", 0);
  for (auto done = std::chrono::milliseconds(0); done < total; done += kSlice) {
    const auto slice = std::min(kSlice, total - done);
    floor_tally.run([&] { return floor.cycle_for(slice, kMaxCycles, floor_tally.samples); });
    if (with_w1) zkr_tally.run([&] { return zkr_cycles_for(*mutex, slice, zkr_tally.samples); });
    if (curator)
      curator_tally.run([&] {
        const auto result = curator->w1(curator_path, slice);
        for (const double ms : result.latencies_ms) curator_tally.samples.add(ms);
        return result.cycles;
      });
    progress.update(floor_tally.cycles + zkr_tally.cycles);
  }

  Record f = floor_tally.record("floor", "bare C client" + at_rtt, rtt, "protocol",
                                "sync create(ephemeral_sequential), get_children, delete",
                                "create+list+delete, sync");
  const double floor_rate = f.ops_per_sec();
  const double floor_p50 = f.latency ? f.latency->p50_ms : 0;
  if (rtt == 0) ctx.reporter.set_floor(floor_rate, f.latency->p50_ms);
  ctx.reporter.add(std::move(f));
  if (!with_w1) return;

  Record r = zkr_tally.record("zkr", "one session, one key" + at_rtt, rtt, "lock",
                              "InterProcessMutex", "acquire+release");
  r.extra["peak_rss_kib"] = peak_rss_kib();
  const double rate = r.ops_per_sec();
  const auto writes = r.writes_per_op;
  ctx.reporter.add(std::move(r));
  std::optional<double> curator_rate;
  if (curator) {
    Record c = curator_tally.record("curator", "one session, one key" + at_rtt, rtt, "lock",
                                    "Curator 5.4 InterProcessMutex", "acquire+release (Java)");
    curator_rate = c.ops_per_sec();
    ctx.reporter.add(std::move(c));
  }
  if (curator_rate && rtt == 0)
    ctx.reporter.verdict(
        {"W1 uncontended cycles >= 1.3x Curator's InterProcessMutex", false,
         *curator_rate > 0 && rate >= 1.3 * *curator_rate, !ctx.options.quick,
         strprintf("%.1f cycles/s = %.2fx Curator's %.1f/s (wanted >= 1.3x)", rate,
                   *curator_rate > 0 ? rate / *curator_rate : 0.0, *curator_rate)});
  if (rtt == 1)
    ctx.reporter.verdict(
        {"W1 at 1 ms added round trip >= 2.5x the floor's rate", false,
         floor_rate > 0 && rate >= 2.5 * floor_rate, !ctx.options.quick,
         strprintf("%.1f cycles/s = %.2fx the floor's %.1f/s at +1 ms RTT (wanted >= 2.5x)", rate,
                   floor_rate > 0 ? rate / floor_rate : 0.0, floor_rate) +
             round_trip_bound_text(ctx.reporter, floor_p50)});
  if (rtt > 0) return;
  if (writes)
    ctx.reporter.verdict({"W1 writes per cycle <= 2.0 (the lock node's create and delete)", false,
                          *writes <= 2.05, !ctx.options.quick,
                          strprintf("%.2f writes per cycle (leader zxid); the floor's %.2f",
                                    *writes, floor_tally.cost.writes_per_op().value_or(0))});
  ctx.reporter.verdict({"W1 uncontended cycles >= 1.3x floor rate", false,
                        floor_rate > 0 && rate >= 1.3 * floor_rate, !ctx.options.quick,
                        strprintf("%.1f cycles/s = %.2fx the floor's %.1f/s (wanted >= 1.3x)", rate,
                                  floor_rate > 0 ? rate / floor_rate : 0.0, floor_rate)});
}

}  // namespace zkr::bench
