// Cancelling an acquire with a std::stop_token, on the in-memory
// ensemble, at each stage of the attempt: before anything is sent, with our
// create's reply on its way, while we wait for our turn, and as the listing
// that would grant us the lock comes back. Every time the acquire returns
// false, our node is gone, and the lock goes to whoever is next.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <stop_token>
#include <thread>

#include "lock_fixture.hpp"
#include "zkr/multi_lock.hpp"
#include "zkr/read_write_lock.hpp"
#include "zkr/semaphore.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using test::Latch;
using test::OpKind;

template <class Lock>
using LockCancelTest = LockUnitTest<Lock>;

TYPED_TEST_SUITE(LockCancelTest, LockTypes);

TYPED_TEST(LockCancelTest, AStopBeforeTheCallSendsNothing) {
  auto& c = this->contender();
  auto lock = this->lock_for(c);
  std::stop_source stop;
  stop.request_stop();
  EXPECT_FALSE(lock->try_acquire_for(kWait, stop.get_token()));
  EXPECT_FALSE(lock->acquire(stop.get_token()));
  EXPECT_FALSE(lock->try_acquire_until(std::chrono::steady_clock::now() + kWait, stop.get_token()));
  EXPECT_FALSE(lock->is_acquired_in_this_process());
  // Not even the lock directory was made.
  EXPECT_FALSE(this->raw().exists(kDir).has_value());
}

// Uncontended: the create and the listing would grant it, but the stop came
// while their replies were on the way.
TYPED_TEST(LockCancelTest, AStopWithTheCreatesReplyOnItsWayDeletesOurNode) {
  auto& c = this->contender();
  auto lock = this->lock_for(c);
  std::stop_source stop;
  auto& rule = c.faults->on(OpKind::create, kDir + "/").after([&](auto&) { stop.request_stop(); });
  EXPECT_FALSE(lock->try_acquire_for(kWait, stop.get_token()));
  EXPECT_EQ(rule.fired(), 1);
  EXPECT_FALSE(lock->is_acquired_in_this_process());
  EXPECT_TRUE(this->no_ephemerals_of(c));
  EXPECT_TRUE(this->lock_nodes().empty());
  EXPECT_TRUE(this->next_is_granted_at_once());
}

// The stop leaves the queue at once: well before the deadline, while the
// holder still holds.
TYPED_TEST(LockCancelTest, AStopWhileWaitingLeavesTheQueueAtOnce) {
  auto held = this->lock_for(this->contender());
  ASSERT_TRUE(held->try_acquire());
  auto& w = this->contender();
  auto waiting = this->lock_for(w);
  // Stopped once it watches the holder's node, so that it is the wait
  // itself that the stop must end.
  Latch watching;
  w.faults->on(OpKind::get, kDir + "/" + this->queue().at(0)).after([&](auto&) {
    watching.open();
  });
  std::stop_source stop;
  bool granted = true;
  std::jthread waiter([&] { granted = waiting->try_acquire_for(60s, stop.get_token()); });
  ASSERT_TRUE(watching.wait(kWait));
  ASSERT_TRUE(this->ensemble_.wait_idle());  // the reply is delivered
  const auto asked = std::chrono::steady_clock::now();
  stop.request_stop();
  waiter.join();
  EXPECT_LT(std::chrono::steady_clock::now() - asked, 2s);  // the session timeout is 4 s
  EXPECT_FALSE(granted);
  EXPECT_TRUE(this->no_ephemerals_of(w));
  EXPECT_EQ(this->lock_nodes().size(), 1u);  // the holder's
  EXPECT_TRUE(held->is_acquired_in_this_process());
  EXPECT_TRUE(held->release());
  EXPECT_TRUE(this->next_is_granted_at_once());
}

// The holder goes; the listing that would grant the waiter comes back, and
// the stop came with it: the waiter gives the lock on instead of taking it.
TYPED_TEST(LockCancelTest, AStopAsTheGrantComesGivesTheLockOn) {
  auto held = this->lock_for(this->contender());
  ASSERT_TRUE(held->try_acquire());
  auto& w = this->contender();
  auto waiting = this->lock_for(w);
  std::stop_source stop;
  Latch queued;
  w.faults->on(OpKind::children, kDir).after([&](auto&) { queued.open(); });
  auto& granting = w.faults->on(OpKind::children, kDir).after([&](auto&) { stop.request_stop(); });
  bool granted = true;
  std::jthread waiter([&] { granted = waiting->try_acquire_for(kWait, stop.get_token()); });
  ASSERT_TRUE(queued.wait(kWait));
  ASSERT_TRUE(this->wait_queue_length(2));
  EXPECT_TRUE(held->release());
  waiter.join();
  EXPECT_EQ(granting.fired(), 1);
  EXPECT_FALSE(granted);
  EXPECT_FALSE(waiting->is_acquired_in_this_process());
  EXPECT_TRUE(this->no_ephemerals_of(w));
  EXPECT_TRUE(this->next_is_granted_at_once());
}

// A stop that comes after the grant changes nothing: the lock is held.
TYPED_TEST(LockCancelTest, AStopAfterTheGrantDoesNotReleaseIt) {
  auto& c = this->contender();
  auto lock = this->lock_for(c);
  std::stop_source stop;
  ASSERT_TRUE(lock->acquire(stop.get_token()));
  stop.request_stop();
  EXPECT_TRUE(lock->is_acquired_in_this_process());
  EXPECT_EQ(this->lock_nodes().size(), 1u);
  EXPECT_TRUE(lock->release());
}

// With the link down, an acquire waits for a connection (a timed one up to
// its deadline, an untimed one as long as the Client takes to connect again);
// a stop ends that wait too. The Client here would take a session timeout
// (4 s) to give up on the old session and connect a new one.
TYPED_TEST(LockCancelTest, AStopEndsTheWaitForAConnection) {
  for (const bool timed : {true, false}) {
    SCOPED_TRACE(timed ? "try_acquire_for" : "acquire");
    auto& c = this->contender();
    auto lock = this->lock_for(c);
    // The Client must know the link is down before the acquire starts: else
    // the acquire may try the dropped link, spend its retries and fail at
    // once, which is not the wait this test is about.
    auto suspended = std::make_shared<Latch>();  // the listener may outlive this loop
    c.client->add_listener([suspended](ConnectionState s) {
      if (s == ConnectionState::suspended) suspended->open();
    });
    this->ensemble_.disconnect(this->session_of(c));
    ASSERT_TRUE(suspended->wait(kWait));
    std::stop_source stop;
    auto granted = std::async(std::launch::async, [&] {
      return timed ? lock->try_acquire_for(kWait, stop.get_token())
                   : lock->acquire(stop.get_token());
    });
    // Still waiting: there is no connection to queue on.
    ASSERT_EQ(granted.wait_for(200ms), std::future_status::timeout);
    const auto asked = std::chrono::steady_clock::now();
    stop.request_stop();
    ASSERT_EQ(granted.wait_for(kWait), std::future_status::ready);
    EXPECT_FALSE(granted.get());
    EXPECT_LT(std::chrono::steady_clock::now() - asked, 1s);
    EXPECT_TRUE(this->lock_nodes().empty());
  }
}

// Many waiters, every other one stopped: the rest are granted in their
// order, none of the stopped ever is, and nothing of theirs is left.
TYPED_TEST(LockCancelTest, StoppedWaitersLeaveTheRestInOrder) {
  constexpr int kWaiters = 8;
  auto held = this->lock_for(this->contender());
  ASSERT_TRUE(held->try_acquire());
  std::vector<Contender*> contenders;
  std::vector<std::unique_ptr<TypeParam>> locks;
  std::vector<std::stop_source> stops(kWaiters);
  std::mutex order_mutex;
  std::vector<int> order;
  std::vector<std::jthread> threads;
  for (int i = 0; i < kWaiters; ++i) {
    contenders.push_back(&this->contender());
    locks.push_back(this->lock_for(*contenders.back()));
    threads.emplace_back([&, i] {
      if (!locks[i]->try_acquire_for(kWait, stops[i].get_token())) return;
      {
        std::lock_guard lock(order_mutex);
        order.push_back(i);
      }
      locks[i]->release();
    });
    ASSERT_TRUE(this->wait_queue_length(static_cast<std::size_t>(i) + 2));  // in this order
  }
  for (int i = 0; i < kWaiters; i += 2) stops[i].request_stop();
  ASSERT_TRUE(this->wait_queue_length(1 + kWaiters / 2));
  EXPECT_TRUE(held->release());
  threads.clear();
  EXPECT_EQ(order, (std::vector<int>{1, 3, 5, 7}));
  for (auto* c : contenders) EXPECT_TRUE(this->no_ephemerals_of(*c));
  EXPECT_TRUE(this->lock_nodes().empty());
}

// The other locks take the same token: a stop while waiting leaves each
// queue with nothing of ours left.
class OtherLocksCancelTest : public LockUnitTest<InterProcessMutex> {
 protected:
  // Runs `acquire(token)` on a thread, stops it once `queued()` holds, and
  // says whether it returned false, soon.
  template <class Acquire, class Queued>
  bool stopped_while_waiting(Acquire&& acquire, Queued&& queued) {
    std::stop_source stop;
    bool granted = true;
    std::jthread waiter([&] { granted = acquire(stop.get_token()); });
    if (!queued()) return false;
    const auto asked = std::chrono::steady_clock::now();
    stop.request_stop();
    waiter.join();
    return !granted && std::chrono::steady_clock::now() - asked < 2s;  // session timeout: 4 s
  }
};

TEST_F(OtherLocksCancelTest, ReadWriteLock) {
  InterProcessReadWriteLock held(*contender().client, kDir);
  ASSERT_TRUE(held.write_lock().try_acquire());
  auto& w = contender();
  InterProcessReadWriteLock waiting(*w.client, kDir);
  EXPECT_TRUE(stopped_while_waiting(
      [&](std::stop_token t) { return waiting.read_lock().try_acquire_for(kWait, t); },
      [&] { return wait_queue_length(2); }));
  EXPECT_TRUE(no_ephemerals_of(w));
  EXPECT_TRUE(
      stopped_while_waiting([&](std::stop_token t) { return waiting.write_lock().acquire(t); },
                            [&] { return wait_queue_length(2); }));
  EXPECT_TRUE(no_ephemerals_of(w));
  EXPECT_TRUE(held.write_lock().release());
}

TEST_F(OtherLocksCancelTest, Semaphore) {
  InterProcessSemaphoreV2 held(*contender().client, kDir, SemaphoreLimit::fixed(1));
  auto lease = held.try_acquire_for(1, kWait);
  ASSERT_EQ(lease.size(), 1u);
  auto& w = contender();
  InterProcessSemaphoreV2 waiting(*w.client, kDir, SemaphoreLimit::fixed(1));
  const std::string leases = kDir + "/leases";
  const auto two_leases = [&] {
    return test::wait_children(
        raw(), leases, [](const auto& names) { return names.size() == 2; }, kWait);
  };
  EXPECT_TRUE(stopped_while_waiting(
      [&](std::stop_token t) { return !waiting.try_acquire_for(1, kWait, t).empty(); },
      two_leases));
  EXPECT_TRUE(no_ephemerals_of(w));
  EXPECT_EQ(ensemble_.children_now(leases).size(), 1u);
  EXPECT_TRUE(stopped_while_waiting(
      [&](std::stop_token t) { return !waiting.acquire(1, t).empty(); }, two_leases));
  EXPECT_TRUE(no_ephemerals_of(w));
}

TEST_F(OtherLocksCancelTest, MultiLock) {
  auto& h = contender();
  InterProcessMutex held(*h.client, kDir + "/b");
  ASSERT_TRUE(held.try_acquire());
  auto& w = contender();
  MultiLock both(*w.client, {kDir + "/a", kDir + "/b"});
  const auto queued = [&] {
    return test::wait_children(
        raw(), kDir + "/b", [](const auto& names) { return names.size() == 2; }, kWait);
  };
  EXPECT_TRUE(stopped_while_waiting(
      [&](std::stop_token t) { return both.try_acquire_for(kWait, t); }, queued));
  EXPECT_TRUE(no_ephemerals_of(w));  // /a, taken first, was given back too
  EXPECT_TRUE(held.release());
}

}  // namespace
}  // namespace zkr
