// zkr::asio::async_await_leadership on the in-memory ensemble: a coroutine
// awaits leadership with use_awaitable, and Asio's per-operation cancellation
// stops a waiting participant and leaves no node behind.
#include <gtest/gtest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <future>
#include <thread>

#include "lock_fixture.hpp"
#include "zkr/asio.hpp"
#include "zkr/leader_latch.hpp"

namespace zkr {
namespace {

namespace net = boost::asio;

class LeaderLatchAsioTest : public LockUnitTest<InterProcessMutex> {
 protected:
  void TearDown() override {
    work_.reset();
    if (io_thread_.joinable()) io_thread_.join();
  }
  net::io_context io_;
  net::executor_work_guard<net::io_context::executor_type> work_ = net::make_work_guard(io_);
  std::jthread io_thread_{[this] { io_.run(); }};
};

TEST_F(LeaderLatchAsioTest, ACoroutineAwaitsLeadership) {
  LeaderLatch first(*contender().client, kDir, "first");
  ASSERT_TRUE(first.try_await_leadership());
  LeaderLatch second(*contender().client, kDir, "second");
  auto led = net::co_spawn(
      io_,
      [&]() -> net::awaitable<bool> {
        const bool leader =
            co_await asio::async_await_leadership(second, std::nullopt, net::use_awaitable);
        co_return leader&& second.has_leadership();
      },
      net::use_future);
  ASSERT_TRUE(wait_queue_length(2));
  first.close();
  ASSERT_EQ(led.wait_for(kWait), std::future_status::ready);
  EXPECT_TRUE(led.get());
}

TEST_F(LeaderLatchAsioTest, CancellationLeavesNoNode) {
  LeaderLatch first(*contender().client, kDir, "first");
  ASSERT_TRUE(first.try_await_leadership());
  auto& c = contender();
  LeaderLatch second(*c.client, kDir, "second");
  net::cancellation_signal cancel;
  std::promise<std::pair<bool, bool>> outcome;  // (error, leader)
  asio::async_await_leadership(
      second, std::nullopt,
      net::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr error, bool leader) {
        outcome.set_value({error != nullptr, leader});
      }));
  ASSERT_TRUE(wait_queue_length(2));
  net::post(io_, [&] { cancel.emit(net::cancellation_type::terminal); });
  auto done = outcome.get_future();
  ASSERT_EQ(done.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(done.get(), std::make_pair(false, false));
  ASSERT_TRUE(wait_queue_length(1));
  EXPECT_TRUE(no_ephemerals_of(c));
}

}  // namespace
}  // namespace zkr
