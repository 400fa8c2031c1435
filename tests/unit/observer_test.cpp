// The observer (zkr/observer.hpp) on the in-memory ensemble: a recording
// observer sees exactly the events of an uncontended acquire and release, a
// hand-off, a timeout, a cancelled wait, losses by node deletion and by
// session expiry, retries of a lock and of with_retry, and the connection
// states; an observer that throws breaks nothing, and a Client without one
// tells nobody.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "lock_fixture.hpp"
#include "zkr/observer.hpp"
#include "zkr/semaphore.hpp"

namespace zkr {
namespace {

// Every event, kept; waits on a predicate over them with a deadline.
class Recorder : public Observer {
 public:
  struct Events {
    std::vector<WaitEnded> waits;
    std::vector<std::string> wait_paths;
    std::vector<Granted> grants;
    std::vector<HoldEnded> holds;
    std::vector<Lost> losses;
    std::vector<Retried> retries;
    std::vector<ConnectionState> states;
    std::map<std::pair<Recipe, Request>, int> requests;
    int requests_of(Recipe recipe, Request request) const {
      const auto it = requests.find({recipe, request});
      return it == requests.end() ? 0 : it->second;
    }
  };

  void wait_ended(const WaitEnded& e) override {
    record([&](Events& ev) {
      ev.waits.push_back(e);
      ev.wait_paths.emplace_back(e.path);
      ev.waits.back().path = {};  // not valid after the call
    });
  }
  void granted(const Granted& e) override {
    record([&](Events& ev) {
      ev.grants.push_back(e);
      ev.grants.back().path = {};
    });
  }
  void hold_ended(const HoldEnded& e) override {
    record([&](Events& ev) {
      ev.holds.push_back(e);
      ev.holds.back().path = {};
    });
  }
  void lost(const Lost& e) override {
    record([&](Events& ev) {
      ev.losses.push_back(e);
      ev.losses.back().path = {};
    });
  }
  void retried(const Retried& e) override {
    record([&](Events& ev) {
      ev.retries.push_back(e);
      ev.retries.back().path = {};
    });
  }
  void connection_state(ConnectionState s) override {
    record([&](Events& ev) { ev.states.push_back(s); });
  }
  void request_sent(const RequestSent& e) override {
    record([&](Events& ev) { ++ev.requests[{e.recipe, e.request}]; });
  }

  Events events() const {
    std::lock_guard lock(mutex_);
    return events_;
  }
  [[nodiscard]] bool wait_until(const std::function<bool(const Events&)>& done) const {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kWait, [&] { return done(events_); });
  }

 private:
  void record(const std::function<void(Events&)>& change) {
    {
      std::lock_guard lock(mutex_);
      change(events_);
    }
    changed_.notify_all();
  }
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  Events events_;
};

// A waiter has read its own node and sent the get that watches the node
// before it (its first two reads): it knows it waits.
bool knows_it_waits(const Recorder& rec) {
  return rec.wait_until(
      [](const Recorder::Events& e) { return e.requests_of(Recipe::mutex, Request::get) >= 2; });
}

// Throws from every event.
class Thrower : public Observer {
 public:
  void wait_ended(const WaitEnded&) override { boom(); }
  void granted(const Granted&) override { boom(); }
  void hold_ended(const HoldEnded&) override { boom(); }
  void lost(const Lost&) override { boom(); }
  void retried(const Retried&) override { boom(); }
  void connection_state(ConnectionState) override { boom(); }
  void request_sent(const RequestSent&) override { boom(); }
  int calls() const {
    std::lock_guard lock(mutex_);
    return calls_;
  }

 private:
  void boom() {
    {
      std::lock_guard lock(mutex_);
      ++calls_;
    }
    throw std::runtime_error("observer failure");
  }
  mutable std::mutex mutex_;
  int calls_ = 0;
};

class ObserverTest : public LockUnitTest<InterProcessMutex> {
 protected:
  // The lock directory's parent exists, as in a running service: an
  // acquire's requests are then the same every time.
  Contender& observed(const std::shared_ptr<Observer>& observer) {
    if (!ensemble_.exists_now("/locks")) raw().create("/locks");
    return contender([&](ClientOptions& o) {
      o.observer = observer;
      o.logging.level = LogLevel::off;
    });
  }
};

TEST_F(ObserverTest, AnUncontendedAcquireAndReleaseAreOneWaitOneGrantOneHold) {
  const auto rec = std::make_shared<Recorder>();
  auto& a = observed(rec);
  auto lock = lock_for(a);
  lock->acquire();
  auto ev = rec->events();
  ASSERT_EQ(ev.waits.size(), 1u);
  EXPECT_EQ(ev.waits[0].outcome, WaitOutcome::granted);
  EXPECT_EQ(ev.waits[0].recipe, Recipe::mutex);
  EXPECT_EQ(ev.wait_paths[0], kDir);
  ASSERT_EQ(ev.grants.size(), 1u);
  EXPECT_FALSE(ev.grants[0].hand_off);
  EXPECT_TRUE(ev.holds.empty());
  EXPECT_TRUE(lock->release());
  ev = rec->events();
  ASSERT_EQ(ev.holds.size(), 1u);
  EXPECT_EQ(ev.holds[0].outcome, HoldOutcome::released);
  EXPECT_GE(ev.holds[0].duration.count(), 0);
  EXPECT_TRUE(ev.losses.empty());
  EXPECT_TRUE(ev.retries.empty());
  // The directory's create and our node's, the listing, the own-node read,
  // and the delete; exactly what the ensemble saw of this session.
  ASSERT_TRUE(wait_queue_length(0));
  EXPECT_EQ(ev.requests_of(Recipe::mutex, Request::create), 2);
  EXPECT_EQ(ev.requests_of(Recipe::mutex, Request::children), 1);
  EXPECT_EQ(ev.requests_of(Recipe::mutex, Request::get), 1);
  EXPECT_EQ(ev.requests_of(Recipe::mutex, Request::remove), 1);
  EXPECT_EQ(ev.requests_of(Recipe::mutex, Request::exists), 0);
  // The Client's first state, through the listener dispatch.
  ASSERT_TRUE(rec->wait_until([](const auto& e) { return !e.states.empty(); }));
  EXPECT_EQ(rec->events().states.front(), ConnectionState::connected);
}

TEST_F(ObserverTest, AWaiterGrantedWhenItsPredecessorGoesIsAHandOff) {
  const auto rec = std::make_shared<Recorder>();
  auto& a = contender();
  auto& b = observed(rec);
  auto first = lock_for(a);
  first->acquire();
  auto second = lock_for(b);
  auto waiting = std::async(std::launch::async, [&] {
    const bool granted = second->try_acquire_for(kWait);
    if (granted) {
      EXPECT_TRUE(second->release());  // by the thread that holds it
    }
    return granted;
  });
  // b knows it waits behind a: it has read its own node and watches a's.
  ASSERT_TRUE(knows_it_waits(*rec));
  EXPECT_TRUE(rec->events().waits.empty());
  EXPECT_TRUE(first->release());
  ASSERT_TRUE(waiting.get());
  const auto ev = rec->events();
  ASSERT_EQ(ev.grants.size(), 1u);
  EXPECT_TRUE(ev.grants[0].hand_off);
  ASSERT_EQ(ev.waits.size(), 1u);
  EXPECT_EQ(ev.waits[0].outcome, WaitOutcome::granted);
  // b watched its predecessor and its own node, and listed again on the hand-off.
  EXPECT_GE(ev.requests_of(Recipe::mutex, Request::get), 2);
  EXPECT_GE(ev.requests_of(Recipe::mutex, Request::children), 2);
}

TEST_F(ObserverTest, AWaitPastItsDeadlineIsTimedOutAndGrantsNothing) {
  const auto rec = std::make_shared<Recorder>();
  auto& a = contender();
  auto& b = observed(rec);
  auto first = lock_for(a);
  first->acquire();
  auto second = lock_for(b);
  EXPECT_FALSE(second->try_acquire_for(50ms));
  const auto ev = rec->events();
  ASSERT_EQ(ev.waits.size(), 1u);
  EXPECT_EQ(ev.waits[0].outcome, WaitOutcome::timed_out);
  EXPECT_GE(ev.waits[0].duration, 50ms);
  EXPECT_TRUE(ev.grants.empty());
  EXPECT_TRUE(ev.holds.empty());
  // The abandoned node was read and deleted (an owned delete).
  EXPECT_EQ(ev.requests_of(Recipe::mutex, Request::remove), 1);
  EXPECT_TRUE(first->release());
}

TEST_F(ObserverTest, AStoppedWaitIsCancelled) {
  const auto rec = std::make_shared<Recorder>();
  auto& a = contender();
  auto& b = observed(rec);
  auto first = lock_for(a);
  first->acquire();
  auto second = lock_for(b);
  std::stop_source stop;
  auto waiting = std::async(std::launch::async,
                            [&] { return second->try_acquire_for(kWait, stop.get_token()); });
  ASSERT_TRUE(knows_it_waits(*rec));
  stop.request_stop();
  EXPECT_FALSE(waiting.get());
  const auto ev = rec->events();
  ASSERT_EQ(ev.waits.size(), 1u);
  EXPECT_EQ(ev.waits[0].outcome, WaitOutcome::cancelled);
  EXPECT_TRUE(first->release());
}

TEST_F(ObserverTest, ADeletedNodeIsALossAndEndsTheHoldOnce) {
  const auto rec = std::make_shared<Recorder>();
  auto& a = observed(rec);
  auto lock = lock_for(a);
  lock->acquire();
  const auto nodes = lock_nodes();
  ASSERT_EQ(nodes.size(), 1u);
  raw().remove(kDir + "/" + nodes[0]);
  ASSERT_TRUE(rec->wait_until([](const auto& e) { return !e.holds.empty(); }));
  auto ev = rec->events();
  ASSERT_EQ(ev.losses.size(), 1u);
  EXPECT_EQ(ev.losses[0].reason, LostReason::node_deleted);
  EXPECT_EQ(ev.holds[0].outcome, HoldOutcome::lost);
  (void)lock->release();  // the release after a loss ends no second hold
  ev = rec->events();
  EXPECT_EQ(ev.holds.size(), 1u);
  EXPECT_EQ(ev.losses.size(), 1u);
}

TEST_F(ObserverTest, AnExpiredSessionIsALossBySessionLost) {
  const auto rec = std::make_shared<Recorder>();
  auto& a = observed(rec);
  auto lock = lock_for(a);
  lock->acquire();
  ensemble_.expire(session_of(a));
  // The loss is told first, then the hold's end.
  ASSERT_TRUE(rec->wait_until([](const auto& e) { return !e.holds.empty(); }));
  const auto ev = rec->events();
  ASSERT_EQ(ev.losses.size(), 1u);
  EXPECT_EQ(ev.losses[0].reason, LostReason::session_lost);
  ASSERT_EQ(ev.holds.size(), 1u);
  EXPECT_EQ(ev.holds[0].outcome, HoldOutcome::lost);
  ASSERT_TRUE(rec->wait_until([](const auto& e) {
    return std::count(e.states.begin(), e.states.end(), ConnectionState::lost) == 1;
  }));
  (void)lock->release();
}

TEST_F(ObserverTest, ALinkErrorInTheQueueIsOneRetryOfTheLock) {
  const auto rec = std::make_shared<Recorder>();
  auto& a = observed(rec);
  a.faults->on(test::OpKind::children, kDir).fail(Errc::connection_loss);
  auto lock = lock_for(a);
  lock->acquire();
  const auto ev = rec->events();
  ASSERT_EQ(ev.retries.size(), 1u);
  EXPECT_EQ(ev.retries[0].recipe, Recipe::mutex);
  EXPECT_EQ(ev.retries[0].retry, 1);
  EXPECT_EQ(ev.retries[0].delay, 10ms);  // RetryNTimes(5, 10ms) of the fixture
  ASSERT_EQ(ev.waits.size(), 1u);
  EXPECT_EQ(ev.waits[0].outcome, WaitOutcome::granted);
  EXPECT_TRUE(lock->release());
}

TEST_F(ObserverTest, AnAcquireThatThrowsIsAFailedWait) {
  const auto rec = std::make_shared<Recorder>();
  auto& a = observed(rec);
  a.faults->on(test::OpKind::create, kDir).fail(Errc::no_auth).times(2);  // not retried
  auto lock = lock_for(a);
  EXPECT_THROW(lock->acquire(), KeeperError);
  const auto ev = rec->events();
  ASSERT_EQ(ev.waits.size(), 1u);
  EXPECT_EQ(ev.waits[0].outcome, WaitOutcome::failed);
  EXPECT_TRUE(ev.grants.empty());
  EXPECT_TRUE(ev.retries.empty());
}

TEST_F(ObserverTest, WithRetryTellsItsRetriesAsTheClients) {
  const auto rec = std::make_shared<Recorder>();
  auto& a = observed(rec);
  raw().create("/x", "data");
  a.faults->on(test::OpKind::get, "/x").fail(Errc::connection_loss).times(2);
  const auto read = a.client->with_retry([](Keeper& k) { return k.get("/x").data; });
  EXPECT_EQ(read, "data");
  const auto ev = rec->events();
  ASSERT_EQ(ev.retries.size(), 2u);
  EXPECT_EQ(ev.retries[0].recipe, Recipe::client);
  EXPECT_EQ(ev.retries[1].retry, 2);
}

// A lease is a semaphore grant, taken under the semaphore's internal mutex,
// which is a mutex grant held until the lease is granted.
TEST_F(ObserverTest, ASemaphoreLeaseIsASemaphoreHoldTakenUnderAMutexHold) {
  const auto rec = std::make_shared<Recorder>();
  auto& a = observed(rec);
  {
    InterProcessSemaphoreV2 pool(*a.client, "/locks/pool", SemaphoreLimit::fixed(2));
    auto leases = pool.try_acquire_for(1, kWait);
    ASSERT_EQ(leases.size(), 1u);
    const auto ev = rec->events();
    ASSERT_EQ(ev.grants.size(), 2u);
    EXPECT_EQ(ev.grants[0].recipe, Recipe::mutex);  // the internal mutex first
    EXPECT_EQ(ev.grants[1].recipe, Recipe::semaphore);
    ASSERT_EQ(ev.holds.size(), 1u);  // the mutex, let go once the lease was granted
    EXPECT_EQ(ev.holds[0].recipe, Recipe::mutex);
    EXPECT_GT(ev.requests_of(Recipe::semaphore, Request::create), 0);
  }  // the lease goes out of scope: released
  const auto ev = rec->events();
  ASSERT_EQ(ev.holds.size(), 2u);
  EXPECT_EQ(ev.holds[1].recipe, Recipe::semaphore);
  EXPECT_EQ(ev.holds[1].outcome, HoldOutcome::released);
}

TEST_F(ObserverTest, AThrowingObserverBreaksNothing) {
  const auto thrower = std::make_shared<Thrower>();
  auto& a = observed(thrower);
  auto& b = contender();
  auto lock = lock_for(a);
  lock->acquire();
  auto other = lock_for(b);
  EXPECT_FALSE(other->try_acquire_for(20ms));  // still exclusive
  EXPECT_TRUE(lock->release());
  EXPECT_TRUE(other->try_acquire_for(kWait));
  EXPECT_TRUE(other->release());
  EXPECT_GT(thrower->calls(), 0);
}

TEST_F(ObserverTest, AClientWithoutAnObserverTellsNobody) {
  const auto rec = std::make_shared<Recorder>();
  auto& watched = observed(rec);
  auto& unwatched = contender();
  const auto before = rec->events();
  auto lock = lock_for(unwatched);
  lock->acquire();
  EXPECT_FALSE(lock_for(unwatched)->try_acquire_for(10ms));
  EXPECT_TRUE(lock->release());
  ensemble_.expire(session_of(unwatched));
  auto mine = lock_for(watched);  // the observed Client still sees its own
  mine->acquire();
  EXPECT_TRUE(mine->release());
  const auto after = rec->events();
  EXPECT_EQ(after.waits.size(), before.waits.size() + 1);
  EXPECT_EQ(after.holds.size(), before.holds.size() + 1);
  EXPECT_TRUE(after.retries.empty());
  EXPECT_TRUE(after.losses.empty());
}

}  // namespace
}  // namespace zkr
