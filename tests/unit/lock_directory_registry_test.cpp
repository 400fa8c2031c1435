// The cost of a lock cycle, counted in writes on the in-memory ensemble (every
// write request uses up a zxid there, failed ones too, as on the server), and
// the lazy removal of lock directories by the Client's registry
// (recipes/directory_registry.hpp): after a grace, at once when the lock
// object or the Client closes, never while in use, never someone else's.
// Also the release that does not wait for its reply.
#include <gtest/gtest.h>

#include <atomic>

#include "client_internals.hpp"
#include "directory_registry.hpp"
#include "lock_fixture.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using test::OpKind;

class DirectoryRegistryTest : public LockUnitTest<InterProcessMutex> {
 protected:
  static LockOptions grace(std::chrono::milliseconds g) {
    LockOptions options;
    options.directory_grace = g;
    return options;
  }
  static detail::DirectoryRegistry& registry(Contender& c) {
    return *detail::DirectoryRegistry::of(*c.client);
  }

  // Writes (zxids used up) by n acquire+release cycles of `lock`.
  std::int64_t writes_of_cycles(InterProcessMutex& lock, int n) {
    const auto before = ensemble_.last_zxid();
    for (int i = 0; i < n; ++i) {
      EXPECT_TRUE(lock.try_acquire_for(kWait));
      EXPECT_TRUE(lock.release());
    }
    return ensemble_.last_zxid() - before;
  }
};

TEST_F(DirectoryRegistryTest, UncontendedCycleIsTwoWritesOnceTheDirectoryIsKnown) {
  auto& a = contender();
  auto lock = lock_for(a, grace(1h));
  // The first cycle makes the directory (and its parent) and learns that it exists.
  EXPECT_GE(writes_of_cycles(*lock, 1), 3);
  // From then on: our node's create and its delete, nothing else.
  EXPECT_EQ(writes_of_cycles(*lock, 20), 40);
  EXPECT_TRUE(ensemble_.exists_now(kDir));
  EXPECT_TRUE(lock_nodes().empty());
}

// Contended: a hand-off writes nothing either (no mark, no directory
// create), so every acquisition is its node's create and delete.
TEST_F(DirectoryRegistryTest, ContendedAcquisitionIsTwoWrites) {
  auto& a = contender();
  auto& b = contender();
  NonReentrantMutex first(*a.client, kDir, grace(1h));
  NonReentrantMutex second(*b.client, kDir, grace(1h));
  // Each Client learns the directory once.
  ASSERT_TRUE(first.try_acquire_for(kWait));
  ASSERT_TRUE(first.release());
  ASSERT_TRUE(second.try_acquire_for(kWait));
  ASSERT_TRUE(second.release());
  constexpr int kHandOffs = 10;
  (void)raw();  // the watching session, opened now: opening one is a write too
  const auto before = ensemble_.last_zxid();
  ASSERT_TRUE(first.try_acquire_for(kWait));
  for (int i = 0; i < kHandOffs; ++i) {
    auto& holder = i % 2 == 0 ? first : second;
    auto& next = i % 2 == 0 ? second : first;
    std::thread waiter([&] { EXPECT_TRUE(next.try_acquire_for(kWait)); });
    ASSERT_TRUE(wait_queue_length(2));
    ASSERT_TRUE(holder.release());
    waiter.join();
  }
  (kHandOffs % 2 == 0 ? first : second).release();
  EXPECT_EQ(ensemble_.last_zxid() - before, 2 * (kHandOffs + 1));
}

// Knowledge is the Client's: a second lock object on the same path (another
// thread's, say) does not create the directory again.
TEST_F(DirectoryRegistryTest, LockObjectsOfOneClientShareWhatTheyKnow) {
  auto& a = contender();
  auto first = lock_for(a, grace(1h));
  auto second = lock_for(a, grace(1h));
  (void)writes_of_cycles(*first, 1);
  EXPECT_EQ(writes_of_cycles(*second, 5), 10);
  // Another Client knows nothing yet: its first create of the directory is a
  // write that fails (node_exists).
  auto& b = contender();
  auto third = lock_for(b, grace(1h));
  EXPECT_EQ(writes_of_cycles(*third, 1), 3);
  EXPECT_EQ(writes_of_cycles(*third, 1), 2);
}

TEST_F(DirectoryRegistryTest, IdleDirectoryIsRemovedAfterItsGrace) {
  auto& a = contender();
  constexpr auto kGrace = 300ms;
  auto lock = lock_for(a, grace(kGrace));
  ASSERT_TRUE(lock->try_acquire_for(kWait));
  ASSERT_TRUE(lock->release());
  const auto released = std::chrono::steady_clock::now();
  EXPECT_TRUE(ensemble_.exists_now(kDir)) << "removed before its grace";
  ASSERT_TRUE(test::wait_gone(raw(), kDir, kWait));
  EXPECT_GE(std::chrono::steady_clock::now() - released, kGrace);
  // The next acquire creates it again, and so learns it again.
  (void)writes_of_cycles(*lock, 1);
  EXPECT_TRUE(ensemble_.exists_now(kDir));
}

// While an acquire of this Client uses the directory, its grace does not run;
// and a removal that finds another Client's node in it leaves it.
TEST_F(DirectoryRegistryTest, DirectoryInUseIsNotRemoved) {
  auto& a = contender();
  auto& b = contender();
  constexpr auto kGrace = 50ms;
  auto lock = lock_for(a, grace(kGrace));
  NonReentrantMutex other_lock(*b.client, kDir, grace(1h));
  auto* other = &other_lock;
  // a holds for ten graces: the directory stays.
  ASSERT_TRUE(lock->try_acquire_for(kWait));
  EXPECT_FALSE(test::wait_gone(raw(), kDir, 10 * kGrace)) << "removed under a holder";
  // b holds; a's release starts a's grace, and a's removal finds b's node.
  std::thread waiter([&] { EXPECT_TRUE(other->try_acquire_for(kWait)); });
  ASSERT_TRUE(wait_queue_length(2));
  ASSERT_TRUE(lock->release());
  waiter.join();
  ASSERT_TRUE(other->is_acquired_in_this_process());
  ASSERT_TRUE(registry(a).wait_idle(kWait));
  EXPECT_FALSE(test::wait_gone(raw(), kDir, 10 * kGrace)) << "removed with b's node in it";
  EXPECT_EQ(queue().size(), 1u);
  EXPECT_TRUE(other->release());
}

// A node at the lock path that the library did not make (no mark: another
// application's, with its data) is used as the directory and never removed;
// no probe or delete is even sent to it.
TEST_F(DirectoryRegistryTest, UnmarkedDirectoryIsNeverRemoved) {
  raw().create_parents(kDir);
  raw().create(kDir, "printer config");
  auto& a = contender();
  {
    auto lock = lock_for(a, grace(10ms));
    ASSERT_TRUE(lock->try_acquire_for(kWait));
    ASSERT_TRUE(lock->release());
    ASSERT_TRUE(registry(a).wait_idle(kWait));
    const auto before = ensemble_.last_zxid();
    ASSERT_TRUE(lock->try_acquire_for(kWait));
    ASSERT_TRUE(lock->release());
    ASSERT_TRUE(registry(a).wait_idle(kWait));
    EXPECT_EQ(ensemble_.last_zxid() - before, 2) << "a write to a node not ours";
  }  // the lock object closes: nothing more happens either
  ASSERT_TRUE(registry(a).wait_idle(kWait));
  a.client.reset();
  ASSERT_TRUE(ensemble_.exists_now(kDir));
  EXPECT_EQ(*ensemble_.data_now(kDir), "printer config");
  EXPECT_EQ(ensemble_.exists_now(kDir)->version, 0);
  EXPECT_TRUE(lock_nodes().empty());
}

TEST_F(DirectoryRegistryTest, DirectoryGoesAtOnceWhenTheLastLockObjectCloses) {
  auto& a = contender();
  auto lock = lock_for(a, grace(1h));
  auto same_path = lock_for(a, grace(1h));
  ASSERT_TRUE(lock->try_acquire_for(kWait));
  ASSERT_TRUE(lock->release());
  lock.reset();
  // Another lock object of this Client is still on it: it stays for its grace.
  ASSERT_TRUE(registry(a).wait_idle(kWait));
  EXPECT_TRUE(ensemble_.exists_now(kDir));
  same_path.reset();
  EXPECT_TRUE(test::wait_gone(raw(), kDir, kWait));
  EXPECT_TRUE(registry(a).wait_idle(kWait));
}

TEST_F(DirectoryRegistryTest, DirectoryGoesAtOnceWhenTheClientCloses) {
  auto& a = contender();
  auto lock = lock_for(a, grace(1h));
  ASSERT_TRUE(lock->try_acquire_for(kWait));
  ASSERT_TRUE(lock->release());
  EXPECT_TRUE(ensemble_.exists_now(kDir));
  a.client.reset();  // the lock outlives its Client: allowed
  EXPECT_FALSE(ensemble_.exists_now(kDir));
  lock.reset();
}

// Another client deletes the (empty) directory between two cycles: our
// create finds it gone (no_node), creates it and queues, and the cycles
// after are two writes again.
TEST_F(DirectoryRegistryTest, DirectoryRemovedBySomeoneElseBetweenCyclesIsMadeAgain) {
  auto& a = contender();
  auto lock = lock_for(a, grace(1h));
  (void)writes_of_cycles(*lock, 1);
  raw().remove(kDir);
  // The failed create, the directory's create, ours, and the delete.
  EXPECT_EQ(writes_of_cycles(*lock, 1), 4);
  EXPECT_TRUE(ensemble_.exists_now(kDir));
  EXPECT_EQ(writes_of_cycles(*lock, 3), 6);
}

// The same, but the directory goes between our check of what we know and
// our create: a hook removes it right after the create's predecessor.
TEST_F(DirectoryRegistryTest, DirectoryRemovedJustBeforeOurCreateIsMadeAgain) {
  auto& a = contender();
  auto lock = lock_for(a, grace(1h));
  (void)writes_of_cycles(*lock, 1);
  // Removed as our create arrives: the create fails no_node (never applied).
  auto& race = a.faults->on(OpKind::create, kDir + "/").fail(Errc::no_node);
  ASSERT_TRUE(lock->try_acquire_for(kWait));
  EXPECT_EQ(race.fired(), 1);
  EXPECT_EQ(queue().size(), 1u);
  EXPECT_TRUE(lock->release());
}

// release() returns before the server has answered; the lease is released at
// once; the reply, when it comes, changes nothing.
TEST_F(DirectoryRegistryTest, ReleaseDoesNotWaitForTheServer) {
  raw().create("/resource", "0");
  auto& a = contender();
  auto lock = lock_for(a, grace(1h));
  ASSERT_TRUE(lock->try_acquire_for(kWait));
  const Grant lease = lock->grant();
  test::Latch reply_may_go;
  std::atomic<bool> lost_heard{false};
  lease.on_lost([&](LostReason) { lost_heard = true; });
  a.faults->on(OpKind::remove, lease.node_path()).after([&](const test::FaultCall&) {
    (void)reply_may_go.wait(kWait);  // holds the reply back
  });
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(lock->release());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, kWait / 2) << "release waited for its reply";
  EXPECT_FALSE(reply_may_go.is_open());
  EXPECT_TRUE(lease.released());
  EXPECT_FALSE(lock->is_acquired_in_this_process());
  // The delete was sent (the fake applies requests as they are sent).
  EXPECT_FALSE(ensemble_.exists_now(lease.node_path()));
  reply_may_go.open();
  ASSERT_TRUE(registry(a).wait_idle(kWait));
  EXPECT_FALSE(lost_heard.load()) << "a release is not a loss";
  EXPECT_EQ(guarded_write(*a.client->keeper(), lease, {op::Set{"/resource", "1"}}).error,
            Errc::no_node);
}

// The delete never reached the server (the link failed under it): nobody
// waits for the reply, yet the node goes, by the background remover.
TEST_F(DirectoryRegistryTest, ReleaseWhoseDeleteIsLostIsFinishedInTheBackground) {
  auto& a = contender();
  auto lock = lock_for(a, grace(1h));
  ASSERT_TRUE(lock->try_acquire_for(kWait));
  const auto node = lock->grant().node_path();
  auto& lost = a.faults->on(OpKind::remove, node).fail(Errc::connection_loss);
  EXPECT_TRUE(lock->release());
  EXPECT_TRUE(test::wait_gone(raw(), node, kWait));
  EXPECT_EQ(lost.fired(), 1);
  // And the next acquire is granted.
  EXPECT_TRUE(lock->try_acquire_for(kWait));
  EXPECT_TRUE(lock->release());
}

// Many keys, each locked once by a lock object of its own, as W3 does: every
// directory goes once its object closes, in batches, and nothing is left.
TEST_F(DirectoryRegistryTest, ManyKeysLockedOnceLeaveNothing) {
  auto& a = contender();
  constexpr int kKeys = 300;
  for (int i = 0; i < kKeys; ++i) {
    InterProcessMutex lock(*a.client, "/locks/k" + std::to_string(i), grace(1h));
    ASSERT_TRUE(lock.try_acquire_for(kWait));
    ASSERT_TRUE(lock.release());
  }
  ASSERT_TRUE(registry(a).wait_idle(kWait));
  EXPECT_EQ(ensemble_.children_now("/locks"), std::vector<std::string>{});
  // Nothing of them is remembered: memory does not grow with the keys.
  EXPECT_EQ(registry(a).remembered(), 0u);
  EXPECT_EQ(registry(a).scheduled(), 0u);
  ensemble_.reap_containers();
  EXPECT_EQ(ensemble_.node_count(), 0u);
}

}  // namespace
}  // namespace zkr
