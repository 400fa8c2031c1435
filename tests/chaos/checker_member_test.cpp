// The membership rule (check_member_views) on hand-written records: a view
// that never agreed with a tree that stood still is caught; one that agreed,
// or that could not be judged because the tree kept moving, is not. No server.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "checker.hpp"

namespace zkr::chaos {
namespace {

Event gview(std::map<std::string, std::string> fields) {
  Event e;
  e.at = 1;
  e.name = "gview";
  e.fields = std::move(fields);
  return e;
}

CheckResult judge_members(std::vector<Event> events) {
  RunInput input;
  input.workers.emplace_back("worker-0-0.log", std::move(events));
  CheckResult result;
  check_member_views(input, result);
  return result;
}

TEST(ChaosMember, AViewThatAgreedPasses) {
  const auto r = judge_members({gview({{"converged", "1"}, {"stable", "1"}, {"ms", "3"}})});
  EXPECT_EQ(r.violation_count(), 0);
  EXPECT_EQ(r.member_views, 1);
  EXPECT_EQ(r.member_views_converged, 1);
}

TEST(ChaosMember, AViewThatDisagreedWithAStillTreeIsCaught) {
  const auto r = judge_members(
      {gview({{"converged", "0"}, {"stable", "1"}, {"ms", "8000"}, {"diff", "w3(tree)"}})});
  EXPECT_EQ(r.violations.count("member_view_diverged"), 1u);
  ASSERT_FALSE(r.examples.empty());
  EXPECT_NE(r.examples[0].find("w3(tree)"), std::string::npos) << r.examples[0];
}

TEST(ChaosMember, AViewOfAMovingTreeProvesNothing) {
  const auto r = judge_members({gview({{"converged", "0"}, {"stable", "0"}, {"ms", "8000"}})});
  EXPECT_EQ(r.violation_count(), 0);
  EXPECT_EQ(r.member_views_converged, 0);
  CheckResult bite;
  bite.late_rejected = 1;
  bite.latch_terms = 1;
  bite.latch_failovers = 1;
  bite.counter_ops = 1;
  const auto problems = bite_problems(bite, {});
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("group member"), std::string::npos);
}

}  // namespace
}  // namespace zkr::chaos
