// Lock safety against adversaries and sharing: data another client
// writes into lock nodes, holder texts, two threads on one lock object, grant
// callbacks that call back into the library, and a session lost while the
// next one cannot be opened. Each test failed before its fix.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <stop_token>
#include <thread>

#include "lock_fixture.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using test::Latch;
using test::OpKind;

TYPED_TEST_SUITE(LockUnitTest, LockTypes);

// Signals a latch when the grant is lost, and keeps the reason.
struct LostWatch {
  Latch latch;
  std::atomic<LostReason> reason{LostReason::none};
  void watch(const Grant& grant) {
    grant.on_lost([this](LostReason why) {
      reason = why;
      latch.open();
    });
  }
};

// The library once took node data ending in "\nheld" as its own hand-off
// mark and dropped every node below a marked one. Any client allowed to write
// a node could forge it: a waiter behind a forged node was granted while the
// holder still held.
TYPED_TEST(LockUnitTest, DataWrittenIntoAWaitingNodeNeverSkipsTheHolder) {
  auto& holder = this->contender();
  auto held = this->lock_for(holder);
  ASSERT_TRUE(held->try_acquire());
  auto& middle = this->contender();
  auto& last = this->contender();
  auto waiting = this->lock_for(middle);
  auto behind = this->lock_for(last);
  std::atomic<bool> middle_granted{false};
  std::thread middle_waits([&] {
    // Its node is deleted under it below: it queues again.
    if (waiting->try_acquire_for(kWait)) {
      middle_granted = true;
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
  for (const char* forged : {"x\nheld", "\nheld", "held", "__REVOKE__"})
    this->raw().set(middle_node, forged);
  this->raw().remove(middle_node);
  ASSERT_TRUE(this->ensemble_.wait_idle());
  EXPECT_FALSE(granted) << "a waiter skipped the holder";
  EXPECT_TRUE(held->grant().held());
  held->release();
  last_waits.join();
  EXPECT_TRUE(granted);
  middle_waits.join();
  EXPECT_TRUE(middle_granted);  // it queued again, behind
  ASSERT_TRUE(this->wait_queue_length(0));
}

TYPED_TEST(LockUnitTest, HolderTextWithAControlCharacterOrTooLongIsRefusedUpFront) {
  auto& a = this->contender();
  const auto before = this->ensemble_.last_zxid();
  for (std::string bad :
       {std::string("x\nheld"), std::string("tab\there"), std::string("nul\0x", 5),
        std::string("del\x7f"), std::string(kMaxHolderIdLength + 1, 'h')}) {
    LockOptions options;
    options.holder_id = bad;
    try {
      TypeParam lock(*a.client, kDir, options);
      ADD_FAILURE() << "accepted holder text of " << bad.size() << " bytes";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("holder_id"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(this->ensemble_.last_zxid(), before) << "something was written";
  LockOptions longest;
  longest.holder_id = std::string(kMaxHolderIdLength, '~');
  auto lock = this->lock_for(a, longest);
  ASSERT_TRUE(lock->try_acquire());
  EXPECT_EQ(this->ensemble_.data_now(lock->grant().node_path()), longest.holder_id);
  lock->release();
}

// The own-node watch is one-shot: a data change spent it, and a delete after
// that went unheard, so the holder never learned its lock was gone.
TYPED_TEST(LockUnitTest, TheLostSignalSurvivesAnyNumberOfDataChanges) {
  auto& a = this->contender();
  auto lock = this->lock_for(a);
  ASSERT_TRUE(lock->try_acquire());
  const Grant grant = lock->grant();
  LostWatch lost;
  lost.watch(grant);
  Latch token_stopped;
  std::stop_callback on_stop(grant.lost_token(), [&] { token_stopped.open(); });
  this->raw().set(grant.node_path(), "__REVOKE__");  // what Curator's revoker writes
  for (int i = 0; i < 5; ++i) this->raw().set(grant.node_path(), "scribble " + std::to_string(i));
  ASSERT_TRUE(this->ensemble_.wait_idle());
  EXPECT_FALSE(grant.lost());
  this->raw().remove(grant.node_path());
  ASSERT_TRUE(lost.latch.wait(kWait)) << "the delete went unheard";
  EXPECT_EQ(lost.reason, LostReason::node_deleted);
  EXPECT_TRUE(grant.lost());
  EXPECT_TRUE(token_stopped.wait(kWait));
  lock->release();
}

TYPED_TEST(LockUnitTest, ARevocationRequestIsVisibleToTheHolder) {
  auto& a = this->contender();
  auto lock = this->lock_for(a);
  ASSERT_TRUE(lock->try_acquire());
  const Grant grant = lock->grant();
  Latch requested;
  std::atomic<int> requests{0};
  grant.on_revocation_requested([&] {
    ++requests;
    requested.open();
  });
  this->raw().set(grant.node_path(), "not a request");
  this->raw().set(grant.node_path(), "__REVOKE__");  // what Curator's Revoker writes
  ASSERT_TRUE(requested.wait(kWait));
  EXPECT_TRUE(grant.revocation_requested());
  EXPECT_TRUE(grant.held()) << "a request is only a request";
  // Seen once; a callback added later runs at once.
  this->raw().set(grant.node_path(), "__REVOKE__");
  Latch late;
  grant.on_revocation_requested([&] { late.open(); });
  EXPECT_TRUE(late.wait(kWait));
  EXPECT_EQ(requests, 1);
  lock->release();
  EXPECT_TRUE(grant.released());
  EXPECT_FALSE(grant.lost()) << "a release is not a loss";
}

// The own-node watch's first reply may say the node is already gone: no watch
// is armed then, so the reply must be acted on by itself, not only when
// someone asks lost().
TYPED_TEST(LockUnitTest, TheLostTokenStopsWhenTheFirstReplySaysTheNodeIsGone) {
  auto& a = this->contender();
  auto lock = this->lock_for(a);
  this->raw().create("/locks");  // so that the first listing is the granting one
  // Between the listing that grants the lock and the watch on our node,
  // someone deletes our node.
  a.faults->on(OpKind::children, kDir).after([&](auto&) {
    for (const auto& name : this->ensemble_.children_now(kDir))
      this->raw().remove(kDir + "/" + name);
  });
  ASSERT_TRUE(lock->try_acquire());
  Latch stopped;
  std::stop_callback on_stop(lock->grant().lost_token(), [&] { stopped.open(); });
  EXPECT_TRUE(stopped.wait(kWait));
  EXPECT_EQ(lock->grant().lost_reason(), LostReason::node_deleted);
  lock->release();
}

// on_lost callbacks ran on the keeper's event thread: one that released the
// lock waited for a reply only that thread could deliver, and the whole
// session stood still.
TYPED_TEST(LockUnitTest, ALostCallbackMayReleaseAndTakeAnotherLock) {
  auto& a = this->contender();
  auto lock = this->lock_for(a);
  auto other = std::make_unique<TypeParam>(*a.client, kDir + "-other");
  ASSERT_TRUE(lock->try_acquire());
  const Grant grant = lock->grant();
  Latch done;
  std::atomic<bool> released{false}, took_other{false};
  std::atomic<bool> session_answered{false};
  grant.on_lost([&](LostReason) {
    // The session still answers while a callback runs.
    try {
      (void)a.client->keeper()->exists("/", {}, 2s);
      session_answered = true;
    } catch (const KeeperError&) {
    }
    // Only the semaphore mutex may be released by another thread; the
    // mutex refuses at once, and neither may block the session.
    released = lock->release();
    took_other = other->try_acquire_for(kWait);
    if (took_other) other->release();
    done.open();
  });
  this->raw().remove(grant.node_path());
  ASSERT_TRUE(done.wait(kWait));
  EXPECT_TRUE(session_answered) << "the callback held up the session's replies";
  EXPECT_EQ(released, (std::is_same_v<TypeParam, NonReentrantMutex>));
  EXPECT_TRUE(took_other);
  EXPECT_FALSE(other->is_acquired_in_this_process());
  if (!released) {
    EXPECT_TRUE(lock->release());
  }
  EXPECT_TRUE(grant.lost());
}

TYPED_TEST(LockUnitTest, ACallbackThatThrowsDoesNotStopTheOthers) {
  auto& a = this->contender();
  auto lock = this->lock_for(a);
  ASSERT_TRUE(lock->try_acquire());
  const Grant grant = lock->grant();
  Latch second;
  grant.on_lost([](LostReason) { throw std::runtime_error("a careless callback"); });
  grant.on_lost([&](LostReason) { second.open(); });
  this->raw().remove(grant.node_path());
  EXPECT_TRUE(second.wait(kWait));
  // Registered after the loss: it runs too, on the callback thread.
  Latch late;
  grant.on_lost([&](LostReason) { late.open(); });
  EXPECT_TRUE(late.wait(kWait));
  lock->release();
}

// A create whose reply was lost and that the recovery listing does not show
// may still be applied later. The next create used the same name, so the late
// one became a second node of ours, queued ahead of us.
TYPED_TEST(LockUnitTest, ACreateAppliedAfterWeGaveItUpIsDeletedNotQueued) {
  auto& a = this->contender();
  auto lock = this->lock_for(a);
  this->raw().create("/locks");  // so that the directory is made in the first round
  std::string given_up;          // the protected prefix of the create that "failed"
  a.faults->on(OpKind::create, kDir + "/_c_").fail(Errc::connection_loss).after([&](auto& call) {
    given_up = call.path;
  });
  int listings = 0;
  a.faults->on(OpKind::children, kDir).times(2).after([&](auto&) {
    // The second listing is the recovery's: it saw nothing, and only now
    // is the old create applied, in our session.
    if (++listings == 2) {
      try {
        auto& ours = dynamic_cast<test::FaultKeeper&>(*a.client->keeper());
        ours.inner().create(given_up, "late", CreateMode::ephemeral_sequential);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "could not create the late node " << given_up << ": " << e.what();
      }
    }
  });
  ASSERT_TRUE(lock->try_acquire_for(kWait));
  ASSERT_EQ(listings, 2);
  const auto ours = node_name(lock->grant().node_path());
  EXPECT_EQ(ours.find(node_name(given_up)), std::string::npos) << "the old name was used again";
  ASSERT_TRUE(test::wait_children(
      this->raw(), kDir,
      [&](const auto& names) { return names == std::vector<std::string>{std::string(ours)}; },
      kWait))
      << "the late node was not deleted";
  lock->release();
  ASSERT_TRUE(this->wait_queue_length(0));
}

// A timed acquire whose lock-node create never reached the server used to
// leave the directory it had created behind: a container that never had a
// child, which the server never reaps.
TYPED_TEST(LockUnitTest, AGivenUpAcquireLeavesNoDirectoryBehind) {
  auto& a = this->contender();
  auto lock = this->lock_for(a);
  a.faults->on(OpKind::create, kDir + "/_c_").fail(Errc::connection_loss).times(1000);
  EXPECT_FALSE(lock->try_acquire());
  EXPECT_TRUE(test::wait_gone(this->raw(), kDir, kWait));
}

// A timed acquire whose reply stalls waits at most a session timeout past its
// deadline in all: the cleanup after it (deleting our node) is bounded by the
// same time, where it used to wait a whole session timeout more.
TYPED_TEST(LockUnitTest, ATimedAcquireEndsAtMostOneSessionTimeoutPastItsDeadline) {
  auto& holder = this->contender();
  auto held = this->lock_for(holder);
  ASSERT_TRUE(held->try_acquire());
  auto& a = this->contender();
  auto lock = this->lock_for(a);
  Latch replies_may_go;
  // The reply to the waiter's read of the holder's node is held back, and
  // every reply after it (they come in order): the link is as good as dead.
  a.faults->on(OpKind::get, held->grant().node_path()).after([&](auto&) {
    (void)replies_may_go.wait(3 * kWait);
  });
  const auto timeout = a.client->keeper()->default_timeout();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(lock->try_acquire_for(200ms));
  const auto took = std::chrono::steady_clock::now() - start;
  replies_may_go.open();
  EXPECT_LT(took, 200ms + timeout + 1500ms) << "the cleanup added another session timeout";
  held->release();
  ASSERT_TRUE(this->wait_queue_length(0));  // our node went in the background
}

// ---- Delete nothing that is not ours.

// Locking an existing node is common with Curator users; a release removed
// the lock path itself, data and all.
TYPED_TEST(LockUnitTest, AReleaseNeverRemovesALockPathItDidNotMake) {
  this->raw().create("/locks");
  this->raw().create(kDir, "config=important");
  this->raw().create(kDir + "-empty");  // someone's empty node: not ours either
  auto& a = this->contender();
  auto lock = this->lock_for(a);
  auto other = std::make_unique<TypeParam>(*a.client, kDir + "-empty");
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(lock->try_acquire());
    ASSERT_TRUE(other->try_acquire());
    lock->release();
    other->release();
  }
  ASSERT_TRUE(this->ensemble_.wait_idle());
  EXPECT_EQ(this->ensemble_.data_now(kDir), "config=important");
  EXPECT_TRUE(this->ensemble_.exists_now(kDir + "-empty"));
  EXPECT_TRUE(this->lock_nodes().empty());
}

// The last one out removes a directory of ours, whoever made it.
TYPED_TEST(LockUnitTest, TheLastReleaseRemovesADirectoryAnotherContenderMade) {
  auto& a = this->contender();
  auto& b = this->contender();
  auto first = this->lock_for(a);
  auto second = this->lock_for(b);
  ASSERT_TRUE(first->try_acquire());  // makes the directory
  Latch granted, may_release;
  std::thread waiter([&] {
    ASSERT_TRUE(second->try_acquire_for(kWait));
    granted.open();
    ASSERT_TRUE(may_release.wait(kWait));
    EXPECT_TRUE(second->release());  // on the holding thread, as the mutex wants
  });
  ASSERT_TRUE(this->wait_queue_length(2));
  first->release();  // someone queues: the directory stays
  ASSERT_TRUE(granted.wait(kWait));
  EXPECT_TRUE(this->ensemble_.exists_now(kDir));
  may_release.open();
  waiter.join();
  EXPECT_TRUE(test::wait_gone(this->raw(), kDir, kWait));
}

// A directory of ours that someone wrote to since is theirs now: kept.
TYPED_TEST(LockUnitTest, ADirectoryWrittenToSinceItsProofIsKept) {
  auto& a = this->contender();
  auto lock = this->lock_for(a);
  ASSERT_TRUE(lock->try_acquire());
  this->raw().set(kDir, "now it holds something");
  lock->release();
  ASSERT_TRUE(this->ensemble_.wait_idle());
  EXPECT_EQ(this->ensemble_.data_now(kDir), "now it holds something");
  EXPECT_TRUE(this->lock_nodes().empty());
}

// ---- Two threads on one lock object.

class SemaphoreMutexSharingTest : public LockUnitTest<NonReentrantMutex> {};

// One grant slot was overwritten by the next grant: the thread whose hold was
// lost then read the new holder's grant (its guarded writes passed) and its
// release deleted the new holder's node.
TEST_F(SemaphoreMutexSharingTest, AGrantNeverOverwritesAnotherAndReleasesGoOldestFirst) {
  auto& a = contender();
  auto shared = lock_for(a);
  ASSERT_TRUE(shared->try_acquire());
  const Grant first = shared->grant();
  std::optional<Grant> second;
  Latch granted;
  std::thread b([&] {
    ASSERT_TRUE(shared->try_acquire_for(kWait));
    second.emplace(shared->grant());
    granted.open();
  });
  ASSERT_TRUE(wait_queue_length(2));
  raw().remove(first.node_path());  // the first hold is lost, not released
  ASSERT_TRUE(granted.wait(kWait));
  b.join();
  EXPECT_TRUE(first.lost());
  EXPECT_EQ(first.lost_reason(), LostReason::node_deleted);
  ASSERT_TRUE(second->held());
  EXPECT_NE(first.node_path(), second->node_path());
  EXPECT_LT(first.fencing_token(), second->fencing_token());
  // The lost holder's write is refused; the new holder's goes through.
  auto& keeper = *a.client->keeper();
  EXPECT_EQ(guarded_write(keeper, first,
                          {op::Create{"/written-by-first", "", CreateMode::persistent, {}}})
                .error,
            Errc::no_node);
  EXPECT_TRUE(guarded_write(keeper, *second,
                            {op::Create{"/written-by-second", "", CreateMode::persistent, {}}})
                  .ok());
  // The thread whose hold was lost releases: its own grant goes, not the new one.
  EXPECT_TRUE(shared->release());
  EXPECT_TRUE(first.released() || first.lost());
  EXPECT_TRUE(second->held());
  EXPECT_TRUE(ensemble_.exists_now(second->node_path()));
  EXPECT_EQ(shared->grant().node_path(), second->node_path());
  EXPECT_TRUE(shared->release());
  EXPECT_TRUE(second->released());
  EXPECT_FALSE(shared->release());
  ASSERT_TRUE(wait_queue_length(0));
  // A released grant is refused without a round trip.
  EXPECT_EQ(
      guarded_write(keeper, *second, {op::Create{"/late", "", CreateMode::persistent, {}}}).error,
      Errc::no_node);
  EXPECT_FALSE(ensemble_.exists_now("/late"));
}

class MutexSharingTest : public LockUnitTest<InterProcessMutex> {};

TEST_F(MutexSharingTest, AThreadWhoseHoldWasLostReleasesOnlyItsOwn) {
  auto& a = contender();
  auto shared = lock_for(a);
  ASSERT_TRUE(shared->try_acquire());
  const Grant first = shared->grant();
  Latch granted, may_release;
  std::optional<Grant> second;
  std::thread b([&] {
    ASSERT_TRUE(shared->try_acquire_for(kWait));
    second.emplace(shared->grant());
    granted.open();
    ASSERT_TRUE(may_release.wait(kWait));
    EXPECT_TRUE(shared->release());
  });
  ASSERT_TRUE(wait_queue_length(2));
  raw().remove(first.node_path());
  ASSERT_TRUE(granted.wait(kWait));
  EXPECT_TRUE(first.lost());
  EXPECT_EQ(shared->grant().node_path(), first.node_path()) << "each thread has its own grant";
  EXPECT_TRUE(shared->release());
  EXPECT_TRUE(second->held());
  EXPECT_TRUE(ensemble_.exists_now(second->node_path()));
  may_release.open();
  b.join();
  ASSERT_TRUE(wait_queue_length(0));
}

// ---- A lost session is a lost grant, whatever the next session does.

// When suspended outlasted the session timeout the Client announced lost, but
// if opening the next session failed (the factory throws, as the real one
// does for a host name that does not resolve) the epoch stayed put and the
// old handle open: under SuspendedPolicy::ignore the grant stayed "held"
// while the server deleted its node.
TEST(LockSessionLoss, ALeaseIsLostWhenItsSessionEndsEvenIfTheNextCannotBeOpened) {
  test::FakeEnsemble ensemble;
  auto inner = ensemble.factory();
  std::atomic<int> calls{0};
  std::shared_ptr<Keeper> first;
  ClientOptions options;
  options.connect_string = "127.0.0.1:2181";
  options.session_timeout = 300ms;
  options.keeper_factory = [&](const KeeperConfig& config, SessionCallback on_state) {
    if (++calls == 2) throw std::invalid_argument("host name does not resolve");
    return inner(config, std::move(on_state));
  };
  Client client(options);
  ASSERT_TRUE(client.block_until_connected(kWait));
  LockOptions lock_options;
  lock_options.suspended_policy = SuspendedPolicy::ignore;
  InterProcessMutex lock(client, kDir, lock_options);
  ASSERT_TRUE(lock.try_acquire());
  const Grant grant = lock.grant();
  LostWatch lost;
  lost.watch(grant);
  const auto session = client.keeper()->session_id();
  ensemble.disconnect(session);
  ASSERT_TRUE(lost.latch.wait(kWait)) << "the grant outlived its session";
  EXPECT_EQ(lost.reason, LostReason::session_lost);
  EXPECT_GT(client.session_epoch(), grant.session_epoch());
  // The old handle was closed, so the server has let its nodes go.
  EXPECT_TRUE(ensemble.ephemerals_of(session).empty());
  // The next try opens a session (the one before it failed), and the lock
  // can be had again.
  ASSERT_TRUE(client.block_until_connected(kWait));
  EXPECT_GE(calls.load(), 3);
  lock.release();
  ASSERT_TRUE(lock.try_acquire_for(kWait));
  lock.release();
}

}  // namespace
}  // namespace zkr
