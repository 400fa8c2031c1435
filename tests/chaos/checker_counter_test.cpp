// The counter rule (check_counter_history) on hand-written participants'
// records and final values: a history that adds up passes, one that applied
// an add twice is caught, an indeterminate outcome or a process killed in a
// call may have taken effect or not, and a refused swap is a read. No server.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "checker.hpp"

namespace zkr::chaos {
namespace {

const std::string kCounter = std::string(kCounterRoot) + "/c0";

Event call_at(std::int64_t t, std::string name, std::map<std::string, std::string> fields) {
  Event e;
  e.at = t;
  e.name = std::move(name);
  e.fields = std::move(fields);
  return e;
}

// Operation `id` invoked at `from`, with its outcome at `to` (none if to is 0).
std::vector<Event> call(const std::string& id, const std::string& kind, std::int64_t operand,
                        std::int64_t from, std::int64_t to, const std::string& outcome,
                        const std::string& value = "", std::int64_t expected = 0) {
  std::vector<Event> events{call_at(from, "cinv",
                                    {{"id", id},
                                     {"kind", kind},
                                     {"operand", std::to_string(operand)},
                                     {"expected", std::to_string(expected)},
                                     {"invoked", std::to_string(from)}})};
  if (to != 0) {
    std::map<std::string, std::string> fields{{"id", id}, {"outcome", outcome}};
    if (!value.empty()) fields["value"] = value;
    events.push_back(call_at(to, "cop", fields));
  }
  return events;
}

CheckResult judge_counter(std::vector<std::vector<Event>> calls, std::int64_t final_value) {
  RunInput input;
  std::vector<Event> events;
  for (auto& c : calls) events.insert(events.end(), c.begin(), c.end());
  std::sort(events.begin(), events.end(), [](auto& a, auto& b) { return a.at < b.at; });
  input.workers.emplace_back("worker-0-0.log", std::move(events));
  input.final_state.long_counters[kCounter] = final_value;
  CheckResult result;
  check_counter_history(input, result);
  return result;
}

TEST(ChaosCounter, AHistoryThatAddsUpPasses) {
  const auto r = judge_counter({call("1.0.C.0", "add", 2, 10, 20, "succeeded", "2"),
                                call("1.0.C.1", "read", 0, 30, 40, "succeeded", "2"),
                                call("1.0.C.2", "cas", 5, 50, 60, "succeeded", "5", 2)},
                               5);
  EXPECT_EQ(r.violation_count(), 0) << (r.examples.empty() ? "" : r.examples[0]);
  EXPECT_TRUE(r.problems.empty());
  EXPECT_EQ(r.counter_ops, 3);
  EXPECT_EQ(r.counter_indeterminate, 0);
}

TEST(ChaosCounter, AnAddAppliedTwiceIsCaught) {
  // One add of 1 said succeeded, and the servers hold 2: a blind retry.
  const auto r = judge_counter({call("1.0.C.0", "add", 1, 10, 20, "succeeded", "1")}, 2);
  EXPECT_EQ(r.violations.count("counter_not_linearizable"), 1u);
  ASSERT_FALSE(r.examples.empty());
  EXPECT_NE(r.examples[0].find(kCounter), std::string::npos) << r.examples[0];
}

TEST(ChaosCounter, AnIndeterminateAddOrAKilledCallMayHaveTakenEffectOrNot) {
  for (const std::int64_t final_value : {1, 2, 3, 4}) {
    const auto r = judge_counter({call("1.0.C.0", "add", 1, 10, 20, "succeeded", "1"),
                                  call("1.0.C.1", "add", 1, 30, 40, "indeterminate"),
                                  call("2.0.C.0", "add", 2, 35, 0, "")},  // killed in the call
                                 final_value);
    EXPECT_EQ(r.violation_count(), 0) << final_value;
    EXPECT_EQ(r.counter_indeterminate, 2);
  }
  // But neither twice.
  const auto r = judge_counter({call("1.0.C.0", "add", 1, 10, 20, "succeeded", "1"),
                                call("1.0.C.1", "add", 1, 30, 40, "indeterminate")},
                               3);
  EXPECT_EQ(r.violations.count("counter_not_linearizable"), 1u);
}

TEST(ChaosCounter, ARefusedAddIsLeftOutAndARefusedSwapIsARead) {
  EXPECT_EQ(judge_counter({call("1.0.C.0", "add", 1, 10, 20, "conflict")}, 0).violation_count(), 0);
  // A swap refused while the counter held what it expected did not happen.
  EXPECT_EQ(judge_counter({call("1.0.C.0", "cas", 9, 10, 20, "conflict", "", 0)}, 0)
                .violations.count("counter_not_linearizable"),
            1u);
  EXPECT_EQ(
      judge_counter({call("1.0.C.0", "cas", 9, 10, 20, "conflict", "", 4)}, 0).violation_count(),
      0);
}

TEST(ChaosCounter, NoFinalValueIsAProblemOfTheRun) {
  RunInput input;
  input.workers.emplace_back("worker-0-0.log", call("1.0.C.0", "add", 1, 10, 20, "succeeded", "1"));
  CheckResult result;
  check_counter_history(input, result);
  ASSERT_EQ(result.problems.size(), 1u);
  EXPECT_NE(result.problems[0].find("final"), std::string::npos) << result.problems[0];
}

TEST(ChaosCounter, ARunWithNoCounterOperationProvesNothing) {
  CheckResult r;
  r.late_rejected = 1;
  r.latch_terms = 3;
  r.latch_failovers = 1;
  r.member_views_converged = 1;
  auto problems = bite_problems(r, {});
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("counter"), std::string::npos);
  r.counter_ops = 10;
  EXPECT_TRUE(bite_problems(r, {}).empty());
}

}  // namespace
}  // namespace zkr::chaos
