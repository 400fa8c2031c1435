// The counter linearizability checker (testkit/checker/linearizability.hpp)
// on hand-written histories: each rule of a counter caught on a history that
// breaks it, and the same history without the break passing; an operation
// whose outcome is unknown allowed to have happened or not, never twice.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <stdexcept>
#include <vector>

#include "linearizability.hpp"

namespace zkr::linearizability {
namespace {

using Kind = CounterOp::Kind;

CounterOp add(std::int64_t by, std::optional<std::int64_t> result, std::int64_t from,
              std::int64_t to, const char* label = "add") {
  CounterOp op;
  op.kind = Kind::add;
  op.operand = by;
  op.value = result;
  op.invoked = from;
  op.returned = to;
  op.label = label;
  return op;
}

CounterOp read(std::int64_t value, std::int64_t from, std::int64_t to) {
  CounterOp op;
  op.kind = Kind::read;
  op.value = value;
  op.invoked = from;
  op.returned = to;
  op.label = "read";
  return op;
}

CounterOp cas(std::int64_t expected, std::int64_t next, bool swapped, std::int64_t from,
              std::int64_t to) {
  CounterOp op;
  op.kind = Kind::cas;
  op.expected = expected;
  op.operand = next;
  op.swapped = swapped;
  op.invoked = from;
  op.returned = to;
  op.label = "cas";
  return op;
}

CounterOp unknown(CounterOp op) {
  op.unknown = true;
  return op;
}

Result judge(const std::vector<CounterOp>& ops, std::int64_t initial = 0) {
  return check_counter(ops, initial).result;
}

TEST(Linearizability, SequentialAddsAndReadsInOrderPass) {
  EXPECT_EQ(judge({add(1, 1, 0, 1), add(2, 3, 2, 3), read(3, 4, 5), final_read(3, 10)}),
            Result::linearizable);
  EXPECT_EQ(judge({add(5, 12, 0, 1)}, 7), Result::linearizable);
}

TEST(Linearizability, OverlappingAddsMayTakeEffectInEitherOrder) {
  // b started after a but returned the smaller value: they overlapped.
  EXPECT_EQ(judge({add(1, 2, 0, 10, "a"), add(1, 1, 1, 5, "b"), final_read(2, 20)}),
            Result::linearizable);
  // Had b been invoked after a returned, a's 2 could not come before b's 1.
  const auto verdict = check_counter({add(1, 2, 0, 4, "a"), add(1, 1, 5, 9, "b")}, 0);
  EXPECT_EQ(verdict.result, Result::not_linearizable);
  EXPECT_NE(verdict.explanation.find("a add 1 -> 2"), std::string::npos) << verdict.explanation;
}

TEST(Linearizability, AStaleReadAfterAnAddReturnedFails) {
  EXPECT_EQ(judge({add(1, 1, 0, 1), read(0, 2, 3)}), Result::not_linearizable);
  EXPECT_EQ(judge({add(1, 1, 0, 3), read(0, 2, 4)}), Result::linearizable);  // overlapping
}

TEST(Linearizability, AnAddAppliedTwiceFails) {
  // What a blind retry after a lost reply does: the final value counts it twice.
  EXPECT_EQ(judge({add(1, 1, 0, 1), add(1, 2, 2, 3), final_read(3, 10)}), Result::not_linearizable);
}

TEST(Linearizability, AnUnknownOutcomeMayHaveHappenedOrNotButNotTwice) {
  const auto lost = unknown(add(1, std::nullopt, 0, 1, "lost reply"));
  EXPECT_EQ(judge({lost, add(1, std::nullopt, 2, 3), final_read(1, 10)}), Result::linearizable);
  EXPECT_EQ(judge({lost, add(1, std::nullopt, 2, 3), final_read(2, 10)}), Result::linearizable);
  EXPECT_EQ(judge({lost, add(1, std::nullopt, 2, 3), final_read(3, 10)}), Result::not_linearizable);
  // It may take effect late, long after its client gave up on it, but
  // never before its invocation.
  EXPECT_EQ(
      judge({read(0, 0, 1), unknown(add(5, std::nullopt, 2, 3)), read(0, 4, 5), final_read(5, 10)}),
      Result::linearizable);
  EXPECT_EQ(judge({read(5, 0, 1), unknown(add(5, std::nullopt, 2, 3))}), Result::not_linearizable);
}

TEST(Linearizability, CompareAndSetSwapsOnlyOnItsExpectedValue) {
  EXPECT_EQ(judge({add(3, 3, 0, 1), cas(3, 10, true, 2, 3), final_read(10, 9)}),
            Result::linearizable);
  EXPECT_EQ(judge({add(3, 3, 0, 1), cas(2, 10, true, 2, 3)}), Result::not_linearizable);
  // A refused swap saw another value: it is a read that the value was not 3.
  EXPECT_EQ(judge({add(3, 3, 0, 1), cas(3, 10, false, 2, 3)}), Result::not_linearizable);
  EXPECT_EQ(judge({add(3, 3, 0, 1), cas(4, 10, false, 2, 3), final_read(3, 9)}),
            Result::linearizable);
  // An unknown swap whose expected value never held did nothing.
  EXPECT_EQ(judge({unknown(cas(7, 10, false, 0, 1)), final_read(0, 9)}), Result::linearizable);
  EXPECT_EQ(judge({unknown(cas(7, 10, false, 0, 1)), final_read(10, 9)}), Result::not_linearizable);
}

TEST(Linearizability, ManyConcurrentClientsWithAKnownGoodHistoryPass) {
  // Eight clients add 1 each, 50 times, on a simulated counter that applies
  // each add at a random instant within its call: linearizable by
  // construction, with heavy overlap. Every tenth reply is lost.
  std::mt19937_64 rng(7);
  std::vector<CounterOp> ops;
  struct Pending {
    std::int64_t at;
    std::size_t op;
  };
  std::vector<Pending> effects;
  for (int client = 0; client < 8; ++client) {
    std::int64_t t = static_cast<std::int64_t>(rng() % 5);
    for (int i = 0; i < 50; ++i) {
      const std::int64_t from = t;
      const std::int64_t to = from + 1 + static_cast<std::int64_t>(rng() % 20);
      effects.push_back({from + static_cast<std::int64_t>(rng() % (to - from)), ops.size()});
      ops.push_back(add(1, std::nullopt, from, to));
      if (rng() % 10 == 0) ops.back().unknown = true;
      t = to + static_cast<std::int64_t>(rng() % 3);
    }
  }
  std::sort(effects.begin(), effects.end(), [](auto& a, auto& b) { return a.at < b.at; });
  std::int64_t value = 0;
  for (const auto& e : effects) {
    ++value;
    if (!ops[e.op].unknown) ops[e.op].value = value;
  }
  ops.push_back(final_read(value, 1'000'000));
  const auto verdict = check_counter(ops, 0);
  EXPECT_EQ(verdict.result, Result::linearizable) << verdict.explanation;
  // The same history with one result off by one is caught.
  for (auto& op : ops)
    if (op.kind == Kind::add && op.value && *op.value == 200) op.value = 150;
  EXPECT_EQ(check_counter(ops, 0).result, Result::not_linearizable);
}

TEST(Linearizability, TheSearchGivesUpAtItsBoundInsteadOfRunningOn) {
  std::vector<CounterOp> ops;
  for (int i = 0; i < 30; ++i) ops.push_back(unknown(add(1 << (i % 20), std::nullopt, 0, 1)));
  ops.push_back(final_read(-1, 10));  // no subset sums to it: the whole space is searched
  const auto verdict = check_counter(ops, 0, 1000);
  EXPECT_EQ(verdict.result, Result::gave_up);
  EXPECT_LE(verdict.steps, 1001u);
}

TEST(Linearizability, NonsenseRecordsAreRefusedByName) {
  CounterOp no_value;
  no_value.kind = Kind::read;
  no_value.label = "worker 3 op 7";
  EXPECT_THROW((void)check_counter({no_value}, 0), std::invalid_argument);
  try {
    (void)check_counter({add(1, 1, 5, 4, "worker 2 op 1")}, 0);
    ADD_FAILURE() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("worker 2 op 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace zkr::linearizability
