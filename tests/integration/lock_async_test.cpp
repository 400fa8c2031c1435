// The asynchronous acquire on the live three-server ensemble: thousands of
// waiters on two Clients, no thread each, never two holders of a key and
// every key's fencing tokens rising; acquires stopped at random moments
// under load, which leave nothing behind; a session expired while async
// waiters queue on it, from which none is granted.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <stop_token>
#include <thread>
#include <vector>

#include "support/ensemble.hpp"
#include "support/process_state.hpp"
#include "support/waits.hpp"
#include "zkr/lock.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using test::kLongWait;

class LockAsyncIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (test::connect_string().empty()) GTEST_SKIP() << "no ensemble: run scripts/test";
    root_ = test::unique_path("async");
  }
  void TearDown() override {
    locks_.clear();
    if (!clients_.empty()) {
      auto& keeper = *clients_.front()->keeper();
      for (const auto& dir : dirs_)
        EXPECT_TRUE(test::wait_children(
            keeper, dir, [](const auto& n) { return n.empty(); }, kLongWait))
            << "lock nodes left behind in " << dir;
    }
    clients_.clear();
  }

  Client& client() {
    ClientOptions options;
    options.connect_string = test::connect_string();
    options.session_timeout = 6s;
    options.retry_policy = std::make_shared<ExponentialBackoffRetry>(50ms, 10, 1s);
    clients_.push_back(std::make_unique<Client>(options));
    EXPECT_TRUE(clients_.back()->block_until_connected(kLongWait));
    return *clients_.back();
  }
  InterProcessMutex& lock(Client& c, int key) {
    const auto dir = root_ + "/key-" + std::to_string(key);
    if (std::find(dirs_.begin(), dirs_.end(), dir) == dirs_.end()) dirs_.push_back(dir);
    locks_.push_back(std::make_unique<InterProcessMutex>(c, dir));
    return *locks_.back();
  }

  std::string root_;
  std::vector<std::string> dirs_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::vector<std::unique_ptr<InterProcessMutex>> locks_;  // before clients_ goes
};

// Per key: who holds it now, and the last fencing token granted.
class Exclusion {
 public:
  // At a grant: false if the key was held already, or the token did not rise.
  bool enter(int key, std::int64_t token) {
    std::lock_guard lock(mutex_);
    auto& k = keys_[key];
    const bool ok = !k.held && token > k.last_token;
    k.held = true;
    k.last_token = token;
    return ok;
  }
  void leave(int key) {
    std::lock_guard lock(mutex_);
    keys_[key].held = false;
  }

 private:
  struct Key {
    bool held = false;
    std::int64_t last_token = 0;
  };
  std::mutex mutex_;
  std::map<int, Key> keys_;  // guarded by mutex_
};

TEST_F(LockAsyncIntegrationTest, TwoThousandWaitersOnTwoClientsAreGrantedOneAtATime) {
  constexpr int kKeys = 20;
  constexpr int kWaiters = 2000;
  Client* clients[] = {&client(), &client()};
  std::vector<InterProcessMutex*> locks;
  for (int k = 0; k < kKeys; ++k)
    for (auto* c : clients) locks.push_back(&lock(*c, k));
  const auto threads_before = test::thread_baseline();

  Exclusion exclusion;
  std::atomic<int> granted{0};
  std::atomic<int> violations{0};
  std::atomic<int> ended{0};
  std::promise<void> all_ended;
  for (int i = 0; i < kWaiters; ++i) {
    const int key = i % kKeys;
    auto& mutex = *locks[key * 2 + (i / kKeys) % 2];
    mutex.async_acquire_guard(Clock::now() + kLongWait, {},
                              [&, key](std::exception_ptr error, LockGuard guard) {
                                if (!error && guard) {
                                  if (!exclusion.enter(key, guard.grant().fencing_token()))
                                    violations.fetch_add(1);
                                  granted.fetch_add(1);
                                  exclusion.leave(key);
                                  (void)guard.unlock();  // the next waiter of the key may go
                                }
                                if (ended.fetch_add(1) + 1 == kWaiters) all_ended.set_value();
                              });
  }
  EXPECT_LE(test::thread_count(), threads_before);  // no thread per waiter
  ASSERT_EQ(all_ended.get_future().wait_for(kLongWait + 10s), std::future_status::ready);
  EXPECT_EQ(granted.load(), kWaiters);
  EXPECT_EQ(violations.load(), 0);
}

// 600 acquires on 6 keys, a third of them stopped at a random moment (queued,
// waiting, being granted): the others are all granted, one at a time, and
// nothing is left in the queues.
TEST_F(LockAsyncIntegrationTest, AcquiresStoppedAtRandomUnderLoadLeaveNothing) {
  constexpr int kKeys = 6;
  constexpr int kAcquires = 600;
  Client* clients[] = {&client(), &client()};
  std::vector<InterProcessMutex*> locks;
  for (int k = 0; k < kKeys; ++k)
    for (auto* c : clients) locks.push_back(&lock(*c, k));

  Exclusion exclusion;
  std::atomic<int> granted{0};
  std::atomic<int> violations{0};
  std::atomic<int> ended{0};
  std::promise<void> all_ended;
  std::vector<std::stop_source> stops(kAcquires);
  std::vector<std::atomic<bool>> was_stopped(kAcquires);
  for (int i = 0; i < kAcquires; ++i) {
    const int key = i % kKeys;
    auto& mutex = *locks[key * 2 + (i / kKeys) % 2];
    mutex.async_acquire_guard(Clock::now() + kLongWait, stops[i].get_token(),
                              [&, key, i](std::exception_ptr error, LockGuard guard) {
                                if (error) ADD_FAILURE() << "acquire " << i << " failed";
                                if (!error && guard) {
                                  if (!exclusion.enter(key, guard.grant().fencing_token()))
                                    violations.fetch_add(1);
                                  granted.fetch_add(1);
                                  exclusion.leave(key);
                                  (void)guard.unlock();
                                } else if (!error && !was_stopped[i].load()) {
                                  ADD_FAILURE()
                                      << "acquire " << i << " not granted, and not stopped";
                                }
                                if (ended.fetch_add(1) + 1 == kAcquires) all_ended.set_value();
                              });
  }
  // Stops every third acquire, in a random order, spread over the run.
  std::vector<int> victims;
  for (int i = 0; i < kAcquires; i += 3) victims.push_back(i);
  std::mt19937 random(20261126);
  std::shuffle(victims.begin(), victims.end(), random);
  for (const int i : victims) {
    was_stopped[i] = true;
    stops[i].request_stop();
    std::this_thread::sleep_for(std::chrono::microseconds(random() % 2000));  // pacing, not a wait
  }
  ASSERT_EQ(all_ended.get_future().wait_for(kLongWait + 10s), std::future_status::ready);
  EXPECT_EQ(violations.load(), 0);
  EXPECT_GE(granted.load(), kAcquires - static_cast<int>(victims.size()));
  // TearDown: no node left in any queue.
}

// Async waiters queued on a session that is expired by the servers: none is
// granted from it; they queue again on the Client's next session.
TEST_F(LockAsyncIntegrationTest, ASessionExpiredUnderAsyncWaitersGrantsNoneFromIt) {
  constexpr int kWaiters = 50;
  auto& holder_client = client();
  auto& held = lock(holder_client, 0);
  ASSERT_TRUE(held.try_acquire_for(kLongWait));
  auto& waiting_client = client();
  auto& waiting = lock(waiting_client, 0);
  const auto first_epoch = waiting_client.session_epoch();

  std::mutex mutex;
  std::vector<std::uint64_t> epochs;  // guarded by mutex: of each grant
  std::promise<void> all_ended;
  for (int i = 0; i < kWaiters; ++i)
    waiting.async_acquire_guard(Clock::now() + kLongWait, {},
                                [&](std::exception_ptr error, LockGuard guard) {
                                  if (error) ADD_FAILURE() << "an acquire failed";
                                  std::lock_guard lock(mutex);
                                  epochs.push_back(guard ? guard.grant().session_epoch() : 0);
                                  if (epochs.size() == kWaiters) all_ended.set_value();
                                });
  auto& keeper = *holder_client.keeper();
  ASSERT_TRUE(test::wait_children(
      keeper, dirs_[0], [](const auto& n) { return n.size() == kWaiters + 1; }, kLongWait));
  const auto old_session = waiting_client.keeper()->session_id();
  test::expire_session(*waiting_client.keeper());
  // They come back on the next session, behind the holder. (The count alone
  // may still be the old session's nodes, not yet gone on the holder's
  // server: wait for the Client's new session and nodes that are all its.)
  ASSERT_TRUE(test::wait_new_session(waiting_client, first_epoch));
  ASSERT_TRUE(test::wait_children(
      keeper, dirs_[0],
      [&](const auto& names) {
        if (names.size() != kWaiters + 1) return false;
        for (const auto& name : names) {
          const auto stat = keeper.exists(dirs_[0] + "/" + name);
          if (!stat || stat->ephemeral_owner == old_session) return false;
        }
        return true;
      },
      kLongWait));
  EXPECT_GT(waiting_client.session_epoch(), first_epoch);
  EXPECT_TRUE(held.release());
  ASSERT_EQ(all_ended.get_future().wait_for(kLongWait + 10s), std::future_status::ready);
  std::lock_guard lock(mutex);
  for (const auto epoch : epochs) EXPECT_GT(epoch, first_epoch);  // granted, not from the old one
}

}  // namespace
}  // namespace zkr
