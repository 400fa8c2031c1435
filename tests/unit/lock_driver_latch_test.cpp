// The leader latch's queue, the pure part: Curator's LeaderLatch names, their
// order, and the latch and the locks refusing each other's nodes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lock_driver.hpp"

namespace zkr::detail {
namespace {

const std::string kGuid = "0f8e1c2a-1111-4222-8333-444455556666";

TEST(LatchQueue, CuratorNamesAndOrder) {
  EXPECT_EQ(protected_prefix(kGuid, QueueKind::latch), "_c_" + kGuid + "-latch-");
  const std::string first = "_c_ffffffff-1111-4222-8333-444455556666-latch-0000000002";
  const std::string second = "_c_00000000-1111-4222-8333-444455556666-latch-0000000010";
  EXPECT_EQ(queue_kind(first), QueueKind::latch);
  EXPECT_EQ(family_of(QueueKind::latch), QueueFamily::latch);
  // By the sequence after the last "latch-", whatever the guid.
  EXPECT_EQ(sorted_queue_nodes({second, "notes", first}, QueueFamily::latch),
            (std::vector<std::string>{first, second}));
  // Lock nodes are not in a latch's queue, nor latch nodes in a lock's.
  const std::string lock = "_c_" + kGuid + "-lock-0000000001";
  EXPECT_EQ(sorted_queue_nodes({lock, first}, QueueFamily::latch), std::vector<std::string>{first});
  EXPECT_EQ(sorted_queue_nodes({lock, first}, QueueFamily::mutex), std::vector<std::string>{lock});
  EXPECT_EQ(
      find_protected_node({lock, "_c_" + kGuid + "-latch-0000000003"}, kGuid, QueueKind::latch),
      "_c_" + kGuid + "-latch-0000000003");
}

TEST(LatchQueue, ALatchAndTheLocksAreForeignToEachOther) {
  const std::string latch = "_c_" + kGuid + "-latch-0000000004";
  const std::string lock = "_c_" + kGuid + "-lock-0000000001";
  const std::string write = "_c_" + kGuid + "-__WRIT__0000000002";
  for (const auto family : {QueueFamily::mutex, QueueFamily::read_write, QueueFamily::semaphore}) {
    const auto found = find_foreign_lock_nodes({latch}, family);
    ASSERT_TRUE(found);
    EXPECT_EQ(found->protocol, ForeignProtocol::leader_latch);
    EXPECT_EQ(found->description(),
              "a leader latch, LeaderLatch of Curator or zkrecipes (node " + latch + ")");
  }
  EXPECT_FALSE(find_foreign_lock_nodes({latch}, QueueFamily::latch));
  EXPECT_EQ(find_foreign_lock_nodes({latch, lock}, QueueFamily::latch)->protocol,
            ForeignProtocol::mutex);
  EXPECT_EQ(find_foreign_lock_nodes({latch, write}, QueueFamily::latch)->protocol,
            ForeignProtocol::read_write_lock);
  EXPECT_EQ(find_foreign_lock_nodes({latch, "locks"}, QueueFamily::latch)->protocol,
            ForeignProtocol::curator_semaphore);
  EXPECT_EQ(find_foreign_lock_nodes({latch, "abc__lock__0000000001"}, QueueFamily::latch,
                                    QueuePeers{.kazoo = true})
                ->protocol,
            ForeignProtocol::kazoo_lock);
}

}  // namespace
}  // namespace zkr::detail
