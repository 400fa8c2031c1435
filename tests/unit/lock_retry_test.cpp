// The locks' retry loops keep the same budget as Client::with_retry
// (zkr::RetryBudget): a sleeper's virtual time counts, and a timed acquire
// never sleeps past its deadline.
#include <gtest/gtest.h>

#include "support/fake_keeper.hpp"
#include "support/fault_keeper.hpp"
#include "support/process_state.hpp"
#include "support/waits.hpp"
#include "zkr/lock.hpp"
#include "zkr/semaphore.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using test::Faults;
using test::OpKind;

constexpr auto kWait = 10s;

class LockRetryTest : public ::testing::Test {
 protected:
  LockRetryTest() {
    ClientOptions options;
    options.connect_string = "127.0.0.1:2181";  // not dialled: the factory is the fake's
    options.keeper_factory = test::with_faults(ensemble_.factory(), faults_);
    // 30 ms between tries within 100 ms: three retries, counted in sleeps.
    options.retry_policy = std::make_shared<RetryUntilElapsed>(100ms, 30ms);
    options.sleeper = sleeper_;
    options.logging.level = LogLevel::off;
    client_ = std::make_unique<Client>(options);
    EXPECT_TRUE(client_->block_until_connected(kWait));
  }

  // Every create under /locks fails as if the link dropped before it was sent.
  void creates_fail() {
    faults_->on(OpKind::create, "/locks").fail(Errc::connection_loss).times(1'000'000);
  }

  test::FakeEnsemble ensemble_;
  std::shared_ptr<Faults> faults_ = std::make_shared<Faults>();
  std::shared_ptr<RecordingSleeper> sleeper_ = std::make_shared<RecordingSleeper>();
  std::unique_ptr<Client> client_;
};

// The recording sleeper takes no time: counted by the clock alone, the budget
// would allow hundreds of retries before 100 ms of real time had passed.
TEST_F(LockRetryTest, TheMutexCountsTheSleepersTime) {
  creates_fail();
  InterProcessMutex lock(*client_, "/locks/a");
  EXPECT_THROW(lock.acquire(), KeeperError);
  EXPECT_EQ(sleeper_->delays(), std::vector<milliseconds>(3, 30ms));
}

TEST_F(LockRetryTest, TheSemaphoreCountsTheSleepersTime) {
  creates_fail();
  InterProcessSemaphoreV2 semaphore(*client_, "/locks/s", SemaphoreLimit::fixed(2));
  EXPECT_THROW((void)semaphore.acquire(1), KeeperError);
  EXPECT_EQ(sleeper_->delays(), std::vector<milliseconds>(3, 30ms));
}

// A timed acquire gives up rather than sleep past its deadline.
TEST_F(LockRetryTest, ATimedAcquireNeverSleepsPastItsDeadline) {
  creates_fail();
  InterProcessMutex lock(*client_, "/locks/a");
  EXPECT_FALSE(lock.try_acquire_for(10ms));  // the first 30 ms sleep would end past it
  EXPECT_TRUE(sleeper_->delays().empty());
}

}  // namespace
}  // namespace zkr
