// The asynchronous acquire (GuardForms::async_acquire_guard) on the
// in-memory ensemble: many waiters queue on no threads of their own and are
// granted one at a time in the order they asked; a stop at each stage of the
// attempt (our create's reply on its way, while waiting, as the grant's
// listing comes back) leaves the queue with nothing left behind; a lost
// session grants nobody from it; the lock object may go first; a Client
// destroyed under waiting acquires ends them with `closing`.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <stop_token>
#include <vector>

#include "lock_fixture.hpp"
#include "support/process_state.hpp"
#include "zkr/read_write_lock.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using test::Latch;
using test::OpKind;

// What one asynchronous acquire ended in, delivered once.
struct Ended {
  std::exception_ptr error;
  LockGuard guard;
};

// Starts an asynchronous acquire and hands its outcome over as a future.
template <class Lock>
std::future<Ended> start(Lock& lock, std::optional<std::chrono::steady_clock::time_point> deadline,
                         std::stop_token stop = {}) {
  auto done = std::make_shared<std::promise<Ended>>();
  auto ended = done->get_future();
  lock.async_acquire_guard(deadline, std::move(stop),
                           [done](std::exception_ptr error, LockGuard guard) {
                             done->set_value(Ended{std::move(error), std::move(guard)});
                           });
  return ended;
}

std::chrono::steady_clock::time_point in(std::chrono::milliseconds d) {
  return std::chrono::steady_clock::now() + d;
}

template <class Lock>
using LockAsyncTest = LockUnitTest<Lock>;

TYPED_TEST_SUITE(LockAsyncTest, LockTypes);

TYPED_TEST(LockAsyncTest, AnUncontendedAcquireGrantsAGuard) {
  auto lock = this->lock_for(this->contender());
  auto ended = start(*lock, std::nullopt);
  ASSERT_EQ(ended.wait_for(kWait), std::future_status::ready);
  auto out = ended.get();
  EXPECT_FALSE(out.error);
  ASSERT_TRUE(out.guard);
  EXPECT_FALSE(out.guard.grant().lost());
  EXPECT_EQ(this->lock_nodes().size(), 1u);
  EXPECT_FALSE(lock->is_acquired_in_this_process());  // the guard's, not the lock's
  EXPECT_TRUE(out.guard.unlock());
  EXPECT_TRUE(this->next_is_granted_at_once());
}

// 300 waiters on one Client, queued behind a holder: no thread each, every
// one granted in the order it asked, never two at once.
TYPED_TEST(LockAsyncTest, ManyWaitersQueueOnNoThreadsAndAreGrantedInTurn) {
  constexpr int kWaiters = 300;
  auto held = this->lock_for(this->contender());
  ASSERT_TRUE(held->try_acquire());
  auto& c = this->contender();
  auto lock = this->lock_for(c);
  const auto threads_before = test::thread_baseline();

  // Each grant, as its handler saw it: who, its node, and the queue's head
  // on the server at that moment (ours, if nobody else holds).
  struct Seen {
    int waiter;
    std::string node;
    std::string head;
    std::int64_t token;
  };
  std::mutex mutex;
  std::vector<Seen> grants;  // guarded by mutex
  std::promise<void> all_done;
  for (int i = 0; i < kWaiters; ++i)
    lock->async_acquire_guard(std::nullopt, {}, [&, i](std::exception_ptr error, LockGuard guard) {
      Seen seen{i, "", "", 0};
      if (error || !guard) {
        ADD_FAILURE() << "waiter " << i << " was not granted";
      } else {
        const auto grant = guard.grant();
        seen.node = grant.node_path();
        seen.token = grant.fencing_token();
        const auto queue = this->queue();
        seen.head = queue.empty() ? "" : kDir + "/" + queue.front();
        EXPECT_FALSE(grant.lost()) << "waiter " << i;
      }
      std::lock_guard hold(mutex);
      grants.push_back(seen);
      if (grants.size() == kWaiters) all_done.set_value();
      // The guard goes here: released, which grants the next.
    });
  ASSERT_TRUE(this->wait_queue_length(kWaiters + 1));
  EXPECT_LE(test::thread_count(), threads_before);  // not a thread per waiter
  EXPECT_TRUE(held->release());
  ASSERT_EQ(all_done.get_future().wait_for(60s), std::future_status::ready);
  std::lock_guard guard(mutex);
  for (int i = 0; i < kWaiters; ++i) {
    EXPECT_EQ(grants[i].waiter, i);             // in the order they asked
    EXPECT_EQ(grants[i].node, grants[i].head);  // nobody before it: no two holders
    if (i > 0) {
      EXPECT_GT(grants[i].token, grants[i - 1].token);
    }
  }
  EXPECT_TRUE(this->wait_queue_length(0));
}

TYPED_TEST(LockAsyncTest, AStopBeforeTheCallSendsNothing) {
  auto lock = this->lock_for(this->contender());
  std::stop_source stop;
  stop.request_stop();
  auto ended = start(*lock, std::nullopt, stop.get_token());
  ASSERT_EQ(ended.wait_for(0s), std::future_status::ready);  // called back at once
  auto out = ended.get();
  EXPECT_FALSE(out.error);
  EXPECT_FALSE(out.guard);
  EXPECT_FALSE(this->raw().exists(kDir).has_value());
}

TYPED_TEST(LockAsyncTest, AStopWithTheCreatesReplyOnItsWayDeletesOurNode) {
  auto& c = this->contender();
  auto lock = this->lock_for(c);
  std::stop_source stop;
  auto& rule = c.faults->on(OpKind::create, kDir + "/").after([&](auto&) { stop.request_stop(); });
  auto ended = start(*lock, std::nullopt, stop.get_token());
  ASSERT_EQ(ended.wait_for(kWait), std::future_status::ready);
  auto out = ended.get();
  EXPECT_EQ(rule.fired(), 1);
  EXPECT_FALSE(out.error);
  EXPECT_FALSE(out.guard);
  EXPECT_TRUE(this->no_ephemerals_of(c));
  EXPECT_TRUE(this->next_is_granted_at_once());
}

TYPED_TEST(LockAsyncTest, AStopWhileWaitingLeavesTheQueueAtOnce) {
  auto held = this->lock_for(this->contender());
  ASSERT_TRUE(held->try_acquire());
  auto& w = this->contender();
  auto waiting = this->lock_for(w);
  Latch watching;
  w.faults->on(OpKind::get, kDir + "/" + this->queue().at(0)).after([&](auto&) {
    watching.open();
  });
  std::stop_source stop;
  auto ended = start(*waiting, in(60s), stop.get_token());
  ASSERT_TRUE(watching.wait(kWait));
  ASSERT_TRUE(this->ensemble_.wait_idle());
  EXPECT_EQ(ended.wait_for(50ms), std::future_status::timeout);  // it waits, as it should
  const auto asked = std::chrono::steady_clock::now();
  stop.request_stop();
  ASSERT_EQ(ended.wait_for(kWait), std::future_status::ready);
  EXPECT_LT(std::chrono::steady_clock::now() - asked, 2s);  // the session timeout is 4 s
  auto out = ended.get();
  EXPECT_FALSE(out.error);
  EXPECT_FALSE(out.guard);
  EXPECT_TRUE(this->no_ephemerals_of(w));
  EXPECT_EQ(this->lock_nodes().size(), 1u);  // the holder's
  EXPECT_TRUE(held->release());
  EXPECT_TRUE(this->next_is_granted_at_once());
}

TYPED_TEST(LockAsyncTest, AStopAsTheGrantComesGivesTheLockOn) {
  auto held = this->lock_for(this->contender());
  ASSERT_TRUE(held->try_acquire());
  auto& w = this->contender();
  auto waiting = this->lock_for(w);
  std::stop_source stop;
  Latch queued;
  w.faults->on(OpKind::children, kDir).after([&](auto&) { queued.open(); });
  auto& granting = w.faults->on(OpKind::children, kDir).after([&](auto&) { stop.request_stop(); });
  auto ended = start(*waiting, in(kWait), stop.get_token());
  ASSERT_TRUE(queued.wait(kWait));
  ASSERT_TRUE(this->wait_queue_length(2));
  EXPECT_TRUE(held->release());
  ASSERT_EQ(ended.wait_for(kWait), std::future_status::ready);
  auto out = ended.get();
  EXPECT_EQ(granting.fired(), 1);
  EXPECT_FALSE(out.error);
  EXPECT_FALSE(out.guard);
  EXPECT_TRUE(this->no_ephemerals_of(w));
  EXPECT_TRUE(this->next_is_granted_at_once());
}

TYPED_TEST(LockAsyncTest, TheDeadlineEndsTheWaitOnTheTimerAndLeavesNothing) {
  auto held = this->lock_for(this->contender());
  ASSERT_TRUE(held->try_acquire());
  auto& w = this->contender();
  auto waiting = this->lock_for(w);
  const auto deadline = in(200ms);
  auto ended = start(*waiting, deadline);
  ASSERT_EQ(ended.wait_for(kWait), std::future_status::ready);
  EXPECT_GE(std::chrono::steady_clock::now(), deadline);
  auto out = ended.get();
  EXPECT_FALSE(out.error);
  EXPECT_FALSE(out.guard);
  EXPECT_TRUE(this->no_ephemerals_of(w));
  EXPECT_TRUE(held->release());
}

// Waiters queued on a session that expires: none is granted from it; each
// queues again on the next session, and is granted there in turn.
TYPED_TEST(LockAsyncTest, ASessionLostWhileWaitersQueueGrantsNoneFromIt) {
  constexpr int kWaiters = 20;
  auto held = this->lock_for(this->contender());
  ASSERT_TRUE(held->try_acquire());
  auto& w = this->contender();
  auto lock = this->lock_for(w);
  const auto first_session = this->session_of(w);
  // Each is released as soon as granted: they queue again in whatever
  // order their attempts see the new session, not the order they asked.
  struct Granted {
    bool ok = false;
    std::uint64_t epoch = 0;
  };
  std::vector<std::future<Granted>> ended;
  for (int i = 0; i < kWaiters; ++i) {
    auto done = std::make_shared<std::promise<Granted>>();
    ended.push_back(done->get_future());
    lock->async_acquire_guard(in(60s), {}, [done](std::exception_ptr error, LockGuard guard) {
      Granted granted;
      granted.ok = !error && guard;
      if (granted.ok) granted.epoch = guard.grant().session_epoch();
      done->set_value(granted);
    });
  }
  ASSERT_TRUE(this->wait_queue_length(kWaiters + 1));
  this->ensemble_.expire(first_session);
  // They queue again on the next session before the holder lets go.
  ASSERT_TRUE(this->wait_queue_length(kWaiters + 1));
  ASSERT_NE(this->session_of(w), first_session);
  EXPECT_TRUE(held->release());
  for (auto& e : ended) {
    ASSERT_EQ(e.wait_for(kWait), std::future_status::ready);
    const auto granted = e.get();
    EXPECT_TRUE(granted.ok);
    EXPECT_GT(granted.epoch, 1u);  // not the first session's
  }
  EXPECT_TRUE(this->wait_queue_length(0));
}

// The lock object is not needed once the acquire is under way.
TYPED_TEST(LockAsyncTest, TheLockObjectMayGoBeforeTheGrant) {
  auto held = this->lock_for(this->contender());
  ASSERT_TRUE(held->try_acquire());
  auto waiting = this->lock_for(this->contender());
  auto ended = start(*waiting, in(kWait));
  ASSERT_TRUE(this->wait_queue_length(2));
  waiting.reset();
  EXPECT_TRUE(held->release());
  ASSERT_EQ(ended.wait_for(kWait), std::future_status::ready);
  auto out = ended.get();
  ASSERT_TRUE(out.guard);
  EXPECT_EQ(this->lock_nodes().size(), 1u);
  EXPECT_TRUE(out.guard.unlock());
  EXPECT_TRUE(this->wait_queue_length(0));
}

TYPED_TEST(LockAsyncTest, AClientDestroyedUnderWaitersEndsThemWithClosing) {
  auto held = this->lock_for(this->contender());
  ASSERT_TRUE(held->try_acquire());
  auto& w = this->contender();
  auto lock = this->lock_for(w);
  auto forever = start(*lock, std::nullopt);
  auto timed = start(*lock, in(60s));
  ASSERT_TRUE(this->wait_queue_length(3));
  w.client.reset();
  for (auto* e : {&forever, &timed}) {
    ASSERT_EQ(e->wait_for(kWait), std::future_status::ready);
    auto out = e->get();
    EXPECT_FALSE(out.guard);
    ASSERT_TRUE(out.error);
    try {
      std::rethrow_exception(out.error);
    } catch (const KeeperError& error) {
      EXPECT_EQ(error.errc(), Errc::closing) << error.what();
      EXPECT_EQ(error.path(), kDir) << error.what();
    }
  }
  EXPECT_EQ(this->lock_nodes().size(), 1u);  // the holder's
  EXPECT_TRUE(held->release());
}

// The read/write lock's sides have the asynchronous form too: readers wait
// for the writer, then are granted together.
using ReadWriteAsyncTest = LockUnitTest<InterProcessMutex>;

TEST_F(ReadWriteAsyncTest, ReadersWaitForTheWriterThenShare) {
  InterProcessReadWriteLock writer(*contender().client, kDir);
  InterProcessReadWriteLock readers(*contender().client, kDir);
  ASSERT_TRUE(writer.write_lock().try_acquire());
  auto first = start(readers.read_lock(), in(kWait));
  auto second = start(readers.read_lock(), in(kWait));
  ASSERT_TRUE(wait_queue_length(3));
  EXPECT_EQ(first.wait_for(50ms), std::future_status::timeout);
  EXPECT_TRUE(writer.write_lock().release());
  ASSERT_EQ(first.wait_for(kWait), std::future_status::ready);
  ASSERT_EQ(second.wait_for(kWait), std::future_status::ready);
  auto a = first.get();
  auto b = second.get();
  ASSERT_TRUE(a.guard);
  ASSERT_TRUE(b.guard);
  EXPECT_EQ(lock_nodes().size(), 2u);  // both readers hold at once
  auto write = start(writer.write_lock(), in(200ms));
  ASSERT_EQ(write.wait_for(kWait), std::future_status::ready);
  EXPECT_FALSE(write.get().guard);  // not while they read
  EXPECT_TRUE(a.guard.unlock());
  EXPECT_TRUE(b.guard.unlock());
  EXPECT_TRUE(wait_queue_length(0));
}

}  // namespace
}  // namespace zkr
