// See counter_participant.hpp.
#include "counter_participant.hpp"

#include <exception>
#include <random>
#include <string>
#include <thread>

#include "zkr/distributed_atomic_long.hpp"

namespace zkr::chaos {
namespace {

using std::chrono::milliseconds;

// Between two operations: the counter is one of several things a worker does.
constexpr milliseconds kPauseMax{150};

std::string outcome_name(const AtomicLongResult& r) { return std::string(to_string(r.outcome)); }

}  // namespace

void run_counter_participant(const CounterParticipantConfig& config, Client& client, EventLog& log,
                             const std::atomic<bool>& stop,
                             std::chrono::steady_clock::time_point end) {
  std::mt19937_64 rng(config.seed * 3'000'017 + std::hash<std::string>{}(config.id_prefix));
  const auto pick = [&](std::uint64_t n) { return static_cast<std::int64_t>(rng() % n); };
  DistributedAtomicLong counter(client, config.path);
  std::int64_t last_seen = 0;  // what the next compare-and-set expects
  for (std::int64_t n = 0; !stop && std::chrono::steady_clock::now() < end; ++n) {
    const auto id = config.id_prefix + ".C." + std::to_string(n);
    const auto roll = pick(100);
    const std::string kind = roll < 55 ? "add" : roll < 80 ? "read" : "cas";
    const std::int64_t operand = kind == "add" ? 1 + pick(3) : last_seen + 1 + pick(5);
    const std::int64_t expected = last_seen;
    log.write("cinv", {{"id", id},
                       {"kind", kind},
                       {"operand", std::to_string(operand)},
                       {"expected", std::to_string(expected)},
                       {"invoked", std::to_string(monotonic_ns())}});
    try {
      if (kind == "read") {
        // Synced first: a plain read may lag writes other sessions saw
        // succeed (ZooKeeper's reads are not linearizable; docs/counters.md).
        client.keeper_when_connected()->sync(config.path);
        last_seen = counter.get();
        log.write("cop",
                  {{"id", id}, {"outcome", "succeeded"}, {"value", std::to_string(last_seen)}});
      } else {
        const auto r =
            kind == "add" ? counter.add(operand) : counter.compare_and_set(expected, operand);
        if (r.succeeded() && r.post) last_seen = *r.post;
        else if (r.pre) last_seen = *r.pre;
        Fields fields{{"id", id}, {"outcome", outcome_name(r)}};
        if (r.succeeded() && r.post) fields.emplace_back("value", std::to_string(*r.post));
        log.write("cop", fields);
      }
    } catch (const std::exception& e) {
      // Whether a write was sent is not known here: the checker takes it as
      // indeterminate (a read that failed says nothing).
      log.write("cop",
                {{"id", id}, {"outcome", "error"}, {"err", std::string(e.what()).substr(0, 200)}});
    }
    std::this_thread::sleep_for(milliseconds(pick(kPauseMax.count())));
  }
}

}  // namespace zkr::chaos
