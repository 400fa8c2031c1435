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
  EXPECT_EQ(lock_sequence("lock-0000000007"), 7);  // unprotected (Curator without protection)
  EXPECT_EQ(lock_sequence("_c_x-lock-y-lock-0000000003"), 3);          // the last "lock-" counts
  EXPECT_EQ(lock_sequence("_c_abc-lock--2147483648"), -2147483648LL);  // overflowed counter
  EXPECT_EQ(lock_sequence("leases"), std::nullopt);
  EXPECT_EQ(lock_sequence("_c_abc-lock-"), std::nullopt);
  EXPECT_EQ(lock_sequence("_c_abc-lock-12x4567890"), std::nullopt);
  EXPECT_EQ(lock_sequence("_c_abc-lock-123"), std::nullopt);
}

TEST(LockDriver, SortsBySequenceNotByNameAndDropsForeignChildren) {
  const std::vector<std::string> children{"_c_zzz-lock-0000000003", "config",
                                          "_c_aaa-lock-0000000010", "_c_mmm-lock-0000000001",
                                          "lock-0000000002",        "readme-lock-x"};
  EXPECT_EQ(sorted_lock_nodes(children),
            (std::vector<std::string>{"_c_mmm-lock-0000000001", "lock-0000000002",
                                      "_c_zzz-lock-0000000003", "_c_aaa-lock-0000000010"}));
}

TEST(LockDriver, OrdersByIssueAcrossTheCounterWrap) {
  // ZooKeeper's counter runs up to 2^31-1, then on from -2^31 ("%010d" of a
  // negative). Text order (Curator's) put every negative node first and the
  // newest of them first of all: it granted "-2147483648" before the holder
  // "2147483647" that was issued just before it.
  const std::vector<std::string> children{"_c_a-lock-2147483647", "_c_b-lock--2147483648",
                                          "_c_c-lock--000000001", "_c_d-lock--2147483647",
                                          "_c_e-lock-2147483646"};
  EXPECT_EQ(sorted_lock_nodes(children),
            (std::vector<std::string>{"_c_e-lock-2147483646", "_c_a-lock-2147483647",
                                      "_c_b-lock--2147483648", "_c_d-lock--2147483647",
                                      "_c_c-lock--000000001"}));
  EXPECT_EQ(unwrapped_sequence(-2147483648LL), 2147483648LL);
  EXPECT_EQ(unwrapped_sequence(-1), 4294967295LL);
  EXPECT_EQ(unwrapped_sequence(7), 7);
}

TEST(LockDriver, NamesTheFirstNodeIssuedPastTheWrapOfItsFamilyOnly) {
  EXPECT_EQ(
      wrapped_sequence_node({"_c_a-lock-2147483647", "_c_b-lock-0000000001"}, QueueFamily::mutex),
      std::nullopt);
  EXPECT_EQ(wrapped_sequence_node({"_c_a-lock-2147483647", "_c_z-lock--2147483647",
                                   "_c_b-lock--2147483648", "x-lock--1"},
                                  QueueFamily::mutex),
            "_c_b-lock--2147483648");
  // Another family's nodes are that family's business (and refused as foreign).
  EXPECT_EQ(wrapped_sequence_node({"_c_a-__READ__-2147483648"}, QueueFamily::mutex), std::nullopt);
  EXPECT_EQ(wrapped_sequence_node({"_c_a-__READ__-2147483648"}, QueueFamily::read_write),
            "_c_a-__READ__-2147483648");
}

TEST(LockDriver, FindsOurProtectedNodeByGuidOnly) {
  const std::vector<std::string> children{"_c_g1-lock-0000000001", "_c_g2-lock-0000000002",
                                          "_c_g2x-lock-0000000003"};
  EXPECT_EQ(find_protected_node(children, "g2"), "_c_g2-lock-0000000002");
  EXPECT_EQ(find_protected_node(children, "g3"), std::nullopt);
}

TEST(LockDriver, FirstNodeHolds) {
  const auto position =
      queue_position({"a-lock-0000000001", "b-lock-0000000002"}, "a-lock-0000000001");
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

// ---- The read/write queue: Curator's names, one order for both kinds.

TEST(ReadWriteDriver, NamesAndKinds) {
  EXPECT_EQ(protected_prefix("g", QueueKind::read), "_c_g-__READ__");
  EXPECT_EQ(protected_prefix("g", QueueKind::write), "_c_g-__WRIT__");
  EXPECT_EQ(protected_prefix("g", QueueKind::mutex), "_c_g-lock-");
  EXPECT_EQ(queue_kind("_c_g-__READ__0000000001"), QueueKind::read);
  EXPECT_EQ(queue_kind("__WRIT__0000000001"), QueueKind::write);
  EXPECT_EQ(queue_kind("_c_g-lock-0000000001"), QueueKind::mutex);
  EXPECT_EQ(queue_kind("_c_g-__READ__000000001"), std::nullopt);
  EXPECT_EQ(queue_kind("leases"), std::nullopt);
  EXPECT_EQ(find_protected_node({"_c_g-__READ__0000000001", "_c_g-__WRIT__0000000002"}, "g",
                                QueueKind::write),
            "_c_g-__WRIT__0000000002");
  EXPECT_EQ(find_protected_node({"_c_g-__READ__0000000001"}, "g", QueueKind::write), std::nullopt);
}

TEST(ReadWriteDriver, SortsBothKindsBySequenceAndDropsTheMutexQueue) {
  const std::vector<std::string> children{"_c_z-__READ__0000000003", "_c_a-__WRIT__0000000004",
                                          "_c_m-lock-0000000001", "_c_b-__WRIT__0000000002",
                                          "config"};
  EXPECT_EQ(sorted_queue_nodes(children, QueueFamily::read_write),
            (std::vector<std::string>{"_c_b-__WRIT__0000000002", "_c_z-__READ__0000000003",
                                      "_c_a-__WRIT__0000000004"}));
  EXPECT_EQ(sorted_queue_nodes(children, QueueFamily::mutex),
            std::vector<std::string>{"_c_m-lock-0000000001"});
}

const std::vector<std::string> kMixedQueue{"r1-__READ__0000000001", "r2-__READ__0000000002",
                                           "w3-__WRIT__0000000003", "r4-__READ__0000000004",
                                           "w5-__WRIT__0000000005", "r6-__READ__0000000006"};

TEST(ReadWriteDriver, ReadersShareUntilAWriterIsBeforeThem) {
  EXPECT_TRUE(queue_position(kMixedQueue, "r1-__READ__0000000001", QueueKind::read).holds);
  EXPECT_TRUE(queue_position(kMixedQueue, "r2-__READ__0000000002", QueueKind::read).holds);
  // Fair: a waiting writer holds back the readers that came after it. Only
  // writers keep a reader waiting, and it watches the last of them.
  const auto r6 = queue_position(kMixedQueue, "r6-__READ__0000000006", QueueKind::read);
  EXPECT_FALSE(r6.holds);
  EXPECT_EQ(r6.lower, (std::vector<std::string>{"w3-__WRIT__0000000003", "w5-__WRIT__0000000005"}));
  EXPECT_FALSE(r6.ahead_of_writers);
}

TEST(ReadWriteDriver, AWriterWaitsForEveryoneBeforeIt) {
  const auto w3 = queue_position(kMixedQueue, "w3-__WRIT__0000000003", QueueKind::write);
  EXPECT_FALSE(w3.holds);
  EXPECT_EQ(w3.lower, (std::vector<std::string>{"r1-__READ__0000000001", "r2-__READ__0000000002"}));
  EXPECT_TRUE(
      queue_position({"w3-__WRIT__0000000003"}, "w3-__WRIT__0000000003", QueueKind::write).holds);
}

// A reader whose thread holds the write lock (its node first) is granted at
// once; if other writers queue between, it must keep the write node.
TEST(ReadWriteDriver, DowngradeIsGrantedThroughTheHeldWriteNode) {
  const std::vector<std::string> queue{"w1-__WRIT__0000000001", "r2-__READ__0000000002",
                                       "r3-__READ__0000000003"};
  const auto plain =
      queue_position(queue, "r3-__READ__0000000003", QueueKind::read, "w1-__WRIT__0000000001");
  EXPECT_TRUE(plain.holds);
  EXPECT_FALSE(plain.ahead_of_writers);
  const std::vector<std::string> behind{"w1-__WRIT__0000000001", "w2-__WRIT__0000000002",
                                        "r3-__READ__0000000003"};
  const auto pinned =
      queue_position(behind, "r3-__READ__0000000003", QueueKind::read, "w1-__WRIT__0000000001");
  EXPECT_TRUE(pinned.holds);
  EXPECT_TRUE(pinned.ahead_of_writers);
  // The write node gone (lost): no exemption, the reader waits like anyone.
  const auto lost =
      queue_position({"w2-__WRIT__0000000002", "r3-__READ__0000000003"}, "r3-__READ__0000000003",
                     QueueKind::read, "w1-__WRIT__0000000001");
  EXPECT_FALSE(lost.holds);
  EXPECT_EQ(lost.lower, std::vector<std::string>{"w2-__WRIT__0000000002"});
}

}  // namespace
}  // namespace zkr::detail
