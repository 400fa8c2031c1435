// W10a, counter adds: workers, each on a session of its own, add 1 to one
// DistributedAtomicLong until the adds or the time are done. Timed: each
// add() from call to return (its version conflicts and re-reads included).
// Conflicts: the retry policy is consulted once per refused conditional
// write, so a counting policy gives the version retries per add. The check:
// the servers' final value equals the adds that succeeded (an indeterminate
// add may have been applied or not; none is expected without faults).
// Curator's DistributedAtomicLong runs the same adds in the Java peer, before
// ours, with the same retry policy; its final value is read with ours.
#include <atomic>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "context.hpp"
#include "curator_peer.hpp"
#include "server_cost.hpp"
#include "stats.hpp"
#include "workloads.hpp"
#include "zkr/distributed_atomic_long.hpp"
#include "zkr/retry.hpp"

namespace zkr::bench {
namespace {

// Counts how often the counter asked whether to try again: once per
// conflict (a refused versioned write), the last one that gave up included.
class CountingRetry : public RetryPolicy {
 public:
  explicit CountingRetry(const RetryPolicy& inner) : inner_(inner) {}
  std::optional<milliseconds> next_delay(int retries_so_far, milliseconds elapsed) const override {
    asked_.fetch_add(1, std::memory_order_relaxed);
    return inner_.next_delay(retries_so_far, elapsed);
  }
  std::uint64_t asked() const noexcept { return asked_.load(); }

 private:
  const RetryPolicy& inner_;
  mutable std::atomic<std::uint64_t> asked_{0};
};

struct CounterTally {
  std::mutex mutex;
  Samples adds;                     // guarded by mutex
  std::uint64_t failed = 0;         // conflicts past the retries; guarded by mutex
  std::uint64_t indeterminate = 0;  // guarded by mutex
  std::string first_error;          // guarded by mutex
};

void counter_worker(Client& client, const std::string& path,
                    std::shared_ptr<const RetryPolicy> policy, std::uint64_t adds,
                    Clock::time_point deadline, CounterTally& tally) {
  Samples mine(adds);
  std::uint64_t failed = 0, indeterminate = 0;
  std::string error;
  try {
    DistributedAtomicLongOptions options;
    options.retry_policy = std::move(policy);
    DistributedAtomicLong counter(client, path, options);
    for (std::uint64_t i = 0; i < adds && Clock::now() < deadline; ++i) {
      const auto t0 = Clock::now();
      const auto r = counter.increment();
      if (r.succeeded()) {
        mine.add(ms_between(t0, Clock::now()));
      } else if (r.indeterminate()) {
        ++indeterminate;
      } else {
        ++failed;
      }
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  std::lock_guard lock(tally.mutex);
  tally.adds.merge(mine);
  tally.failed += failed;
  tally.indeterminate += indeterminate;
  if (tally.first_error.empty()) tally.first_error = error;
}

// The counter holds data, which the next run's check of its root would take
// for someone else's: gone once read. Its parents are containers.
void remove_counter(Client& client, const std::string& path) {
  const auto removed = client.keeper()->try_remove(path);
  if (!removed.ok() && removed.error() != Errc::no_node)
    throw RunError("W10: cannot remove " + path + ": " + std::string(errc_name(removed.error())));
}

std::string label_for(unsigned workers) {
  return std::to_string(workers) + " sessions, one counter";
}

// The check shared by both sides: the value the servers hold is the adds
// that succeeded, plus at most the indeterminate ones.
void judge_counter(Context& ctx, const std::string& who, std::int64_t value,
                   std::uint64_t succeeded, std::uint64_t indeterminate) {
  const auto low = static_cast<std::int64_t>(succeeded);
  const auto high = static_cast<std::int64_t>(succeeded + indeterminate);
  ctx.reporter.verdict(
      {"W10 " + who + ": final value = adds that succeeded", true, value >= low && value <= high,
       true,
       strprintf("value %lld, %llu succeeded, %llu indeterminate", static_cast<long long>(value),
                 static_cast<unsigned long long>(succeeded),
                 static_cast<unsigned long long>(indeterminate))});
}

Record curator_counter(Context& ctx, Client& reader) {
  const unsigned workers = ctx.plan.w10_workers;
  const std::string path = ctx.path("curator-w10/counter");
  CostMeter cost(ctx.options.connect);
  cost.begin();
  const auto c = ctx.curator->w10_counter(path, workers, ctx.plan.w10_adds_per_worker,
                                          ctx.plan.w10_retries, ctx.plan.w10_duration);
  cost.end(c.succeeded);
  Samples adds(c.adds_ms.size());
  for (const double ms : c.adds_ms) adds.add(ms);
  Record r;
  r.impl = "curator";
  r.workload = "W10";
  r.label = label_for(workers);
  r.params["workers"] = workers;
  r.params["recipe"] = "Curator 5.4 DistributedAtomicLong";
  r.params["retry"] = strprintf("RetryNTimes(%u, 0 ms)", ctx.plan.w10_retries);
  r.ops = c.succeeded;
  r.seconds = c.seconds;
  r.latency = adds.percentiles();
  r.requests_per_op = cost.requests_per_op();
  r.writes_per_op = cost.writes_per_op();
  r.extra["failed"] = c.failed;
  const double conflicts =
      c.succeeded > 0 ? static_cast<double>(c.conflicts) / static_cast<double>(c.succeeded) : 0.0;
  r.extra["conflicts_per_op"] = conflicts;
  const std::int64_t value = DistributedAtomicLong(reader, path).get();
  remove_counter(reader, path);
  r.extra["final_value"] = value;
  r.note = strprintf("latency = increment() (Java); %.2f conflicts/add", conflicts);
  judge_counter(ctx, "Curator", value, c.succeeded, 0);
  return r;
}

}  // namespace

void run_w10_counter(Context& ctx) {
  const unsigned workers = ctx.plan.w10_workers;
  std::vector<std::unique_ptr<Client>> clients;
  for (unsigned i = 0; i < workers; ++i) clients.push_back(ctx.connect());

  std::optional<double> curator_rate;
  if (ctx.curator) {
    std::cerr << "bench: W10 counter adds, Curator's DistributedAtomicLong\n";
    Record c = curator_counter(ctx, *clients[0]);
    if (c.seconds > 0 && c.ops > 0) curator_rate = c.ops_per_sec();
    ctx.reporter.add(std::move(c));
  }

  const std::string path = ctx.path("w10/counter");
  std::cerr << "bench: W10 counter adds, " << workers << " sessions on one counter\n";
  const RetryNTimes base(static_cast<int>(ctx.plan.w10_retries), milliseconds(0));
  const auto counting = std::make_shared<CountingRetry>(base);
  CounterTally tally;
  const auto start = Clock::now();
  const auto deadline = start + ctx.plan.w10_duration;
  CostMeter cost(ctx.options.connect);
  cost.begin();
  {
    std::vector<std::jthread> threads;
    for (unsigned i = 0; i < workers; ++i)
      threads.emplace_back([&, i] {
        counter_worker(*clients[i], path, counting, ctx.plan.w10_adds_per_worker, deadline, tally);
      });
  }
  const double seconds = seconds_since(start);
  const std::uint64_t succeeded = tally.adds.size();
  cost.end(succeeded);
  if (!tally.first_error.empty()) throw RunError("W10: " + tally.first_error);
  const std::int64_t value = DistributedAtomicLong(*clients[0], path).get();
  remove_counter(*clients[0], path);

  Record r;
  r.workload = "W10";
  r.label = label_for(workers);
  r.params["workers"] = workers;
  r.params["recipe"] = "DistributedAtomicLong";
  r.params["retry"] = strprintf("RetryNTimes(%u, 0 ms)", ctx.plan.w10_retries);
  r.ops = succeeded;
  r.seconds = seconds;
  r.latency = tally.adds.percentiles();
  r.requests_per_op = cost.requests_per_op();
  r.writes_per_op = cost.writes_per_op();
  r.extra["failed"] = tally.failed;
  r.extra["indeterminate"] = tally.indeterminate;
  const double conflicts =
      succeeded > 0 ? static_cast<double>(counting->asked()) / static_cast<double>(succeeded) : 0.0;
  r.extra["conflicts_per_op"] = conflicts;
  r.extra["final_value"] = value;
  if (curator_rate && seconds > 0 && succeeded > 0)
    r.extra["x_curator_rate"] = r.ops_per_sec() / *curator_rate;
  r.note = strprintf("latency = increment(); %.2f conflicts/add", conflicts);
  ctx.reporter.add(std::move(r));
  judge_counter(ctx, "ours", value, succeeded, tally.indeterminate);
}

}  // namespace zkr::bench
