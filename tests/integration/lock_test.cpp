// Both locks on the live three-server ensemble: fairness, a holder's session
// expiring, the holder's server killed, cleanup on every path. The long
// multi-process run with the exclusion checker is in lock_stress_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>
#include <thread>

#include "support/ensemble.hpp"
#include "support/waits.hpp"
#include "zkr/lock.hpp"
#include "zkr/read_write_lock.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;

using test::kWait;

template <class Lock>
class LockIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (test::connect_string().empty()) GTEST_SKIP() << "no ensemble: run scripts/test";
    dir_ = test::unique_path("lock");
  }

  void TearDown() override {
    locks_.clear();
    if (!clients_.empty()) {
      auto& keeper = *clients_.front()->keeper();
      EXPECT_TRUE(test::wait_children(
          keeper, dir_, [](const auto& n) { return n.empty(); }, kWait))
          << "lock nodes left behind in " << dir_;
      if (!keep_directory_) (void)keeper.try_remove(dir_);
    }
    clients_.clear();
  }

  Client& client(std::chrono::milliseconds session_timeout = 6s,
                 std::optional<DigestAuth> auth = std::nullopt) {
    ClientOptions options;
    options.connect_string = test::connect_string();
    options.session_timeout = session_timeout;
    options.auth = std::move(auth);
    options.retry_policy = std::make_shared<ExponentialBackoffRetry>(50ms, 10, 1s);
    clients_.push_back(std::make_unique<Client>(options));
    EXPECT_TRUE(clients_.back()->block_until_connected(kWait));
    return *clients_.back();
  }

  Lock& lock(Client& c, LockOptions options = {}) {
    locks_.push_back(std::make_unique<Lock>(c, dir_, options));
    return *locks_.back();
  }

  bool wait_queue_length(std::size_t n) {
    return test::wait_children(
        *clients_.front()->keeper(), dir_, [n](const auto& names) { return names.size() == n; },
        kWait);
  }

  std::string dir_;
  bool keep_directory_ = false;  // the directory is a test's own node: leave it
  std::vector<std::unique_ptr<Client>> clients_;
  std::vector<std::unique_ptr<Lock>> locks_;  // destroyed before their clients
};

using LockTypes = ::testing::Types<InterProcessMutex, NonReentrantMutex>;
TYPED_TEST_SUITE(LockIntegrationTest, LockTypes);

TYPED_TEST(LockIntegrationTest, ExcludesAndReleases) {
  auto& a = this->lock(this->client());
  auto& b = this->lock(this->client());
  ASSERT_TRUE(a.try_acquire());
  EXPECT_FALSE(b.try_acquire());
  EXPECT_FALSE(b.try_acquire_for(200ms));
  // b's own session sees b's delete (another session's server may lag behind).
  EXPECT_EQ(b.participant_nodes().size(), 1u);
  EXPECT_TRUE(a.release());
  ASSERT_TRUE(b.try_acquire_for(kWait));
  EXPECT_GT(b.grant().fencing_token(), 0);
  b.release();
}

TYPED_TEST(LockIntegrationTest, GrantsInArrivalOrderAndTokensGrow) {
  auto& first = this->lock(this->client());
  ASSERT_TRUE(first.try_acquire());
  const auto first_token = first.grant().fencing_token();
  constexpr int kWaiters = 6;
  std::vector<TypeParam*> waiters;
  for (int i = 0; i < kWaiters; ++i) waiters.push_back(&this->lock(this->client()));
  std::mutex mutex;
  std::vector<int> order;
  std::vector<std::int64_t> tokens;
  std::vector<std::thread> threads;
  for (int i = 0; i < kWaiters; ++i) {
    threads.emplace_back([&, i] {
      ASSERT_TRUE(waiters[i]->try_acquire_for(kWait));
      {
        std::lock_guard lock(mutex);
        order.push_back(i);
        tokens.push_back(waiters[i]->grant().fencing_token());
      }
      waiters[i]->release();
    });
    ASSERT_TRUE(this->wait_queue_length(static_cast<std::size_t>(i) + 2));
  }
  first.release();
  for (auto& t : threads) t.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  ASSERT_EQ(tokens.size(), static_cast<std::size_t>(kWaiters));
  EXPECT_GT(tokens[0], first_token);
  for (int i = 1; i < kWaiters; ++i) EXPECT_GT(tokens[i], tokens[i - 1]);
}

TYPED_TEST(LockIntegrationTest, HolderSessionExpiredNextWaiterWinsOldHolderIsToldAndFenced) {
  auto& holder_client = this->client();
  auto& holder = this->lock(holder_client);
  auto& waiter = this->lock(this->client());
  const std::string resource = this->dir_ + "-resource";
  holder_client.keeper()->create(resource, "0");
  test::Latch new_session;
  holder_client.add_listener([&](ConnectionState s) {
    if (s == ConnectionState::reconnected && holder_client.session_epoch() == 2) new_session.open();
  });

  ASSERT_TRUE(holder.try_acquire());
  const Grant grant = holder.grant();
  test::Latch told;
  std::atomic<LostReason> heard{LostReason::none};
  grant.on_lost([&](LostReason why) {
    heard = why;
    told.open();
  });
  ASSERT_TRUE(guarded_write(*holder_client.keeper(), grant, {op::Set{resource, "holder"}}).ok());

  // The waiter's thread holds its lock until the checks below are done: a
  // reentrant mutex is released by the thread that holds it. (A jthread, so
  // that a failed ASSERT below joins it instead of ending the whole binary.)
  std::optional<Grant> waiter_lease;
  test::Latch granted, checked;
  std::jthread next([&] {
    ASSERT_TRUE(waiter.try_acquire_for(kWait));
    waiter_lease.emplace(waiter.grant());
    granted.open();
    EXPECT_TRUE(checked.wait(kWait));
    waiter.release();
  });
  ASSERT_TRUE(this->wait_queue_length(2));
  EXPECT_FALSE(granted.is_open());
  test::expire_session(*holder_client.keeper());
  ASSERT_TRUE(granted.wait(kWait));
  ASSERT_TRUE(told.wait(kWait));
  // The server cuts the holder's link as the session is taken over, then
  // ends it and deletes the node: whichever the holder hears first is the
  // reason (suspended under the standard policy, session_lost, node_deleted).
  EXPECT_NE(heard.load(), LostReason::none);
  EXPECT_TRUE(grant.lost_token().stop_requested());
  // The old holder, on its new session, still cannot write under its old grant.
  ASSERT_TRUE(new_session.wait(kWait));
  const auto rejected = guarded_write(*holder_client.keeper(), grant, {op::Set{resource, "stale"}});
  EXPECT_EQ(rejected.error, Errc::no_node);
  EXPECT_EQ(rejected.outcome, GuardedWriteResult::Outcome::lock_lost);
  EXPECT_GT(waiter_lease->fencing_token(), grant.fencing_token());
  EXPECT_TRUE(
      guarded_write(*holder_client.keeper(), *waiter_lease, {op::Set{resource, "waiter"}}).ok());
  EXPECT_EQ(holder_client.keeper()->get(resource).data, "waiter");
  checked.open();
  next.join();
  holder.release();  // already lost: clears local state, deletes nothing
  holder_client.keeper()->remove(resource);
}

TYPED_TEST(LockIntegrationTest, LockIsKeptWhenTheConnectedServerDies) {
  ZKR_REQUIRE_SERVER_FAULTS();
  auto& holder_client = this->client(8s);
  test::Latch back;
  holder_client.add_listener([&](ConnectionState s) {
    if (s == ConnectionState::reconnected) back.open();
  });
  LockOptions options;
  options.suspended_policy = SuspendedPolicy::ignore;
  auto& holder = this->lock(holder_client, options);
  auto& other = this->lock(this->client());
  ASSERT_TRUE(holder.try_acquire());
  const auto session = holder_client.keeper()->session_id();
  const auto node = holder.grant().node_path();
  const int server = test::connected_server(*holder_client.keeper());
  test::Repair repair("restart " + std::to_string(server));
  test::ensemble("kill " + std::to_string(server));
  // The client moves to another server within the session timeout.
  ASSERT_TRUE(back.wait(kWait));
  EXPECT_EQ(holder_client.keeper()->session_id(), session);
  EXPECT_EQ(holder_client.session_epoch(), 1u);
  EXPECT_TRUE(holder_client.keeper()->exists(node).has_value());
  EXPECT_FALSE(holder.grant().lost());
  EXPECT_FALSE(other.try_acquire());  // still ours
  repair.now();
  EXPECT_TRUE(holder.release());
  ASSERT_TRUE(other.try_acquire_for(kWait));
  other.release();
}

TYPED_TEST(LockIntegrationTest, TimeoutsAndDestructionLeaveNoNodes) {
  auto& c = this->client();
  auto& holder = this->lock(c);
  ASSERT_TRUE(holder.try_acquire());
  {
    TypeParam impatient(this->client(), this->dir_);
    for (int i = 0; i < 5; ++i) EXPECT_FALSE(impatient.try_acquire_for(20ms));
  }
  {
    TypeParam dropped(c, this->dir_);
    std::thread waiter([&] { EXPECT_FALSE(dropped.try_acquire_for(300ms)); });
    waiter.join();
  }
  EXPECT_TRUE(this->wait_queue_length(1));
  {
    TypeParam forgotten(c, this->dir_ + "-forgotten");
    ASSERT_TRUE(forgotten.try_acquire());
  }  // destroyed while held: released
  EXPECT_TRUE(test::wait_children(
      *c.keeper(), this->dir_ + "-forgotten", [](const auto& n) { return n.empty(); }, kWait));
  holder.release();
}

// Cancellation under load: contenders on their own sessions loop
// on one lock, and a canceller per contender stops its current acquire at a
// random moment (before the create's reply, while it waits, as it is
// granted). Whatever the moment: never two holders, every call returns, each
// stopped call says false, and nothing of theirs is left in the queue.
TYPED_TEST(LockIntegrationTest, StoppedAcquiresUnderLoadNeverHoldAndLeaveNothing) {
  constexpr int kContenders = 6;
  constexpr auto kRun = 8s;
  constexpr int kMaxAttempts = 2000;  // per contender: the run stops by itself
  std::vector<TypeParam*> locks;
  for (int i = 0; i < kContenders; ++i) locks.push_back(&this->lock(this->client()));
  std::atomic<int> holders{0};
  std::atomic<bool> overlap{false};
  std::atomic<long> granted{0}, stopped{0}, timed_out{0};
  const auto end = std::chrono::steady_clock::now() + kRun;
  std::vector<std::jthread> threads;
  for (int i = 0; i < kContenders; ++i) {
    threads.emplace_back([&, i] {
      std::mutex mutex;
      std::condition_variable changed;
      std::optional<std::stop_source> current;  // guarded by mutex
      bool done = false;                        // guarded by mutex
      // Stops the current acquire 0-15 ms after it began, every other time.
      std::jthread canceller([&, seed = static_cast<unsigned>(i)] {
        std::minstd_rand random(seed + 1);
        std::unique_lock lock(mutex);
        while (!done) {
          const auto delay = std::chrono::milliseconds(random() % 16);
          changed.wait_for(lock, delay, [&] { return done; });
          if (current && random() % 2 == 0) current->request_stop();
          changed.wait(lock, [&] { return done || (current && !current->stop_requested()); });
        }
      });
      for (int attempt = 0; attempt < kMaxAttempts && std::chrono::steady_clock::now() < end;
           ++attempt) {
        std::stop_token token;
        {
          std::lock_guard lock(mutex);
          current.emplace();
          token = current->get_token();
        }
        changed.notify_all();
        const bool got = locks[i]->try_acquire_for(kWait, token);
        {
          std::lock_guard lock(mutex);
          current.reset();
        }
        if (!got) {
          (token.stop_requested() ? stopped : timed_out)++;
          continue;
        }
        if (++holders != 1) overlap = true;
        std::this_thread::yield();
        --holders;
        ++granted;
        locks[i]->release();
      }
      {
        std::lock_guard lock(mutex);
        done = true;
      }
      changed.notify_all();
    });
  }
  threads.clear();  // joins: every call returned
  EXPECT_FALSE(overlap.load()) << "two holders at once";
  EXPECT_EQ(timed_out.load(), 0);
  // The lock went round and many attempts were stopped (here about 200
  // grants and 1,200 stops; a sanitizer build on a loaded machine gets far
  // fewer in the same 8 s).
  EXPECT_GT(granted.load(), 5);
  EXPECT_GT(stopped.load(), 5);
  // TearDown: nothing left in the queue.
}

// With digest auth the Client's default ACL is creator-only: lock nodes made
// with it shut every other identity out (no_auth instead of waiting, and a
// waiter could not read the node before it). Lock nodes get the open ACL.
TYPED_TEST(LockIntegrationTest, ContendersWithDifferentIdentitiesQueueOnOneLock) {
  auto& alice = this->lock(this->client(6s, DigestAuth{"alice", "a-secret"}));
  auto& bob = this->lock(this->client(6s, DigestAuth{"bob", "b-secret"}));
  auto& anonymous = this->lock(this->client());
  ASSERT_TRUE(alice.try_acquire());
  std::atomic<int> granted{0};
  std::jthread bob_waits([&] {
    ASSERT_TRUE(bob.try_acquire_for(kWait));
    EXPECT_EQ(granted.fetch_add(1), 0) << "bob comes first";
    bob.release();
  });
  ASSERT_TRUE(this->wait_queue_length(2));
  std::jthread anonymous_waits([&] {
    ASSERT_TRUE(anonymous.try_acquire_for(kWait));
    EXPECT_EQ(granted.fetch_add(1), 1) << "then the anonymous client";
    anonymous.release();
  });
  ASSERT_TRUE(this->wait_queue_length(3));
  EXPECT_EQ(granted, 0);
  alice.release();
  bob_waits.join();
  anonymous_waits.join();
  EXPECT_EQ(granted, 2);
}

// Curator users lock existing nodes: a release used to delete the lock path
// itself, data and all (version -1), whatever had made it.
TYPED_TEST(LockIntegrationTest, LockingAnExistingNodeLeavesItAsItWas) {
  auto& c = this->client();
  auto keeper = c.keeper();
  keeper->create(this->dir_, "config=important");  // another application's node
  const auto before = *keeper->exists(this->dir_);
  auto& a = this->lock(c);
  auto& b = this->lock(this->client());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(a.try_acquire_for(kWait));
    a.release();
    ASSERT_TRUE(b.try_acquire_for(kWait));
    b.release();
  }
  keeper->sync(this->dir_);
  const auto after = keeper->get(this->dir_);
  EXPECT_EQ(after.data, "config=important");
  EXPECT_EQ(after.stat.czxid, before.czxid);
  EXPECT_EQ(after.stat.version, before.version);
  this->keep_directory_ = true;
}

// ---- At the edges, live: a downgrade with a writer queued, and a timeout
// too long for the clock.

class LockEdgesLiveTest : public LockIntegrationTest<InterProcessMutex> {};

// A writes (token w), B queues to write, A downgrades (its read node after
// B's), A lets go of both: B's token is above every token A held.
TEST_F(LockEdgesLiveTest, TheWriterQueuedBehindADowngradeGetsTheLargerToken) {
  auto& a = client();
  auto& b = client();
  InterProcessReadWriteLock ra(a, dir_), rb(b, dir_);
  ASSERT_TRUE(ra.write_lock().try_acquire_for(kWait));
  const auto write = ra.write_lock().grant();
  std::promise<std::int64_t> granted;
  std::jthread writer([&] {
    if (!rb.write_lock().try_acquire_for(kWait)) return granted.set_value(-1);
    granted.set_value(rb.write_lock().grant().fencing_token());
    rb.write_lock().release();
  });
  ASSERT_TRUE(wait_queue_length(2));
  ASSERT_TRUE(ra.read_lock().try_acquire());  // a downgrade: granted at once
  const auto read = ra.read_lock().grant();
  // The race: our read node is newer than the queued writer's.
  const auto nodes = ra.participant_nodes();
  ASSERT_EQ(nodes.size(), 3u);
  const auto writer_node = a.keeper()->exists(nodes[1]);
  const auto read_node = a.keeper()->exists(read.node_path());
  ASSERT_TRUE(writer_node && read_node);
  ASSERT_GT(read_node->czxid, writer_node->czxid);
  EXPECT_EQ(read.fencing_token(), write.fencing_token());
  EXPECT_TRUE(ra.write_lock().release());
  EXPECT_TRUE(ra.read_lock().release());
  auto token = granted.get_future();
  ASSERT_EQ(token.wait_for(kWait), std::future_status::ready);
  const auto writer_token = token.get();
  writer.join();
  EXPECT_EQ(writer_token, writer_node->czxid);
  EXPECT_GT(writer_token, read.fencing_token());
}

// "Wait for ever" as a relative timeout waits for the holder to let go.
TEST_F(LockEdgesLiveTest, ATimeoutTooLongForTheClockWaitsForTheHolder) {
  auto& holder = lock(client());
  auto& waiter = lock(client());
  ASSERT_TRUE(holder.try_acquire_for(kWait));
  std::promise<bool> got;
  std::jthread waiting([&] {
    const bool granted = waiter.try_acquire_for(std::chrono::milliseconds::max());
    if (granted) waiter.release();
    got.set_value(granted);
  });
  ASSERT_TRUE(wait_queue_length(2));
  holder.release();
  auto result = got.get_future();
  ASSERT_EQ(result.wait_for(kWait), std::future_status::ready);
  EXPECT_TRUE(result.get());
  waiting.join();
}

}  // namespace
}  // namespace zkr
