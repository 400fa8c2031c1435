// kazoo (Python) on our lock paths, the pure part: which of its nodes a lock
// refuses by default, how they queue with ours when shared, and the general
// rule for names that end in a sequence number (recipes/lock_driver.hpp).
//
// kazoo 2.8's facts (kazoo/recipe/lock.py): nodes `<uuid4 hex>__lock__<seq>`
// (Lock, WriteLock) and `<uuid4 hex>__rlock__<seq>` (ReadLock), contenders
// matched by `(?:patterns)(-?\d{10})$` and sorted by that sequence text; its
// Semaphore keeps `<uuid4 hex>` lease children.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lock_directory.hpp"
#include "lock_driver.hpp"
#include "zkr/lock_factory.hpp"

namespace zkr::detail {
namespace {

const std::string kHex = "9f1c2b3a4d5e6f708192a3b4c5d6e7f8";  // uuid4().hex
const std::string kKazooLock = kHex + "__lock__0000000004";
const std::string kKazooRead = "0a1b2c3d4e5f60718293a4b5c6d7e8f9__rlock__0000000002";
const std::string kOurs = protected_lock_prefix(new_guid()) + "0000000003";
const std::string kOurRead = protected_prefix(new_guid(), QueueKind::read) + "0000000001";
const std::string kOurWrite = protected_prefix(new_guid(), QueueKind::write) + "0000000005";
constexpr QueuePeers kShared{.kazoo = true};

TEST(KazooNodes, KindsByTheirMarker) {
  EXPECT_EQ(kazoo_kind(kKazooLock), KazooKind::lock);
  EXPECT_EQ(kazoo_kind(kKazooRead), KazooKind::read);
  EXPECT_EQ(kazoo_kind("__lock__-2147483648"), KazooKind::lock);  // an overflowed counter
  EXPECT_EQ(kazoo_kind(kOurs), std::nullopt);
  EXPECT_EQ(kazoo_kind(kHex + "__lock__"), std::nullopt);
  EXPECT_EQ(kazoo_kind(kHex + "__Lock__0000000001"), std::nullopt);
  // A name that ends as one of our queue's is ours, whatever came before.
  EXPECT_EQ(kazoo_kind("x__lock__y-lock-0000000001"), std::nullopt);
  EXPECT_TRUE(is_kazoo_lease_node(kHex));
}

TEST(KazooNodes, AMutexRefusesEitherByDefault) {
  for (const auto& node : {kKazooLock, kKazooRead}) {
    const auto found = find_foreign_lock_nodes({kOurs, node, "config"});
    ASSERT_TRUE(found) << node;
    EXPECT_EQ(found->protocol, ForeignProtocol::kazoo_lock);
    EXPECT_EQ(found->nodes, std::vector<std::string>{node});
    EXPECT_EQ(found->description(),
              "a lock of kazoo (Python): Lock, WriteLock or ReadLock, or a kazoo Semaphore's "
              "internal Lock (node " +
                  node + ")");
    EXPECT_EQ(found->advice(QueueFamily::mutex),
              "to share it, make every kazoo lock on it Lock(client, path, "
              "extra_lock_patterns=[\"-lock-\"]) and set LockOptions::share_with_kazoo (zkr "
              "lock --with-kazoo)");
  }
}

TEST(KazooNodes, AReadWriteLockAndASemaphoreRefuseThemByDefault) {
  const auto rw =
      find_foreign_lock_nodes({kOurRead, kKazooRead, kKazooLock}, QueueFamily::read_write);
  ASSERT_TRUE(rw);
  EXPECT_EQ(rw->protocol, ForeignProtocol::kazoo_lock);
  EXPECT_EQ(rw->nodes, (std::vector<std::string>{kKazooRead, kKazooLock}));  // by name
  EXPECT_NE(rw->advice(QueueFamily::read_write)
                .find("ReadLock(client, path, extra_lock_patterns=[\"__WRIT__\"])"),
            std::string::npos);
  // A semaphore never shares: not even when asked to.
  for (const auto peers : {QueuePeers{}, kShared}) {
    const auto sem =
        find_foreign_lock_nodes({"locks", "leases", kKazooLock}, QueueFamily::semaphore, peers);
    ASSERT_TRUE(sem);
    EXPECT_EQ(sem->protocol, ForeignProtocol::kazoo_lock);
  }
}

TEST(KazooNodes, SharedTheyAreContendersNotForeign) {
  EXPECT_FALSE(
      find_foreign_lock_nodes({kOurs, kKazooLock, kKazooRead}, QueueFamily::mutex, kShared));
  EXPECT_FALSE(find_foreign_lock_nodes({kOurRead, kOurWrite, kKazooLock, kKazooRead},
                                       QueueFamily::read_write, kShared));
  // Sharing with kazoo's locks is not sharing with its semaphore, nor with
  // an unknown protocol, nor with the other queue family.
  const auto lease =
      find_foreign_lock_nodes({kOurs, kKazooLock, kHex}, QueueFamily::mutex, kShared);
  ASSERT_TRUE(lease);
  EXPECT_EQ(lease->protocol, ForeignProtocol::kazoo_semaphore);
  const auto entry =
      find_foreign_lock_nodes({kOurs, "entry-0000000007"}, QueueFamily::mutex, kShared);
  ASSERT_TRUE(entry);
  EXPECT_EQ(entry->protocol, ForeignProtocol::unknown_sequential);
  const auto rw =
      find_foreign_lock_nodes({kOurs, kKazooLock, kOurWrite}, QueueFamily::mutex, kShared);
  ASSERT_TRUE(rw);
  EXPECT_EQ(rw->protocol, ForeignProtocol::read_write_lock);
}

TEST(KazooNodes, SemaphoreLeasesAreRefusedWhatever) {
  const auto found = find_foreign_lock_nodes({kHex, kOurs});
  ASSERT_TRUE(found);
  EXPECT_EQ(found->protocol, ForeignProtocol::kazoo_semaphore);
  EXPECT_EQ(found->description(), "a Semaphore of kazoo (Python) (lease node " + kHex + ")");
  EXPECT_EQ(found->advice(QueueFamily::mutex),
            "kazoo's Semaphore cannot share a path with our locks: use another path");
  EXPECT_TRUE(find_foreign_lock_nodes({kHex}, QueueFamily::semaphore));
  EXPECT_TRUE(find_foreign_lock_nodes({kHex}, QueueFamily::read_write, kShared));
}

// ---- Names that end in a sequence number and no protocol we know claims.

TEST(SequenceSuffix, WhatTheServerAppends) {
  EXPECT_TRUE(has_sequence_suffix("entry-0000000001"));
  EXPECT_TRUE(has_sequence_suffix("0000000000"));
  EXPECT_TRUE(has_sequence_suffix("x2147483647"));
  EXPECT_TRUE(has_sequence_suffix("x-2147483648"));  // "%010d" of INT_MIN
  EXPECT_TRUE(has_sequence_suffix("x-000000001"));   // "%010d" of -1
  EXPECT_FALSE(has_sequence_suffix("x-00000001"));
  EXPECT_FALSE(has_sequence_suffix("x000000001"));
  EXPECT_FALSE(has_sequence_suffix("x00000000001"));
  EXPECT_FALSE(has_sequence_suffix(""));
  EXPECT_FALSE(has_sequence_suffix("000000001"));
}

TEST(SequenceSuffix, AnUnknownProtocolsContendersAreRefused) {
  for (const std::string& name : std::vector<std::string>{
           "entry-0000000001",                        // kazoo's queues
           "_c_" + new_guid() + "-lease-0000000003",  // a lease out of its leases/
           "_c_g-__write__0000000003", "_c_g-__READ_0000000003", "member--2147483648",
           "n-000000009"}) {
    for (const auto family :
         {QueueFamily::mutex, QueueFamily::read_write, QueueFamily::semaphore}) {
      const auto found = find_foreign_lock_nodes({name, "config"}, family, kShared);
      ASSERT_TRUE(found) << name;
      EXPECT_EQ(found->protocol, ForeignProtocol::unknown_sequential) << name;
      EXPECT_EQ(found->description(),
                "an unknown lock protocol, whose contenders' names end in a sequence number "
                "(node " +
                    name + ")");
    }
  }
}

// What we ourselves leave under a lock path never counts as a contender of
// an unknown protocol, however its random part ends: the directory-removal
// probe (a GUID's last group may be all digits), the layout record, the
// semaphore's "locks" and "leases" (its own layout), our queue nodes.
TEST(SequenceSuffix, OurOwnChildrenAreNotForeign) {
  const std::string probe = std::string(kProbePrefix) + "0f8e1c2a-1111-4222-8333-ab1234567890";
  ASSERT_TRUE(has_sequence_suffix(probe));  // the case this guards against
  EXPECT_FALSE(find_foreign_lock_nodes({probe, kOurs, std::string(kLayoutNodeName)}));
  EXPECT_FALSE(find_foreign_lock_nodes({probe, kOurRead, kOurWrite}, QueueFamily::read_write));
  EXPECT_FALSE(find_foreign_lock_nodes({probe, "locks", "leases"}, QueueFamily::semaphore));
  for (int i = 0; i < 2000; ++i) {
    const std::string random_probe = std::string(kProbePrefix) + new_guid();
    ASSERT_FALSE(find_foreign_lock_nodes({random_probe})) << random_probe;
  }
}

// ---- Shared: one queue, in kazoo's order.

TEST(KazooQueue, ContenderKinds) {
  EXPECT_EQ(contender_kind(kKazooLock, QueueFamily::mutex), std::nullopt);  // not shared
  EXPECT_EQ(contender_kind(kKazooLock, QueueFamily::mutex, kShared), QueueKind::mutex);
  EXPECT_EQ(contender_kind(kKazooRead, QueueFamily::mutex, kShared), QueueKind::mutex);
  EXPECT_EQ(contender_kind(kKazooLock, QueueFamily::read_write, kShared), QueueKind::write);
  EXPECT_EQ(contender_kind(kKazooRead, QueueFamily::read_write, kShared), QueueKind::read);
  EXPECT_EQ(contender_kind(kKazooLock, QueueFamily::semaphore, kShared), std::nullopt);
  EXPECT_EQ(contender_kind(kOurs, QueueFamily::mutex, kShared), QueueKind::mutex);
  EXPECT_EQ(contender_kind(kOurs, QueueFamily::read_write, kShared), std::nullopt);
  EXPECT_EQ(contender_kind(kOurWrite, QueueFamily::read_write), QueueKind::write);
}

// kazoo sorts contenders by the sequence text its regex captures, which is
// the text after the marker: the key Curator's order used too, and ours until
// a parent's counter wraps. Ours is the order of issue, so a negative
// (wrapped) sequence sorts last; a listing holding one is refused before any
// grant (wrapped_sequence_node), since kazoo would put it first.
TEST(KazooQueue, SortedBySequenceTextAsKazooSortsThem) {
  const std::vector<std::string> children{
      "b" + kHex.substr(1) + "__lock__0000000009",   kOurs,   kKazooRead, kKazooLock, "config",
      "c" + kHex.substr(1) + "__rlock__-2147483648", kOurRead};
  EXPECT_EQ(sorted_queue_nodes(children, QueueFamily::mutex, kShared),
            (std::vector<std::string>{kKazooRead, kOurs, kKazooLock,
                                      "b" + kHex.substr(1) + "__lock__0000000009",
                                      "c" + kHex.substr(1) + "__rlock__-2147483648"}));
  EXPECT_EQ(wrapped_sequence_node(children, QueueFamily::mutex, kShared),
            "c" + kHex.substr(1) + "__rlock__-2147483648");
  EXPECT_EQ(sorted_queue_nodes(children, QueueFamily::mutex), std::vector<std::string>{kOurs});
  EXPECT_EQ(sorted_queue_nodes(children, QueueFamily::read_write, kShared),
            (std::vector<std::string>{kOurRead, kKazooRead, kKazooLock,
                                      "b" + kHex.substr(1) + "__lock__0000000009",
                                      "c" + kHex.substr(1) + "__rlock__-2147483648"}));
}

// Our reader waits only for the writers before it, kazoo's "__lock__"
// included; kazoo's readers share with it; our writer waits for everyone.
TEST(KazooQueue, ReadersShareWithKazooReadersAndWaitForItsWriters) {
  const std::string read6 = protected_prefix(new_guid(), QueueKind::read) + "0000000006";
  const std::vector<std::string> queue =
      sorted_queue_nodes({kOurRead, kKazooRead, kOurs, kKazooLock, kOurWrite, read6},
                         QueueFamily::read_write, kShared);
  ASSERT_EQ(queue, (std::vector<std::string>{kOurRead, kKazooRead, kKazooLock, kOurWrite, read6}));
  EXPECT_TRUE(queue_position(queue, kOurRead, QueueKind::read).holds);
  const auto write = queue_position(queue, kOurWrite, QueueKind::write);
  EXPECT_EQ(write.lower, (std::vector<std::string>{kOurRead, kKazooRead, kKazooLock}));
  const auto read = queue_position(queue, read6, QueueKind::read);
  EXPECT_EQ(read.lower, (std::vector<std::string>{kKazooLock, kOurWrite}));
  // A kazoo writer alone before our reader keeps it waiting.
  const auto behind = sorted_queue_nodes({kKazooLock, read6}, QueueFamily::read_write, kShared);
  EXPECT_EQ(queue_position(behind, read6, QueueKind::read).lower,
            std::vector<std::string>{kKazooLock});
}

}  // namespace
}  // namespace zkr::detail
