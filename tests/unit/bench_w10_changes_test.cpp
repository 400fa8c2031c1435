// W10b's member changes (benchmarks/w10_changes.hpp): each member created,
// its data set, deleted, in turn; every write's data its own; and the final
// tree as the changes leave it.
#include <gtest/gtest.h>

#include <set>

#include "w10_changes.hpp"

namespace zkr::bench {
namespace {

using Kind = MemberChange::Kind;

TEST(BenchW10Changes, EachMemberIsCreatedThenSetThenDeletedInTurn) {
  const auto changes = member_changes(7, 2);
  ASSERT_EQ(changes.size(), 7u);
  const std::vector<std::pair<Kind, std::string>> want = {
      {Kind::create, "m0"}, {Kind::create, "m1"}, {Kind::set, "m0"},   {Kind::set, "m1"},
      {Kind::remove, "m0"}, {Kind::remove, "m1"}, {Kind::create, "m0"}};
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(changes[i].kind, want[i].first) << i;
    EXPECT_EQ(changes[i].name, want[i].second) << i;
  }
  EXPECT_EQ(changes[6].data, "d6");
  EXPECT_TRUE(changes[4].data.empty());
}

TEST(BenchW10Changes, EveryWriteCarriesDataOfItsOwn) {
  const auto changes = member_changes(1000, 20);
  std::set<std::string> seen;
  std::size_t writes = 0;
  for (const auto& c : changes) {
    if (c.kind == Kind::remove) continue;
    ++writes;
    EXPECT_TRUE(seen.insert(c.data).second) << c.data;
  }
  EXPECT_GT(writes, 600u);  // two of every three changes write data
}

TEST(BenchW10Changes, TheFinalTreeIsWhatTheLastChangeOfEachMemberLeft) {
  // 1,000 changes over 20 members: 50 visits each; 50 = 3 * 16 + 2, so each
  // member ends created and set, with the data of its last visit.
  const auto final_tree = final_members(member_changes(1000, 20));
  ASSERT_EQ(final_tree.size(), 20u);
  EXPECT_EQ(final_tree.at("m0"), "d980");
  EXPECT_EQ(final_tree.at("m19"), "d999");
  // 1,001 changes: m0's 51st visit deletes it.
  const auto one_more = final_members(member_changes(1001, 20));
  EXPECT_EQ(one_more.size(), 19u);
  EXPECT_EQ(one_more.count("m0"), 0u);
  EXPECT_THROW((void)member_changes(10, 0), std::invalid_argument);
}

}  // namespace
}  // namespace zkr::bench
