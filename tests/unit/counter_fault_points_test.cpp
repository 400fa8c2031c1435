// The counters' writes with a fault at every request they send: the reply
// lost after the server applied it, or the request failed before it left.
// Whatever the fault, the server applies the change at most once, and a lost
// reply to the write itself is answered `indeterminate` (or the change is
// proved unapplied and made once). Each script is first run without faults
// to count its requests; then once per request and kind of fault.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "counter_write.hpp"
#include "support/fake_keeper.hpp"
#include "support/fault_keeper.hpp"
#include "zkr/distributed_atomic_long.hpp"
#include "zkr/shared_count.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;

const std::string kPath = "/counters/c";
constexpr auto kWait = 10s;

// One fresh ensemble and Client per case.
struct Rig {
  test::FakeEnsemble ensemble;
  std::shared_ptr<test::Faults> faults = std::make_shared<test::Faults>();
  std::shared_ptr<RecordingSleeper> sleeper = std::make_shared<RecordingSleeper>();
  std::unique_ptr<Client> client;
  std::shared_ptr<Keeper> raw;

  Rig() {
    ClientOptions options;
    options.connect_string = "127.0.0.1:2181";
    options.session_timeout = 4s;
    options.keeper_factory = test::with_faults(ensemble.factory(), faults);
    options.retry_policy = std::make_shared<RetryNTimes>(5, 10ms);
    options.sleeper = sleeper;
    client = std::make_unique<Client>(options);
    EXPECT_TRUE(client->block_until_connected(kWait));
    raw = ensemble.connect();
  }
};

enum class Fault { lose_reply, fail_before_send };
const char* name(Fault f) { return f == Fault::lose_reply ? "lost reply" : "failed before send"; }

// What a script did: the outcome, and the node's value and version before and after.
struct Run {
  std::optional<CounterOutcome> outcome;  // nullopt: it threw (nothing applied, by contract)
  std::string error;
  std::int64_t before = 0;
  std::int64_t after = 0;
  std::int64_t applied_value = 0;   // the value if the change was applied once
  int writes = 0;                   // data writes the server saw (version delta, or 1 for a create)
  std::vector<test::OpKind> kinds;  // of the script's requests, in order
};

struct Script {
  std::string name;
  bool node_exists;    // the node is there before (else its parent is missing too)
  std::int64_t start;  // its value
  // Runs the operation on rig.client; returns its outcome.
  std::function<CounterOutcome(Rig&)> op;
  std::int64_t applied_value;  // the node's value if the change was applied
  bool int32 = false;
  // Another writer sets the node to 100 just before the script's second
  // request (its first write, without faults): the optimistic attempt meets
  // a conflict and the promoted one takes the lock.
  bool interfered = false;
};

std::string encode(const Script& s, std::int64_t v) {
  return s.int32 ? detail::encode_int32(static_cast<std::int32_t>(v)) : detail::encode_int64(v);
}
std::int64_t decode(const Script& s, const std::string& data) {
  return s.int32 ? detail::decode_int32(kPath, data) : detail::decode_int64(kPath, data);
}

// Runs the script, with `fault` at request `k` of the script (none if nullopt).
// Also returns how many requests the script sent.
Run run(const Script& s, std::optional<std::pair<std::size_t, Fault>> fault, std::size_t* sent) {
  Rig rig;
  std::optional<Stat> start_stat;
  if (s.node_exists) {
    rig.raw->create_parents(kPath);
    rig.raw->create(kPath, encode(s, s.start));
    start_stat = rig.ensemble.exists_now(kPath);
  }
  // SharedCount reads its node at start(), and its refresh thread then reads
  // it once more to set its watch, in its own time: both are set-up, not the
  // script. Waiting for the servers to be idle is not enough: the second read
  // may not be sent yet, and would then take the index of the script's set.
  // So the set-up ends once both reads (gets) were sent, then answered.
  std::unique_ptr<SharedCount> count;
  // (Here, not in the block: the tap holds them until the script's replaces it.)
  std::mutex mutex;
  std::condition_variable sent_one;
  int gets = 0;  // guarded by mutex
  if (s.int32) {
    rig.faults->tap([&](std::size_t, test::OpKind kind) {
      if (kind != test::OpKind::get) return;
      std::lock_guard lock(mutex);
      ++gets;
      sent_one.notify_all();
    });
    count = std::make_unique<SharedCount>(*rig.client, kPath, static_cast<std::int32_t>(s.start));
    count->start();
    {
      std::unique_lock lock(mutex);
      EXPECT_TRUE(sent_one.wait_for(lock, std::chrono::seconds(10), [&] { return gets >= 2; }))
          << "SharedCount's watched read never came";
    }
    EXPECT_TRUE(rig.ensemble.wait_idle());
  }
  const auto base = rig.faults->requests();
  // Shared with the tap, which may run on another thread (the Client's, the
  // SharedCount's) until it is replaced.
  struct Kinds {
    std::mutex mutex;
    std::vector<test::OpKind> seen;  // guarded by mutex
  };
  const auto kinds = std::make_shared<Kinds>();
  const bool interfere = s.interfered;
  const auto raw = rig.raw;
  rig.faults->tap([kinds, base, interfere, raw](std::size_t index, test::OpKind kind) {
    if (index < base) return;
    {
      std::lock_guard lock(kinds->mutex);
      kinds->seen.resize(std::max(kinds->seen.size(), index - base + 1), test::OpKind::any);
      kinds->seen[index - base] = kind;
    }
    if (interfere && index == base + 1) raw->set(kPath, detail::encode_int64(100));
  });
  Run r;
  if (fault) {
    auto& rule = rig.faults->on_request(base + fault->first);
    if (fault->second == Fault::lose_reply) rule.lose_reply_after_apply();
    else rule.fail(Errc::connection_loss);
  }
  r.before = s.start;
  r.applied_value = s.applied_value;
  try {
    if (s.int32) {
      const auto previous = count->get_versioned_count();
      const auto outcome =
          count->try_set_count(previous, static_cast<std::int32_t>(s.applied_value));
      r.outcome = outcome;
    } else {
      r.outcome = s.op(rig);
    }
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  if (sent) *sent = rig.faults->requests() - base;
  EXPECT_TRUE(rig.ensemble.wait_idle());
  const auto now = rig.ensemble.exists_now(kPath);
  if (now) {
    r.after = decode(s, *rig.ensemble.data_now(kPath));
    r.writes = start_stat ? now->version - start_stat->version : 1;
  } else {
    r.after = s.node_exists ? -999999 : 0;
    r.writes = 0;
  }
  if (count) count->close();
  rig.faults->tap({});
  std::lock_guard lock(kinds->mutex);
  r.kinds = kinds->seen;
  return r;
}

std::vector<Script> scripts() {
  std::vector<Script> all;
  all.push_back({"add to an existing node", true, 10,
                 [](Rig& rig) { return DistributedAtomicLong(*rig.client, kPath).add(5).outcome; },
                 15});
  all.push_back({"add making the node and its parent", false, 0,
                 [](Rig& rig) { return DistributedAtomicLong(*rig.client, kPath).add(5).outcome; },
                 5});
  all.push_back({"compare_and_set", true, 10,
                 [](Rig& rig) {
                   return DistributedAtomicLong(*rig.client, kPath).compare_and_set(10, 42).outcome;
                 },
                 42});
  all.push_back(
      {"try_set", true, 10,
       [](Rig& rig) { return DistributedAtomicLong(*rig.client, kPath).try_set(42).outcome; }, 42});
  all.push_back({"promoted add", true, 10,
                 [](Rig& rig) {
                   DistributedAtomicLongOptions options;
                   options.retry_policy = std::make_shared<RetryNTimes>(0, 1ms);
                   options.promoted = PromotedToLock{"/counters/lock", 5s, nullptr};
                   return DistributedAtomicLong(*rig.client, kPath, options).add(5).outcome;
                 },
                 105, false, true});
  all.push_back({"SharedCount try_set_count", true, 10, {}, 11, true, false});
  return all;
}

TEST(CounterFaultPoints, AChangeIsNeverAppliedTwiceWhateverRequestFails) {
  int cases = 0;
  int lost_sets = 0;
  for (const auto& s : scripts()) {
    int indeterminate = 0;
    std::size_t n = 0;
    const auto clean = run(s, std::nullopt, &n);
    ASSERT_EQ(clean.outcome, CounterOutcome::succeeded) << s.name << ": " << clean.error;
    ASSERT_EQ(clean.after, s.applied_value) << s.name;
    if (s.interfered) {
      ASSERT_EQ(clean.writes, 2) << s.name << ": the other writer did not write";
    }
    // A read and a write; SharedCount writes from the value it has read before.
    ASSERT_GE(n, s.int32 ? 1u : 2u) << s.name << " sent fewer requests than it must";
    // The promoted script's fault falls on its first value too: the "before"
    // for it is the value the other writer left.
    const std::int64_t unapplied = s.interfered ? 100 : s.start;
    for (std::size_t k = 0; k < n; ++k)
      for (const auto fault : {Fault::lose_reply, Fault::fail_before_send}) {
        ++cases;
        const auto r = run(s, std::make_pair(k, fault), nullptr);
        const std::string where = s.name + ", " + name(fault) + " at request " + std::to_string(k) +
                                  " of " + std::to_string(n);
        EXPECT_LE(r.writes, s.interfered ? 2 : 1) << where << ": written twice";
        EXPECT_TRUE(r.after == s.applied_value || r.after == unapplied)
            << where << ": the node holds " << r.after;
        if (!r.outcome) {
          EXPECT_EQ(r.after, unapplied) << where << ": threw (" << r.error << ") but applied";
          continue;
        }
        switch (*r.outcome) {
          case CounterOutcome::succeeded: EXPECT_EQ(r.after, s.applied_value) << where; break;
          case CounterOutcome::conflict:
            EXPECT_EQ(r.after, unapplied) << where << ": a conflict that was applied";
            break;
          case CounterOutcome::indeterminate: break;  // either value, checked above
        }
        // Applied can never be reported as not applied.
        if (r.after == s.applied_value) {
          EXPECT_NE(r.outcome, CounterOutcome::conflict) << where;
        }
        // The counter's own set applied and its reply lost: nothing can
        // prove which, so it must say so (with no other writer, the set
        // cannot have been refused).
        if (fault == Fault::lose_reply && !s.interfered && k < r.kinds.size() &&
            r.kinds[k] == test::OpKind::set) {
          EXPECT_EQ(r.outcome, CounterOutcome::indeterminate) << where;
          EXPECT_EQ(r.after, s.applied_value) << where;
          ++lost_sets;
        }
        if (r.outcome == CounterOutcome::indeterminate) ++indeterminate;
      }
    // The faults reached the write itself: some lost replies were applied.
    EXPECT_GT(indeterminate, 0) << s.name << ": no fault fell on a write";
    std::printf("%s: %zu requests\n", s.name.c_str(), n);
  }
  std::printf("counter fault points: %d cases, %d of them a lost reply to the counter's set\n",
              cases, lost_sets);
  EXPECT_GE(cases, 24);
  EXPECT_GE(lost_sets, 4);  // add, compare_and_set, try_set, try_set_count
}

}  // namespace
}  // namespace zkr
