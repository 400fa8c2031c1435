// zkr/asio.hpp on the in-memory ensemble: every kind of completion token
// (use_awaitable, use_future, deferred, a plain callback) completes on the
// handler's executor; Asio's per-operation cancellation (a bound slot, or a
// timer racing the acquire) stops the acquire and leaves no node behind;
// many coroutines on one thread queue on many keys and are all granted.
#include "zkr/asio.hpp"

#include <gtest/gtest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <map>
#include <thread>
#include <variant>

#include "lock_fixture.hpp"

namespace zkr {
namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using namespace boost::asio::experimental::awaitable_operators;

std::chrono::steady_clock::time_point in(std::chrono::milliseconds d) {
  return std::chrono::steady_clock::now() + d;
}

class AsioTest : public LockUnitTest<InterProcessMutex> {
 protected:
  // Runs the io_context on a thread of its own until the test ends.
  void run_io() {
    io_thread_ = std::jthread([this] { io_.run(); });
    io_id_ = io_thread_.get_id();
  }
  void TearDown() override {
    work_.reset();
    if (io_thread_.joinable()) io_thread_.join();
  }

  net::io_context io_;
  net::executor_work_guard<net::io_context::executor_type> work_ = net::make_work_guard(io_);
  std::jthread io_thread_;
  std::thread::id io_id_;
};

TEST_F(AsioTest, UseAwaitableYieldsTheGuardOnTheCoroutinesExecutor) {
  auto lock = lock_for(contender());
  run_io();
  auto done = net::co_spawn(
      io_,
      [&]() -> net::awaitable<bool> {
        LockGuard held = co_await asio::async_acquire_guard(*lock, in(kWait), net::use_awaitable);
        EXPECT_EQ(std::this_thread::get_id(), io_id_);
        co_return static_cast<bool>(held) && !held.grant().lost();
      },
      net::use_future);
  ASSERT_EQ(done.wait_for(kWait), std::future_status::ready);
  EXPECT_TRUE(done.get());
  EXPECT_TRUE(wait_queue_length(0));  // released when the coroutine's guard went
}

TEST_F(AsioTest, UseFutureAndDeferredAndACallbackAllComplete) {
  auto lock = lock_for(contender());
  run_io();
  auto future =
      asio::async_acquire_guard(*lock, in(kWait), net::bind_executor(io_, net::use_future));
  ASSERT_EQ(future.wait_for(kWait), std::future_status::ready);
  LockGuard first = future.get();
  ASSERT_TRUE(first);
  EXPECT_TRUE(first.unlock());

  // Deferred: nothing is sent until the operation is started.
  auto op = asio::async_acquire_guard(*lock, in(kWait), net::deferred);
  ASSERT_TRUE(wait_queue_length(0));
  ASSERT_TRUE(ensemble_.wait_idle());  // a started acquire would have sent its create by now
  EXPECT_TRUE(lock_nodes().empty());
  std::promise<std::thread::id> called_on;
  std::move(op)(net::bind_executor(io_, [&](std::exception_ptr error, LockGuard guard) {
    EXPECT_FALSE(error);
    EXPECT_TRUE(guard);
    called_on.set_value(std::this_thread::get_id());
  }));
  auto on = called_on.get_future();
  ASSERT_EQ(on.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(on.get(), io_id_);
}

// A timer racing the acquire: the timer wins, and Asio cancels the acquire,
// which leaves the queue.
TEST_F(AsioTest, ACancelledAcquireLeavesTheQueue) {
  auto held = lock_for(contender());
  ASSERT_TRUE(held->try_acquire());
  auto& w = contender();
  auto waiting = lock_for(w);
  run_io();
  auto done = net::co_spawn(
      io_,
      [&]() -> net::awaitable<int> {
        net::steady_timer timer(io_, 200ms);
        auto first = co_await (asio::async_acquire_guard(*waiting, net::use_awaitable) ||
                               timer.async_wait(net::use_awaitable));
        co_return static_cast<int>(first.index());
      },
      net::use_future);
  ASSERT_EQ(done.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(done.get(), 1);  // the timer
  EXPECT_TRUE(no_ephemerals_of(w));
  EXPECT_EQ(lock_nodes().size(), 1u);  // the holder's
  EXPECT_TRUE(held->release());
}

// A cancellation slot bound by hand, emitted on the executor while the
// acquire waits: it completes at once with an empty guard.
TEST_F(AsioTest, ABoundCancellationSlotStopsTheWait) {
  auto held = lock_for(contender());
  ASSERT_TRUE(held->try_acquire());
  auto& w = contender();
  auto waiting = lock_for(w);
  net::cancellation_signal cancel;
  std::promise<std::pair<bool, bool>> ended;  // (error, guard)
  asio::async_acquire_guard(
      *waiting, in(60s),
      net::bind_cancellation_slot(
          cancel.slot(), net::bind_executor(io_, [&](std::exception_ptr error, LockGuard guard) {
            ended.set_value({static_cast<bool>(error), static_cast<bool>(guard)});
          })));
  ASSERT_TRUE(wait_queue_length(2));
  run_io();
  net::post(io_, [&] { cancel.emit(net::cancellation_type::terminal); });
  auto outcome = ended.get_future();
  ASSERT_EQ(outcome.wait_for(5s), std::future_status::ready);  // not the 60 s deadline
  EXPECT_EQ(outcome.get(), std::make_pair(false, false));
  EXPECT_TRUE(no_ephemerals_of(w));
  EXPECT_TRUE(held->release());
}

// 500 coroutines on one thread, queued on 10 keys of one Client: all
// granted, one at a time per key.
TEST_F(AsioTest, ManyCoroutinesOnOneThreadAreAllGranted) {
  constexpr int kKeys = 10;
  constexpr int kPerKey = 50;
  auto& c = contender();
  std::vector<std::unique_ptr<InterProcessMutex>> keys;
  for (int k = 0; k < kKeys; ++k)
    keys.push_back(std::make_unique<InterProcessMutex>(*c.client, kDir + "-" + std::to_string(k)));
  std::map<int, int> holding;  // per key; only the io thread touches it
  int granted = 0;
  int overlaps = 0;
  for (int k = 0; k < kKeys; ++k)
    for (int i = 0; i < kPerKey; ++i)
      net::co_spawn(
          io_,
          [&, k]() -> net::awaitable<void> {
            LockGuard held =
                co_await asio::async_acquire_guard(*keys[k], in(60s), net::use_awaitable);
            if (!held) co_return;
            if (holding[k]++ != 0) ++overlaps;
            // Holds across a suspension: another coroutine of the key would
            // run now if it had been granted too.
            net::steady_timer pause(io_, 1ms);
            co_await pause.async_wait(net::use_awaitable);
            --holding[k];
            ++granted;
          },
          net::detached);
  work_.reset();
  std::jthread runner([&] { io_.run(); });  // returns once every coroutine ended
  runner.join();
  EXPECT_EQ(granted, kKeys * kPerKey);
  EXPECT_EQ(overlaps, 0);
}

}  // namespace
}  // namespace zkr
