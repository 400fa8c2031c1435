// The semaphore's forms with no thread waiting, on the in-memory ensemble:
// InterProcessSemaphoreV2::async_acquire (n leases, all or none) with a
// callback and through zkr/asio.hpp (use_awaitable, a cancelling timer),
// and InterProcessSemaphoreMutex's guard forms, blocking and async.
#include <gtest/gtest.h>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <future>
#include <thread>
#include <vector>

#include "lock_fixture.hpp"
#include "zkr/asio.hpp"
#include "zkr/semaphore.hpp"

namespace zkr {
namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using namespace boost::asio::experimental::awaitable_operators;

const std::string kLeases = kDir + "/leases";

std::chrono::steady_clock::time_point in(std::chrono::milliseconds d) {
  return std::chrono::steady_clock::now() + d;
}

struct Outcome {
  bool error = false;
  std::vector<SemaphoreLease> leases;
};

class SemaphoreAsyncTest : public LockUnitTest<InterProcessMutex> {
 protected:
  std::unique_ptr<InterProcessSemaphoreV2> semaphore_for(Contender& c, int max) {
    return std::make_unique<InterProcessSemaphoreV2>(*c.client, kDir, SemaphoreLimit::fixed(max));
  }
  std::size_t leases() { return ensemble_.children_now(kLeases).size(); }
  bool wait_leases(std::size_t n) {
    return test::wait_children(
        raw(), kLeases, [n](const auto& names) { return names.size() == n; }, kWait);
  }
  // async_acquire with a callback, its outcome as a future.
  std::future<Outcome> acquire_async(InterProcessSemaphoreV2& s, int n,
                                     std::optional<std::chrono::steady_clock::time_point> deadline,
                                     std::stop_token stop = {}) {
    auto done = std::make_shared<std::promise<Outcome>>();
    auto outcome = done->get_future();
    s.async_acquire(n, deadline, std::move(stop),
                    [done](std::exception_ptr error, std::vector<SemaphoreLease> leases) {
                      done->set_value({static_cast<bool>(error), std::move(leases)});
                    });
    return outcome;
  }
  void run_io() {
    io_thread_ = std::jthread([this] { io_.run(); });
  }
  void TearDown() override {
    work_.reset();
    if (io_thread_.joinable()) io_thread_.join();
  }

  net::io_context io_;
  net::executor_work_guard<net::io_context::executor_type> work_ = net::make_work_guard(io_);
  std::jthread io_thread_;
};

// Two of three leases held: an async acquire of two gets one, then waits
// for the second until stopped, and gives the first back. One is had.
TEST_F(SemaphoreAsyncTest, AllOrNoneWithACallback) {
  auto& a = contender();
  auto& b = contender();
  auto sa = semaphore_for(a, 3);
  auto sb = semaphore_for(b, 3);
  auto held = sa->try_acquire_for(2, kWait);
  ASSERT_EQ(held.size(), 2u);
  std::stop_source stop;
  auto two = acquire_async(*sb, 2, std::nullopt, stop.get_token());
  // B's first lease granted, its second queued over the limit.
  ASSERT_TRUE(wait_leases(4));
  EXPECT_EQ(two.wait_for(0s), std::future_status::timeout);
  stop.request_stop();
  ASSERT_EQ(two.wait_for(kWait), std::future_status::ready);
  auto outcome = two.get();
  EXPECT_FALSE(outcome.error);
  EXPECT_TRUE(outcome.leases.empty());
  EXPECT_TRUE(wait_leases(2));
  EXPECT_TRUE(no_ephemerals_of(b));
  auto one = acquire_async(*sb, 1, in(kWait));
  ASSERT_EQ(one.wait_for(kWait), std::future_status::ready);
  outcome = one.get();
  ASSERT_EQ(outcome.leases.size(), 1u);
  EXPECT_FALSE(outcome.leases[0].grant().lost());
  EXPECT_EQ(leases(), 3u);
  EXPECT_THROW(sb->async_acquire(4, {}, {}, [](std::exception_ptr, std::vector<SemaphoreLease>) {}),
               std::invalid_argument);
}

// A stop while it waits ends it at once, with nothing left of ours.
TEST_F(SemaphoreAsyncTest, AStopEndsTheWait) {
  auto& a = contender();
  auto& b = contender();
  auto sa = semaphore_for(a, 1);
  auto sb = semaphore_for(b, 1);
  auto held = sa->try_acquire_for(1, kWait);
  ASSERT_EQ(held.size(), 1u);
  std::stop_source stop;
  auto waiting = acquire_async(*sb, 1, std::nullopt, stop.get_token());
  ASSERT_TRUE(wait_leases(2));
  stop.request_stop();
  ASSERT_EQ(waiting.wait_for(kWait), std::future_status::ready);
  auto outcome = waiting.get();
  EXPECT_FALSE(outcome.error);
  EXPECT_TRUE(outcome.leases.empty());
  EXPECT_TRUE(no_ephemerals_of(b));
}

TEST_F(SemaphoreAsyncTest, UseAwaitableYieldsTheLeasesAndTheyGoWithTheCoroutine) {
  auto& a = contender();
  auto s = semaphore_for(a, 4);
  run_io();
  auto done = net::co_spawn(
      io_,
      [&]() -> net::awaitable<std::size_t> {
        auto leases = co_await asio::async_acquire(*s, 3, in(kWait), net::use_awaitable);
        EXPECT_EQ(ensemble_.children_now(kLeases).size(), 3u);
        co_return leases.size();
      },
      net::use_future);
  ASSERT_EQ(done.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(done.get(), 3u);
  EXPECT_TRUE(wait_leases(0));  // released when the coroutine's leases went
}

// A timer racing the acquire wins: Asio cancels it, and it leaves the
// internal lock and its lease node.
TEST_F(SemaphoreAsyncTest, ACancelledAcquireLeavesNothing) {
  auto& a = contender();
  auto& w = contender();
  auto sa = semaphore_for(a, 1);
  auto sw = semaphore_for(w, 1);
  auto held = sa->try_acquire_for(1, kWait);
  ASSERT_EQ(held.size(), 1u);
  run_io();
  auto done = net::co_spawn(
      io_,
      [&]() -> net::awaitable<int> {
        net::steady_timer timer(io_, 300ms);
        auto first = co_await (asio::async_acquire(*sw, 1, std::nullopt, net::use_awaitable) ||
                               timer.async_wait(net::use_awaitable));
        co_return static_cast<int>(first.index());
      },
      net::use_future);
  ASSERT_EQ(done.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(done.get(), 1);  // the timer
  EXPECT_TRUE(no_ephemerals_of(w));
  EXPECT_EQ(leases(), 1u);
}

// A guard owns one grant of its own, released from any thread; the async
// guard the same through Asio.
TEST_F(SemaphoreAsyncTest, CuratorSemaphoreMutexGuards) {
  auto& a = contender();
  auto& b = contender();
  InterProcessSemaphoreMutex mutex(*a.client, kDir);
  InterProcessSemaphoreMutex other(*b.client, kDir);
  LockGuard held = mutex.try_acquire_guard_for(kWait);
  ASSERT_TRUE(held);
  EXPECT_FALSE(mutex.is_acquired_in_this_process()) << "a guard's grant is its own";
  EXPECT_FALSE(other.try_acquire());
  std::thread([held = std::move(held)]() mutable { EXPECT_TRUE(held.unlock()); }).join();
  EXPECT_TRUE(wait_leases(0));
  run_io();
  auto guard =
      asio::async_acquire_guard(other, in(kWait), net::bind_executor(io_, net::use_future));
  ASSERT_EQ(guard.wait_for(kWait), std::future_status::ready);
  LockGuard second = guard.get();
  ASSERT_TRUE(second);
  EXPECT_FALSE(mutex.try_acquire());
  EXPECT_TRUE(second.unlock());
  EXPECT_TRUE(mutex.try_acquire_for(kWait));
  EXPECT_TRUE(mutex.release());
}

}  // namespace
}  // namespace zkr
