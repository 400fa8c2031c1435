// Lock logic on the in-memory ensemble, with faults injected at exact points.
// One typed suite runs against both lock types; a few tests at the end cover
// what differs (reentrancy, who may release).
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <regex>
#include <thread>

#include "lock_fixture.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using test::FakeEnsemble;
using test::Faults;
using test::OpKind;

TYPED_TEST_SUITE(LockUnitTest, LockTypes);

TYPED_TEST(LockUnitTest, UncontendedAcquireUsesCuratorsNamesAndLeavesNothing) {
  auto& a = this->contender();
  auto lock = this->lock_for(a);
  ASSERT_TRUE(lock->try_acquire());
  EXPECT_TRUE(lock->is_acquired_in_this_process());
  const auto nodes = this->lock_nodes();
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_TRUE(std::regex_match(nodes[0], std::regex("_c_[0-9a-f-]{36}-lock-[0-9]{10}")))
      << nodes[0];
  EXPECT_EQ(lock->grant().node_path(), kDir + "/" + nodes[0]);
  EXPECT_EQ(lock->grant().fencing_token(),
            this->ensemble_.exists_now(kDir + "/" + nodes[0])->czxid);
  EXPECT_EQ(lock->participant_nodes(), std::vector<std::string>{kDir + "/" + nodes[0]});
  EXPECT_TRUE(lock->release());
  EXPECT_FALSE(lock->is_acquired_in_this_process());
  EXPECT_TRUE(this->lock_nodes().empty());
  // The directory stays while the lock object lives (for its grace), and goes
  // once it is closed; its parent is a container, which the server's sweep
  // removes.
  lock.reset();
  EXPECT_TRUE(test::wait_gone(this->raw(), kDir, kWait));
  EXPECT_TRUE(this->ensemble_.exists_now(std::string(parent_path(kDir))));
  this->ensemble_.reap_containers();
  EXPECT_EQ(this->ensemble_.node_count(), 0u);
}

TYPED_TEST(LockUnitTest, DirectoryIsRemovedOnlyOnceNobodyQueues) {
  auto first = this->lock_for(this->contender());
  auto second = this->lock_for(this->contender());
  ASSERT_TRUE(first->try_acquire());
  std::thread waiter([&] {
    ASSERT_TRUE(second->try_acquire_for(kWait));
    EXPECT_TRUE(this->ensemble_.exists_now(kDir)) << "removed under a holder";
    EXPECT_TRUE(second->release());
  });
  ASSERT_TRUE(this->wait_queue_length(2));
  EXPECT_TRUE(first->release());
  waiter.join();
  first.reset();
  second.reset();
  EXPECT_TRUE(test::wait_gone(this->raw(), kDir, kWait));
}

TYPED_TEST(LockUnitTest, ReleaseKeepsTheDirectoryWhenAskedTo) {
  LockOptions keep;
  keep.remove_directory_on_release = false;
  auto lock = this->lock_for(this->contender(), keep);
  ASSERT_TRUE(lock->try_acquire());
  EXPECT_TRUE(lock->release());
  EXPECT_TRUE(this->ensemble_.exists_now(kDir));
  EXPECT_TRUE(this->lock_nodes().empty());
}

// A release removes the directory between a contender's create of the
// directory (which found it) and its create of the node (which does not).
TYPED_TEST(LockUnitTest, ContenderRacingADirectoryRemovalCreatesItAgain) {
  auto& a = this->contender();
  auto lock = this->lock_for(a);
  this->raw().create_parents(kDir, CreateMode::container);  // the parent, not the directory
  auto& race =
      a.faults->on(test::OpKind::create, std::regex(kDir)).fail(Errc::node_exists).times(3);
  ASSERT_TRUE(lock->try_acquire_for(kWait));
  EXPECT_EQ(race.fired(), 3);
  EXPECT_EQ(this->queue().size(), 1u);
  EXPECT_TRUE(lock->release());
  lock.reset();
  EXPECT_TRUE(test::wait_gone(this->raw(), kDir, kWait));
}

TYPED_TEST(LockUnitTest, ContenderThatAlwaysLosesTheDirectoryRaceFailsInsteadOfHanging) {
  auto& a = this->contender();
  auto lock = this->lock_for(a);
  this->raw().create_parents(kDir, CreateMode::container);  // the parent, not the directory
  a.faults->on(test::OpKind::create, std::regex(kDir)).fail(Errc::node_exists).times(1000);
  try {
    (void)lock->try_acquire_for(kWait);
    FAIL() << "acquired without a directory";
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::no_node);
    EXPECT_NE(std::string(e.what()).find(kDir), std::string::npos) << e.what();
  }
  EXPECT_FALSE(this->ensemble_.exists_now(kDir));
}

// A timed acquire returns by its deadline while the link is down, not a
// connection_timeout later.
TYPED_TEST(LockUnitTest, TimedAcquireWithoutALinkReturnsByItsDeadline) {
  // Retries that really pause, and more of them than the deadline leaves
  // room for: the listing may fail before the Client has heard the link
  // went, and retries that take no time would use the budget up before it
  // does (then the acquire rightly throws connection_loss, not the case here).
  auto& a = this->contender([](ClientOptions& o) {
    o.sleeper = std::make_shared<RealSleeper>();
    o.retry_policy = std::make_shared<RetryNTimes>(1000, 10ms);
  });
  auto lock = this->lock_for(a);
  // The link drops right after our create is applied: the listing fails, and
  // the retry has to wait for a connection.
  const auto session = this->session_of(a);
  a.faults->on(test::OpKind::create, kDir + "/").after([&](auto&) {
    this->ensemble_.disconnect(session);
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(lock->try_acquire_for(300ms));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, 2s) << "the Client's connection_timeout is "
                      << a.client->options().connection_timeout.count() << " ms";
  this->ensemble_.reconnect(session);
  // The node whose reply was lost goes in the background once the link is back.
  EXPECT_TRUE(test::wait_children(
      this->raw(), kDir, [](const auto& n) { return n.empty(); }, kWait));
}

TYPED_TEST(LockUnitTest, GrantsInArrivalOrder) {
  auto& holder = this->contender();
  auto first = this->lock_for(holder);
  ASSERT_TRUE(first->try_acquire());

  constexpr int kWaiters = 5;
  std::mutex order_mutex;
  std::vector<int> order;
  std::vector<std::thread> threads;
  std::vector<std::unique_ptr<TypeParam>> locks;
  for (int i = 0; i < kWaiters; ++i) locks.push_back(this->lock_for(this->contender()));
  for (int i = 0; i < kWaiters; ++i) {
    threads.emplace_back([&, i] {
      ASSERT_TRUE(locks[i]->try_acquire_for(kWait));
      {
        std::lock_guard lock(order_mutex);
        order.push_back(i);
      }
      locks[i]->release();
    });
    // The next one queues only once this one has its node: arrival order is i.
    ASSERT_TRUE(this->wait_queue_length(static_cast<std::size_t>(i) + 2));
  }
  first->release();
  for (auto& t : threads) t.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(this->lock_nodes().empty());
}

TYPED_TEST(LockUnitTest, ConnectionLossBeforeTheCreateIsAppliedIsRetried) {
  auto& a = this->contender();
  auto& rule = a.faults->on(OpKind::create, kDir + "/").fail(Errc::connection_loss);
  auto lock = this->lock_for(a);
  ASSERT_TRUE(lock->try_acquire_for(kWait));
  EXPECT_EQ(rule.fired(), 1);
  EXPECT_EQ(a.sleeper->delays().size(), 1u);  // one retry, through the policy
  EXPECT_EQ(this->lock_nodes().size(), 1u);
  lock->release();
  EXPECT_TRUE(this->lock_nodes().empty());
}

TYPED_TEST(LockUnitTest, LostCreateReplyIsFoundAgainAndAdoptedNotDuplicated) {
  auto& holder = this->contender();
  auto held = this->lock_for(holder);
  ASSERT_TRUE(held->try_acquire());

  auto& a = this->contender();
  auto& rule = a.faults->on(OpKind::create, kDir + "/").lose_reply_after_apply();
  auto lock = this->lock_for(a);
  std::thread waiter([&] {
    ASSERT_TRUE(lock->try_acquire_for(kWait));
    lock->release();
  });
  // Our node was applied once and adopted: two nodes, not three.
  ASSERT_TRUE(this->wait_queue_length(2));
  EXPECT_EQ(this->ensemble_.ephemerals_of(this->session_of(a)).size(), 1u);
  held->release();
  waiter.join();
  EXPECT_EQ(rule.fired(), 1);
  EXPECT_TRUE(this->lock_nodes().empty());
}

TYPED_TEST(LockUnitTest, PredecessorDeletedBetweenListingAndWatching) {
  auto& holder = this->contender();
  auto held = this->lock_for(holder);
  ASSERT_TRUE(held->try_acquire());
  const std::string holder_node = held->grant().node_path();

  test::Latch told;
  held->grant().on_lost([&](LostReason) { told.open(); });
  auto& a = this->contender();
  // Right after our listing, before we watch it, the node before ours goes.
  auto& rule = a.faults->on(OpKind::children, kDir).after([&](const test::FaultCall&) {
    this->raw().remove(holder_node);
  });
  auto lock = this->lock_for(a);
  ASSERT_TRUE(lock->try_acquire_for(kWait));
  EXPECT_EQ(rule.fired(), 1);
  // The old holder hears that its node was deleted under it.
  ASSERT_TRUE(told.wait(kWait));
  EXPECT_EQ(held->grant().lost_reason(), LostReason::node_deleted);
  lock->release();
  held->release();
  EXPECT_TRUE(this->lock_nodes().empty());
}

TYPED_TEST(LockUnitTest, ForeignChildrenInTheDirectoryAreIgnored) {
  this->raw().create_parents(kDir + "/x");  // the directory and its parents
  this->raw().create(kDir + "/config", "x");
  this->raw().create(kDir + "/zz-lock-not-a-number");
  auto& a = this->contender();
  auto lock = this->lock_for(a);
  ASSERT_TRUE(lock->try_acquire());
  EXPECT_EQ(lock->participant_nodes().size(), 1u);
  lock->release();
  EXPECT_EQ(this->lock_nodes(), (std::vector<std::string>{"config", "zz-lock-not-a-number"}));
}

TYPED_TEST(LockUnitTest, TimedOutWaiterDeletesItsNode) {
  auto& holder = this->contender();
  auto held = this->lock_for(holder);
  ASSERT_TRUE(held->try_acquire());
  auto& a = this->contender();
  auto lock = this->lock_for(a);
  EXPECT_FALSE(lock->try_acquire());          // one attempt, no wait
  EXPECT_FALSE(lock->try_acquire_for(50ms));  // a short wait
  EXPECT_FALSE(lock->is_acquired_in_this_process());
  ASSERT_TRUE(this->wait_queue_length(1));
  held->release();
  ASSERT_TRUE(this->wait_queue_length(0));
}

TYPED_TEST(LockUnitTest, WaiterWhoseSessionExpiresQueuesAgainAndNeverTrustsTheOldView) {
  auto& holder = this->contender();
  auto held = this->lock_for(holder);
  ASSERT_TRUE(held->try_acquire());
  auto& a = this->contender();
  auto lock = this->lock_for(a);
  std::atomic<bool> acquired{false};
  std::thread waiter([&] {
    ASSERT_TRUE(lock->try_acquire_for(kWait));
    acquired = true;
    EXPECT_FALSE(held->is_acquired_in_this_process());  // only after the holder let go
    lock->release();
  });
  ASSERT_TRUE(this->wait_queue_length(2));
  const auto first_session = this->session_of(a);
  const auto first_node = this->ensemble_.ephemerals_of(first_session);
  ASSERT_EQ(first_node.size(), 1u);
  this->ensemble_.expire(first_session);
  // A new session, a new node behind the holder; the old one is gone.
  ASSERT_TRUE(test::wait_children(
      this->raw(), kDir,
      [&](const auto& names) {
        return names.size() == 2 && std::find(names.begin(), names.end(),
                                              first_node[0].substr(kDir.size() + 1)) == names.end();
      },
      kWait));
  EXPECT_FALSE(acquired);
  EXPECT_EQ(a.client->session_epoch(), 2u);
  held->release();
  waiter.join();
  EXPECT_TRUE(acquired);
  EXPECT_TRUE(this->lock_nodes().empty());
}

TYPED_TEST(LockUnitTest, WaiterFailsWhenRequeueIsOff) {
  auto& holder = this->contender();
  auto held = this->lock_for(holder);
  ASSERT_TRUE(held->try_acquire());
  auto& a = this->contender();
  LockOptions options;
  options.requeue_after_session_loss = false;
  auto lock = this->lock_for(a, options);
  std::thread waiter([&] {
    try {
      (void)lock->try_acquire_for(kWait);
      ADD_FAILURE() << "acquire survived a lost session";
    } catch (const KeeperError& e) {
      EXPECT_EQ(e.errc(), Errc::session_expired);
    }
  });
  ASSERT_TRUE(this->wait_queue_length(2));
  this->ensemble_.expire(this->session_of(a));
  waiter.join();
  ASSERT_TRUE(this->wait_queue_length(1));
  held->release();
}

TYPED_TEST(LockUnitTest, ConnectionLossDuringReleaseDeletesInTheBackground) {
  auto& a = this->contender();
  auto lock = this->lock_for(a);
  ASSERT_TRUE(lock->try_acquire());
  const auto node = lock->grant().node_path();
  const auto session = this->session_of(a);
  this->ensemble_.disconnect(session);
  EXPECT_TRUE(lock->release());  // returns at once, state cleared
  EXPECT_FALSE(lock->is_acquired_in_this_process());
  EXPECT_TRUE(this->ensemble_.exists_now(node));  // the server never heard of it
  this->ensemble_.reconnect(session);
  EXPECT_TRUE(test::wait_gone(this->raw(), node, kWait));
}

TYPED_TEST(LockUnitTest, LostReplyOfTheReleaseDeleteIsRetried) {
  auto& a = this->contender();
  auto lock = this->lock_for(a);
  ASSERT_TRUE(lock->try_acquire());
  const auto node = lock->grant().node_path();
  auto& rule = a.faults->on(OpKind::remove, node).fail(Errc::connection_loss);
  EXPECT_TRUE(lock->release());
  EXPECT_TRUE(test::wait_gone(this->raw(), node, kWait));
  EXPECT_EQ(rule.fired(), 1);
}

TYPED_TEST(LockUnitTest, HolderWhoseSessionExpiresIsToldAndItsGuardedWriteFails) {
  this->raw().create("/resource", "0");
  auto& a = this->contender();
  auto lock = this->lock_for(a);
  ASSERT_TRUE(lock->try_acquire());
  const Grant& grant = lock->grant();
  test::Latch told;
  std::atomic<LostReason> heard{LostReason::none};
  grant.on_lost([&](LostReason why) {
    heard = why;
    told.open();
  });
  auto accepted = guarded_write(*a.client->keeper(), grant, {op::Set{"/resource", "1"}});
  EXPECT_TRUE(accepted.ok());
  auto old_keeper = a.client->keeper();
  this->ensemble_.expire(this->session_of(a));
  ASSERT_TRUE(told.wait(kWait));
  EXPECT_EQ(heard.load(), LostReason::session_lost);
  EXPECT_TRUE(grant.lost_token().stop_requested());
  // Another contender gets the lock; the old holder's write is refused.
  auto& b = this->contender();
  auto other = this->lock_for(b);
  ASSERT_TRUE(other->try_acquire_for(kWait));
  ASSERT_TRUE(a.client->block_until_connected(kWait));
  // Refused either way: by the new session (the lock node is gone) or, if the
  // Client has not yet heard of the expiry its grant's watch reported, by the
  // old session's server (session_expired).
  auto rejected = guarded_write(*a.client->keeper(), grant, {op::Set{"/resource", "2"}});
  EXPECT_EQ(rejected.outcome, GuardedWriteResult::Outcome::lock_lost)
      << to_string(rejected.outcome);
  EXPECT_TRUE(rejected.error == Errc::no_node || rejected.error == Errc::session_expired)
      << errc_name(rejected.error);
  EXPECT_EQ(*this->ensemble_.data_now("/resource"), "1");
  lock->release();
  other->release();
}

TYPED_TEST(LockUnitTest, SuspendedMeansLostUnderTheStandardPolicyOnly) {
  auto& a = this->contender();
  auto& b = this->contender();
  auto standard = std::make_unique<TypeParam>(*a.client, kDir + "-standard");
  LockOptions lenient;
  lenient.suspended_policy = SuspendedPolicy::ignore;
  auto session_only = std::make_unique<TypeParam>(*b.client, kDir + "-session", lenient);
  ASSERT_TRUE(standard->try_acquire());
  ASSERT_TRUE(session_only->try_acquire());
  test::Latch told;
  standard->grant().on_lost([&](LostReason) { told.open(); });
  this->ensemble_.disconnect(this->session_of(a));
  this->ensemble_.disconnect(this->session_of(b));
  ASSERT_TRUE(told.wait(kWait));
  EXPECT_EQ(standard->grant().lost_reason(), LostReason::suspended);
  this->ensemble_.reconnect(this->session_of(b));
  ASSERT_TRUE(b.client->block_until_connected(kWait));
  EXPECT_FALSE(session_only->grant().lost());
  this->ensemble_.reconnect(this->session_of(a));
  standard->release();
  session_only->release();
}

TYPED_TEST(LockUnitTest, BadLockPathsAreRejectedBeforeAnythingIsSent) {
  auto& a = this->contender();
  for (const char* bad : {"", "locks", "/locks/", "/a//b", "/a/./b", "/zookeeper/x", "/"})
    EXPECT_THROW(TypeParam(*a.client, bad), std::invalid_argument) << bad;
  EXPECT_EQ(this->ensemble_.node_count(), 0u);
}

TYPED_TEST(LockUnitTest, HandOffDownALongQueueCostsAFewRequestsPerWaiter) {
  auto& holder = this->contender();
  auto first = this->lock_for(holder);
  ASSERT_TRUE(first->try_acquire());
  constexpr int kWaiters = 12;
  std::vector<std::unique_ptr<TypeParam>> locks;
  std::vector<test::FaultRule*> listings, reads;
  for (int i = 0; i < kWaiters; ++i) {
    auto& waiter = this->contender();
    // Count every listing and single-node read each waiter makes.
    listings.push_back(&waiter.faults->on(OpKind::children, kDir).after([](auto&) {}).times(1000));
    reads.push_back(&waiter.faults->on(OpKind::get, kDir + "/").after([](auto&) {}).times(1000));
    locks.push_back(this->lock_for(waiter));
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < kWaiters; ++i) {
    threads.emplace_back([&, i] {
      ASSERT_TRUE(locks[i]->try_acquire_for(kWait));
      locks[i]->release();
    });
    ASSERT_TRUE(this->wait_queue_length(static_cast<std::size_t>(i) + 2));
  }
  first->release();
  for (auto& t : threads) t.join();
  for (int i = 0; i < kWaiters; ++i) {
    // One listing when it queued, one when the node before it went, however
    // long the queue before it was.
    EXPECT_LE(listings[i]->fired(), 2) << "waiter " << i;
    // Watching the node before ours and our own: a few reads, not one per
    // node ahead.
    EXPECT_LE(reads[i]->fired(), 3) << "waiter " << i;
  }
}

TYPED_TEST(LockUnitTest, AForeignWriteOnAWaitingNodeIsNotTakenForAGrant) {
  auto& holder = this->contender();
  auto held = this->lock_for(holder);
  ASSERT_TRUE(held->try_acquire());
  auto& middle = this->contender();
  auto& last = this->contender();
  auto waiting = this->lock_for(middle);
  auto behind = this->lock_for(last);
  std::thread middle_waits([&] {
    // Its node is deleted under it below: it must queue again, not hold.
    if (waiting->try_acquire_for(kWait)) {
      EXPECT_TRUE(this->ensemble_.exists_now(waiting->grant().node_path()));
      waiting->release();
    }
  });
  ASSERT_TRUE(this->wait_queue_length(2));
  std::atomic<bool> granted{false};
  std::thread last_waits([&] {
    ASSERT_TRUE(behind->try_acquire_for(kWait));
    granted = true;
    behind->release();
  });
  ASSERT_TRUE(this->wait_queue_length(3));
  const std::string middle_node = kDir + "/" + this->queue()[1];
  // Curator's revocation writes into a lock node; here into a waiting one.
  this->raw().set(middle_node, "__REVOKE__");
  // The waiting node then goes (its owner gave up): the real holder still holds.
  this->raw().remove(middle_node);
  ASSERT_TRUE(this->ensemble_.wait_idle());
  EXPECT_FALSE(granted) << "the last waiter skipped the holder";
  EXPECT_TRUE(held->is_acquired_in_this_process());
  held->release();
  last_waits.join();
  EXPECT_TRUE(granted);
  middle_waits.join();
  ASSERT_TRUE(this->wait_queue_length(0));
}

TYPED_TEST(LockUnitTest, WaiterWhoseNodeIsDeletedQueuesAgainInsteadOfHolding) {
  auto& holder = this->contender();
  auto held = this->lock_for(holder);
  ASSERT_TRUE(held->try_acquire());
  auto& a = this->contender();
  auto lock = this->lock_for(a);
  std::atomic<bool> granted{false};
  std::thread waiter([&] {
    ASSERT_TRUE(lock->try_acquire_for(kWait));
    granted = true;
    EXPECT_TRUE(this->ensemble_.exists_now(lock->grant().node_path()))
        << "granted on a node that no longer exists";
    lock->release();
  });
  ASSERT_TRUE(this->wait_queue_length(2));
  this->raw().remove(kDir + "/" + this->queue()[1]);  // the waiter's node
  held->release();
  waiter.join();
  EXPECT_TRUE(granted);
  EXPECT_TRUE(this->lock_nodes().empty());
}

// ---- What differs between the two locks.

class MutexUnitTest : public LockUnitTest<InterProcessMutex> {};

TEST_F(MutexUnitTest, IsReentrantPerThreadAndOnlyTheHolderReleases) {
  auto& a = contender();
  auto lock = lock_for(a);
  ASSERT_TRUE(lock->try_acquire());
  ASSERT_TRUE(lock->try_acquire());  // reentrant: no second node
  EXPECT_EQ(lock_nodes().size(), 1u);
  std::thread other([&] {
    EXPECT_FALSE(lock->is_owned_by_current_thread());
    EXPECT_FALSE(lock->release());  // not the holder: an error, nothing changes
  });
  other.join();
  EXPECT_TRUE(lock->is_owned_by_current_thread());
  EXPECT_TRUE(lock->release());
  EXPECT_TRUE(lock->is_acquired_in_this_process());  // one hold left
  EXPECT_EQ(lock_nodes().size(), 1u);
  EXPECT_TRUE(lock->release());
  EXPECT_FALSE(lock->is_acquired_in_this_process());
  EXPECT_TRUE(lock_nodes().empty());
  EXPECT_FALSE(lock->release());  // double release
  EXPECT_THROW((void)lock->grant(), std::logic_error);
}

TEST_F(MutexUnitTest, WorksWithStandardLockGuards) {
  auto& a = contender();
  auto lock = lock_for(a);
  {
    std::unique_lock guard(*lock, std::defer_lock);
    ASSERT_TRUE(guard.try_lock_for(1s));
    EXPECT_EQ(lock_nodes().size(), 1u);
  }
  EXPECT_TRUE(lock_nodes().empty());
  {
    std::scoped_lock guard(*lock);
    EXPECT_TRUE(lock->is_owned_by_current_thread());
  }
  EXPECT_FALSE(lock->is_acquired_in_this_process());
}

class SemaphoreMutexUnitTest : public LockUnitTest<NonReentrantMutex> {};

TEST_F(SemaphoreMutexUnitTest, IsNotReentrantAndAnyThreadReleases) {
  auto& a = contender();
  auto lock = lock_for(a);
  ASSERT_TRUE(lock->try_acquire());
  EXPECT_FALSE(lock->try_acquire_for(100ms));  // waits behind itself, then gives up
  EXPECT_EQ(lock_nodes().size(), 1u);          // and its second node is gone
  std::thread other([&] { EXPECT_TRUE(lock->release()); });
  other.join();
  EXPECT_FALSE(lock->is_acquired_in_this_process());
  EXPECT_TRUE(lock_nodes().empty());
  EXPECT_FALSE(lock->release());
}

}  // namespace
}  // namespace zkr
