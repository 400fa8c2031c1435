// No silent mix, on the in-memory ensemble: a lock that finds another lock
// protocol's nodes on its path refuses before it could be granted, with
// foreign_lock_protocol, and leaves nothing of its own behind; whether the
// nodes were there before it queued, arrived while it waited, or were seen
// by the listing that recovered a lost create. Names that are no known
// protocol keep being ignored. The names themselves: lock_driver_foreign_test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lock_directory.hpp"
#include "lock_fixture.hpp"
#include "zkr/lock_factory.hpp"
#include "zkr/multi_lock.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using test::OpKind;

// What Curator 5.4 leaves directly under a lock path (CuratorMixTest in
// tests/integration/curator_interop_test.cpp shows the real ones): its
// semaphores' two containers, a read/write lock's nodes.
const std::string kWriteNode = "_c_5b0e6c52-8d2a-4a57-9c11-0d5e7f1a2b3c-__WRIT__0000000000";
const std::string kReadNode = "_c_7f3e2a10-4c5d-4e6f-8a9b-0c1d2e3f4a5b-__READ__0000000000";

template <class Lock>
class LockMixTest : public LockUnitTest<Lock> {
 protected:
  // The directory with the given children, made by another session.
  void put_children(const std::string& dir, const std::vector<std::string>& names) {
    this->raw().create_parents(dir + "/x");
    for (const auto& name : names) this->raw().create(dir + "/" + name);
  }

  // Runs an acquire of `lock` that must be refused; the error's text, or ""
  // if it was not refused as it should be (the failure says how; a lock
  // granted is released, so that the test goes on rather than hangs).
  template <class L, class Acquire>
  std::string refused(L& lock, Acquire&& acquire, const std::string& dir = kDir) {
    try {
      const bool granted = acquire();
      ADD_FAILURE() << (granted ? "granted" : "not granted, but not refused either");
      if (granted) lock.release();
    } catch (const KeeperError& e) {
      EXPECT_EQ(e.errc(), Errc::foreign_lock_protocol) << e.what();
      EXPECT_EQ(e.path(), dir);
      return e.what();
    }
    return "";
  }

  bool no_ephemerals_of(Contender& c) {
    return this->ensemble_.ephemerals_of(this->session_of(c)).empty();
  }
};

using ::testing::HasSubstr;
TYPED_TEST_SUITE(LockMixTest, LockTypes);

TYPED_TEST(LockMixTest, CuratorSemaphoreChildrenRefuseEveryAcquireForm) {
  this->put_children(kDir, {"locks", "leases"});
  auto& a = this->contender();
  auto& creates = a.faults->on(OpKind::create, kDir + "/_c_").after([](auto&) {}).times(100);
  auto lock = this->lock_for(a);
  const auto start = std::chrono::steady_clock::now();
  const std::string text = this->refused(*lock, [&] { return lock->try_acquire(); });
  EXPECT_THAT(text, HasSubstr(kDir));
  EXPECT_THAT(text, HasSubstr("InterProcessSemaphoreV2/SemaphoreMutex of Curator or zkrecipes' "
                              "Curator layout (children locks/, leases/)"));
  (void)this->refused(*lock, [&] { return lock->try_acquire_for(kWait); });
  (void)this->refused(*lock, [&] { return lock->acquire(), true; });
  EXPECT_LT(std::chrono::steady_clock::now() - start, kWait / 2) << "it waited";
  EXPECT_FALSE(lock->is_acquired_in_this_process());
  // One create each, nothing retried, and each node deleted again.
  EXPECT_EQ(creates.fired(), 3);
  EXPECT_TRUE(a.sleeper->delays().empty());
  EXPECT_EQ(this->lock_nodes(), (std::vector<std::string>{"leases", "locks"}));
  EXPECT_TRUE(this->no_ephemerals_of(a));
}

TYPED_TEST(LockMixTest, EitherSemaphoreChildAloneRefuses) {
  for (const std::string child : {"leases", "locks"}) {
    const std::string dir = kDir + "-" + child;
    this->put_children(dir, {child});
    auto& a = this->contender();
    TypeParam lock(*a.client, dir);
    EXPECT_THAT(this->refused(
                    lock, [&] { return lock.try_acquire_for(kWait); }, dir),
                HasSubstr("(children " + child + "/)"));
    EXPECT_EQ(this->ensemble_.children_now(dir), std::vector<std::string>{child});
  }
}

TYPED_TEST(LockMixTest, CuratorReadWriteLockNodesRefuse) {
  for (const auto& node : {kWriteNode, kReadNode}) {
    const std::string dir = kDir + "-" + node.substr(node.size() - 18, 8);  // -__WRIT__ / -__READ__
    this->put_children(dir, {node});
    auto& a = this->contender();
    TypeParam lock(*a.client, dir);
    EXPECT_THAT(
        this->refused(
            lock, [&] { return lock.try_acquire_for(kWait); }, dir),
        HasSubstr("a read/write lock, InterProcessReadWriteLock of Curator or zkrecipes (node " +
                  node + ")"));
    EXPECT_EQ(this->ensemble_.children_now(dir), std::vector<std::string>{node});
    EXPECT_TRUE(this->no_ephemerals_of(a));
  }
}

// The grant is decided on the listing that follows the event "the node
// before ours went": a semaphore that came meanwhile is in that listing.
// (Curator's semaphore was granted the moment it came: see zkr/lock.hpp.)
TYPED_TEST(LockMixTest, ForeignNodesArrivingWhileWeWaitRefuseTheGrant) {
  auto held = this->lock_for(this->contender());
  ASSERT_TRUE(held->try_acquire());
  auto& w = this->contender();
  auto waiting = this->lock_for(w);
  // Right after the listing that queued the waiter behind the holder.
  test::Latch came;
  w.faults->on(OpKind::children, kDir).after([&](auto&) {
    this->raw().create(kDir + "/locks");
    this->raw().create(kDir + "/leases");
    came.open();
  });
  std::string text;
  std::thread waiter(
      [&] { text = this->refused(*waiting, [&] { return waiting->try_acquire_for(kWait); }); });
  ASSERT_TRUE(came.wait(kWait));
  EXPECT_TRUE(held->release());
  waiter.join();
  EXPECT_THAT(text, HasSubstr("InterProcessSemaphoreV2"));
  EXPECT_EQ(this->lock_nodes(), (std::vector<std::string>{"leases", "locks"}));
  EXPECT_TRUE(this->no_ephemerals_of(w));
}

// The listing after the holder went is lost to a connection loss: the retry
// must list again (and see the semaphore), not grant on the event alone.
TYPED_TEST(LockMixTest, AFailedProofListingIsMadeAgainBeforeTheGrant) {
  auto held = this->lock_for(this->contender());
  ASSERT_TRUE(held->try_acquire());
  auto& w = this->contender();
  auto waiting = this->lock_for(w);
  test::Latch came;
  w.faults->on(OpKind::children, kDir).after([&](auto&) {
    this->raw().create(kDir + "/leases");
    came.open();
  });
  auto& lost = w.faults->on(OpKind::children, kDir).fail(Errc::connection_loss);
  std::string text;
  std::thread waiter(
      [&] { text = this->refused(*waiting, [&] { return waiting->try_acquire_for(kWait); }); });
  ASSERT_TRUE(came.wait(kWait));
  EXPECT_TRUE(held->release());
  waiter.join();
  EXPECT_EQ(lost.fired(), 1);
  EXPECT_THAT(text, HasSubstr("(children leases/)"));
  EXPECT_TRUE(this->no_ephemerals_of(w));
}

// Deeper in the queue the same: the first waiter refuses (deleting its
// node), and so does the one behind it when that node goes.
TYPED_TEST(LockMixTest, EveryWaiterOfALongerQueueRefuses) {
  auto held = this->lock_for(this->contender());
  ASSERT_TRUE(held->try_acquire());
  auto& w1 = this->contender();
  auto& w2 = this->contender();
  auto first = this->lock_for(w1);
  auto second = this->lock_for(w2);
  // Right after the listing that queued the last of them.
  test::Latch came;
  w2.faults->on(OpKind::children, kDir).after([&](auto&) {
    this->raw().create(kDir + "/" + kWriteNode);
    came.open();
  });
  std::string text1, text2;
  std::thread t1(
      [&] { text1 = this->refused(*first, [&] { return first->try_acquire_for(kWait); }); });
  ASSERT_TRUE(this->wait_queue_length(2));
  std::thread t2(
      [&] { text2 = this->refused(*second, [&] { return second->try_acquire_for(kWait); }); });
  ASSERT_TRUE(came.wait(kWait));
  EXPECT_TRUE(held->release());
  t1.join();
  t2.join();
  EXPECT_THAT(text1, HasSubstr(kWriteNode));
  EXPECT_THAT(text2, HasSubstr(kWriteNode));
  EXPECT_EQ(this->lock_nodes(), std::vector<std::string>{kWriteNode});
  EXPECT_TRUE(this->no_ephemerals_of(w1));
  EXPECT_TRUE(this->no_ephemerals_of(w2));
}

// Our create's reply is lost; the listing that finds our node again is the
// first to show the foreign node: it refuses, and deletes the node it found.
TYPED_TEST(LockMixTest, TheListingThatRecoversALostCreateIsCheckedToo) {
  this->raw().create_parents(kDir + "/x");
  auto& a = this->contender();
  a.faults->on(OpKind::create, kDir + "/_c_").lose_reply_after_apply().after([&](auto&) {
    this->raw().create(kDir + "/leases");
  });
  auto lock = this->lock_for(a);
  (void)this->refused(*lock, [&] { return lock->try_acquire_for(kWait); });
  EXPECT_EQ(this->lock_nodes(), std::vector<std::string>{"leases"});
  EXPECT_TRUE(this->no_ephemerals_of(a));
}

// kazoo's (Python) locks and semaphore, and any child that ends in a
// sequence number no protocol claims: refused like Curator's, with a word
// on how to share the path where one can.
TYPED_TEST(LockMixTest, KazooAndUnknownSequentialNodesRefuse) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"9f1c2b3a4d5e6f708192a3b4c5d6e7f8__lock__0000000000", "a lock of kazoo (Python)"},
      {"9f1c2b3a4d5e6f708192a3b4c5d6e7f8__rlock__0000000000", "extra_lock_patterns=[\"-lock-\"]"},
      {"9f1c2b3a4d5e6f708192a3b4c5d6e7f8", "a Semaphore of kazoo (Python)"},
      {"entry-0000000000", "an unknown lock protocol"}};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& [node, says] = cases[i];
    const std::string dir = kDir + "-" + std::to_string(i);
    this->put_children(dir, {node});
    auto& a = this->contender();
    TypeParam lock(*a.client, dir);
    EXPECT_THAT(this->refused(
                    lock, [&] { return lock.try_acquire_for(kWait); }, dir),
                HasSubstr(says));
    EXPECT_EQ(this->ensemble_.children_now(dir), std::vector<std::string>{node});
    EXPECT_TRUE(this->no_ephemerals_of(a));
  }
}

// Shared: kazoo's nodes are contenders in our queue, by their sequence.
TYPED_TEST(LockMixTest, SharedWithKazooItsNodesQueueWithOurs) {
  const std::string kazoo = kDir + "/9f1c2b3a4d5e6f708192a3b4c5d6e7f8__lock__0000000000";
  this->put_children(kDir, {});
  this->raw().create(kazoo, "", CreateMode::ephemeral);  // first in line: "0000000000"
  LockOptions shared;
  shared.share_with_kazoo = true;
  auto lock = this->lock_for(this->contender(), shared);
  EXPECT_FALSE(lock->try_acquire_for(300ms)) << "granted before kazoo's node";
  EXPECT_THAT(lock->participant_nodes(), ::testing::Contains(kazoo));
  this->raw().remove(kazoo);
  ASSERT_TRUE(lock->try_acquire_for(kWait));
  EXPECT_TRUE(lock->release());
}

// Only recognised protocols refuse: our own helper children, an operator's
// note and near misses of the foreign names are ignored, as before.
TYPED_TEST(LockMixTest, OtherChildrenAreStillIgnored) {
  const std::vector<std::string> others{
      std::string(kLayoutNodeName), std::string(detail::kProbePrefix) + detail::new_guid(),
      // a GUID's last group may end in ten digits
      std::string(detail::kProbePrefix) + "0f8e1c2a-1111-4222-8333-ab1234567890", "config", "lease",
      "locks2", "my-leases", "__WRIT__", "_c_g-__READ__12"};
  this->put_children(kDir, others);
  auto lock = this->lock_for(this->contender());
  ASSERT_TRUE(lock->try_acquire_for(kWait));
  EXPECT_TRUE(lock->release());
  EXPECT_EQ(this->lock_nodes().size(), others.size());
}

// What is built on InterProcessMutex inherits the refusal: one lock type is enough.
class LockMixOfMutexTest : public LockMixTest<InterProcessMutex> {};

// MultiLock: the refused path gives back the one already taken.
TEST_F(LockMixOfMutexTest, MultiLockIsRefusedWholeAndGivesBackWhatItTook) {
  const std::string other = kDir + "-b";  // taken after kDir: the canonical order is sorted
  this->put_children(other, {"leases"});
  auto& a = this->contender();
  MultiLock both(*a.client, {other, kDir});
  EXPECT_THAT(this->refused(
                  both, [&] { return both.try_acquire_for(kWait); }, other),
              HasSubstr("InterProcessSemaphoreV2"));
  EXPECT_FALSE(both.is_acquired_in_this_process());
  EXPECT_TRUE(this->lock_nodes().empty()) << "the first lock was not given back";
  EXPECT_EQ(this->ensemble_.children_now(other), std::vector<std::string>{"leases"});
  EXPECT_TRUE(this->no_ephemerals_of(a));
}

TEST_F(LockMixOfMutexTest, LockFactoryLocksRefuseToo) {
  auto& a = this->contender();
  LockFactory factory(*a.client, "/factory");
  const std::string dir = factory.path_for("orders/42");
  this->put_children(dir, {kReadNode});
  auto mutex = factory.mutex("orders/42");
  auto semaphore_mutex = factory.non_reentrant_mutex("orders/42");
  EXPECT_THAT(this->refused(
                  *mutex, [&] { return mutex->try_acquire(); }, dir),
              HasSubstr(kReadNode));
  EXPECT_THAT(this->refused(
                  *semaphore_mutex, [&] { return semaphore_mutex->try_acquire(); }, dir),
              HasSubstr(kReadNode));
  EXPECT_EQ(this->ensemble_.children_now(dir), std::vector<std::string>{kReadNode});
}

}  // namespace
}  // namespace zkr
