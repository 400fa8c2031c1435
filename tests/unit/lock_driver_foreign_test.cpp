// No silent mix, the pure part: which children of a lock directory are
// another lock protocol's (recipes/lock_driver.hpp), and which are not.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lock_directory.hpp"
#include "lock_driver.hpp"
#include "zkr/lock_factory.hpp"

namespace zkr::detail {
namespace {

const std::string kGuid = "0f8e1c2a-1111-4222-8333-444455556666";
const std::string kOurs = protected_lock_prefix(kGuid) + "0000000007";

TEST(ForeignLockNodes, CuratorSemaphoreByItsLocksAndLeasesChildren) {
  const auto found = find_foreign_lock_nodes({kOurs, "leases", "locks"});
  ASSERT_TRUE(found);
  EXPECT_EQ(found->protocol, ForeignProtocol::curator_semaphore);
  EXPECT_EQ(found->nodes, (std::vector<std::string>{"locks", "leases"}));
  EXPECT_EQ(found->description(),
            "a semaphore, InterProcessSemaphoreV2/SemaphoreMutex of Curator or zkrecipes' Curator "
            "layout (children locks/, leases/)");
}

// Its internal mutex's "locks" comes first and its "leases" may outlive it
// (both are containers, reaped separately): either alone gives it away.
TEST(ForeignLockNodes, EitherSemaphoreChildAloneIsEnough) {
  const auto locks = find_foreign_lock_nodes({"locks", kOurs});
  ASSERT_TRUE(locks);
  EXPECT_EQ(locks->description(),
            "a semaphore, InterProcessSemaphoreV2/SemaphoreMutex of Curator or zkrecipes' Curator "
            "layout (children locks/)");
  const auto leases = find_foreign_lock_nodes({"leases"});
  ASSERT_TRUE(leases);
  EXPECT_EQ(leases->protocol, ForeignProtocol::curator_semaphore);
  EXPECT_EQ(leases->nodes, std::vector<std::string>{"leases"});
}

TEST(ForeignLockNodes, CuratorReadWriteLockByItsWriteNode) {
  const std::string write = "_c_" + kGuid + "-__WRIT__0000000003";
  const auto found = find_foreign_lock_nodes({kOurs, write, "config"});
  ASSERT_TRUE(found);
  EXPECT_EQ(found->protocol, ForeignProtocol::read_write_lock);
  EXPECT_EQ(
      found->description(),
      "a read/write lock, InterProcessReadWriteLock of Curator or zkrecipes (node " + write + ")");
}

TEST(ForeignLockNodes, CuratorReadWriteLockByItsReadNodes) {
  const std::vector<std::string> children{"_c_b-__READ__0000000005", kOurs,
                                          "_c_a-__READ__0000000004", "_c_c-__WRIT__0000000006"};
  const auto found = find_foreign_lock_nodes(children);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->protocol, ForeignProtocol::read_write_lock);
  // In name order, whatever order the server listed them in.
  EXPECT_EQ(found->nodes,
            (std::vector<std::string>{"_c_a-__READ__0000000004", "_c_b-__READ__0000000005",
                                      "_c_c-__WRIT__0000000006"}));
  EXPECT_EQ(found->description(),
            "a read/write lock, InterProcessReadWriteLock of Curator or zkrecipes (node "
            "_c_a-__READ__0000000004 and 2 more)");
}

// Names as the server makes them, however they were asked for: without
// Curator's protection, and once the directory's counter has gone negative.
TEST(ForeignLockNodes, ReadWriteNodesWithoutProtectionOrWithANegativeSequence) {
  for (const std::string name : {"__WRIT__0000000000", "__READ__2147483647",
                                 "_c_g-__READ__-2147483648", "_c_g-__WRIT__-000000001"})
    EXPECT_TRUE(find_foreign_lock_nodes({name})) << name;
}

TEST(ForeignLockNodes, SemaphoreIsReportedWhenBothProtocolsAreThere) {
  const auto found = find_foreign_lock_nodes({"_c_g-__WRIT__0000000001", "leases"});
  ASSERT_TRUE(found);
  EXPECT_EQ(found->protocol, ForeignProtocol::curator_semaphore);
}

// Anything that is not one of those layouts keeps being ignored: our own
// nodes and helper children, an operator's note, near misses of every name.
TEST(ForeignLockNodes, OtherNamesAreNotForeignLocks) {
  const std::vector<std::string> not_foreign{
      kOurs,
      "lock-0000000002",                       // Curator's mutex without protection: ours
      std::string(kLayoutNodeName),            // a LockFactory's layout record
      std::string(kProbePrefix) + new_guid(),  // the directory-removal proof's probe
      "config",
      "zz-lock-not-a-number",
      "",
      "lock",
      "lease",
      "leases2",
      "locks-",
      "my-locks",
      "Leases",
      "LOCKS",
      " leases",
      "leases ",
      "__WRIT__",
      "__READ__",
      "_c_g-__WRIT__",
      "_c_g-__WRIT__123",
      "_c_g-__READ__0000000003x",
      "_c_g-__WRIT__00000000001234",
      "_c_g-__WRIT__lock-0000000001",  // ends as a lock node: one of our queue's
      "_c_g-__READ__0000000001-config",
      "build-12345678",                     // eight digits: no sequence
      "v12345678901",                       // eleven digits
      "ts-1732624000123",                   // a millisecond timestamp
      "0123456789abcdef0123456789abcde",    // 31 hex digits: no kazoo lease
      "0123456789ABCDEF0123456789ABCDEF",   // upper case: no kazoo lease
      "0123456789abcdef0123456789abcdef0",  // 33
      "x__lock__",
      "x__lock__123",
      "x__rlock__00000000001234"};
  for (const auto& name : not_foreign)
    EXPECT_FALSE(find_foreign_lock_nodes({name})) << '"' << name << '"';
  EXPECT_FALSE(find_foreign_lock_nodes(not_foreign));
  EXPECT_FALSE(find_foreign_lock_nodes({}));
}

// The read/write queue asks the other way round: the mutex queue's nodes are
// foreign to it, its own are not, and the semaphore is foreign to both.
TEST(ForeignLockNodes, ToAReadWriteLockTheMutexQueueIsForeign) {
  const std::string read = "_c_" + kGuid + "-__READ__0000000004";
  const std::string write = "_c_" + kGuid + "-__WRIT__0000000005";
  EXPECT_FALSE(find_foreign_lock_nodes({read, write, "config"}, QueueFamily::read_write));
  const auto found =
      find_foreign_lock_nodes({read, "lock-0000000009", kOurs, write}, QueueFamily::read_write);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->protocol, ForeignProtocol::mutex);
  EXPECT_EQ(found->nodes, (std::vector<std::string>{kOurs, "lock-0000000009"}));
  EXPECT_EQ(found->description(),
            "a mutex, InterProcessMutex of Curator or zkrecipes or zkrecipes' "
            "NonReentrantMutex (node " +
                kOurs + " and 1 more)");
  const auto semaphore = find_foreign_lock_nodes({read, "leases"}, QueueFamily::read_write);
  ASSERT_TRUE(semaphore);
  EXPECT_EQ(semaphore->protocol, ForeignProtocol::curator_semaphore);
}

// The semaphore's own children are its layout; both lock queues are foreign.
TEST(ForeignLockNodes, ToTheSemaphoreBothLockQueuesAreForeign) {
  EXPECT_FALSE(find_foreign_lock_nodes({"locks", "leases", "config"}, QueueFamily::semaphore));
  const auto mutex = find_foreign_lock_nodes({"locks", kOurs}, QueueFamily::semaphore);
  ASSERT_TRUE(mutex);
  EXPECT_EQ(mutex->protocol, ForeignProtocol::mutex);
  const auto read_write =
      find_foreign_lock_nodes({"leases", "_c_g-__READ__0000000001"}, QueueFamily::semaphore);
  ASSERT_TRUE(read_write);
  EXPECT_EQ(read_write->protocol, ForeignProtocol::read_write_lock);
}

}  // namespace
}  // namespace zkr::detail
