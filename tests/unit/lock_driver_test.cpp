#include <gtest/gtest.h>

#include <set>

#include "lock_driver.hpp"

namespace zkr::detail {
namespace {

TEST(LockDriver, ProtectedPrefixHasCuratorsShape) {
  EXPECT_EQ(protected_lock_prefix("0f8e1c2a-1111-4222-8333-444455556666"),
            "_c_0f8e1c2a-1111-4222-8333-444455556666-lock-");
}

TEST(LockDriver, GuidsAreFreshAndWellFormed) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string guid = new_guid();
    ASSERT_EQ(guid.size(), 36u) << guid;
    ASSERT_TRUE(seen.insert(guid).second) << "repeated " << guid;
  }
}

TEST(LockDriver, SequenceIsTheNumberAfterTheLastLockName) {
  EXPECT_EQ(lock_sequence("_c_abc-lock-0000000042"), 42);
  EXPECT_EQ(lock_sequence("lock-0000000007"), 7);             // unprotected (Curator without protection)
  EXPECT_EQ(lock_sequence("_c_x-lock-y-lock-0000000003"), 3);  // the last "lock-" counts
  EXPECT_EQ(lock_sequence("_c_abc-lock--2147483648"), -2147483648LL);  // overflowed counter
  EXPECT_EQ(lock_sequence("leases"), std::nullopt);
  EXPECT_EQ(lock_sequence("_c_abc-lock-"), std::nullopt);
  EXPECT_EQ(lock_sequence("_c_abc-lock-12x4567890"), std::nullopt);
  EXPECT_EQ(lock_sequence("_c_abc-lock-123"), std::nullopt);
}

TEST(LockDriver, SortsBySequenceNotByNameAndDropsForeignChildren) {
  const std::vector<std::string> children{
      "_c_zzz-lock-0000000003", "config", "_c_aaa-lock-0000000010",
      "_c_mmm-lock-0000000001", "lock-0000000002",  "readme-lock-x"};
  EXPECT_EQ(sorted_lock_nodes(children),
            (std::vector<std::string>{"_c_mmm-lock-0000000001", "lock-0000000002",
                                      "_c_zzz-lock-0000000003", "_c_aaa-lock-0000000010"}));
}

TEST(LockDriver, OrdersAsCuratorDoesEvenPastCounterOverflow) {
  // Curator compares the suffix as text: after an overflow ZooKeeper writes
  // "%010d" of a negative number, and '-' sorts before every digit. Checked
  // against Curator's own sort in curator_interop_test (SortsNegativeSequences...).
  const std::vector<std::string> children{"_c_a-lock-2147483647", "_c_b-lock--2147483648",
                                          "_c_c-lock--000000001", "_c_d-lock--2147483647"};
  EXPECT_EQ(sorted_lock_nodes(children),
            (std::vector<std::string>{"_c_c-lock--000000001", "_c_d-lock--2147483647",
                                      "_c_b-lock--2147483648", "_c_a-lock-2147483647"}));
}

TEST(LockDriver, FindsOurProtectedNodeByGuidOnly) {
  const std::vector<std::string> children{"_c_g1-lock-0000000001", "_c_g2-lock-0000000002",
                                          "_c_g2x-lock-0000000003"};
  EXPECT_EQ(find_protected_node(children, "g2"), "_c_g2-lock-0000000002");
  EXPECT_EQ(find_protected_node(children, "g3"), std::nullopt);
}

TEST(LockDriver, FirstNodeHolds) {
  const auto position = queue_position({"a-lock-0000000001", "b-lock-0000000002"}, "a-lock-0000000001");
  EXPECT_TRUE(position.found);
  EXPECT_TRUE(position.holds);
  EXPECT_TRUE(position.lower.empty());
}

TEST(LockDriver, LaterNodeWaitsForEveryNodeBeforeIt) {
  const std::vector<std::string> sorted{"a-lock-0000000001", "b-lock-0000000002",
                                        "c-lock-0000000003", "d-lock-0000000004"};
  const auto position = queue_position(sorted, "c-lock-0000000003");
  EXPECT_TRUE(position.found);
  EXPECT_FALSE(position.holds);
  EXPECT_EQ(position.lower, (std::vector<std::string>{"a-lock-0000000001", "b-lock-0000000002"}));
}

TEST(LockDriver, MissingNodeIsReportedNotHeld) {
  const auto position = queue_position({"a-lock-0000000001"}, "z-lock-0000000009");
  EXPECT_FALSE(position.found);
  EXPECT_FALSE(position.holds);
}

}  // namespace
}  // namespace zkr::detail
