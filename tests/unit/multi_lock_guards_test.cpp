// MultiLock's guard forms on the in-memory ensemble: all or none, owned by
// the guards (not a thread) and outliving the MultiLock, never granted
// across two sessions, stopped or cancelled (Asio) with nothing left.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <future>
#include <thread>

#include "support/fake_keeper.hpp"
#include "support/waits.hpp"
#include "zkr/asio.hpp"
#include "zkr/multi_lock.hpp"

namespace zkr {
namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using namespace boost::asio::experimental::awaitable_operators;
using Guards = std::vector<LockGuard>;

class MultiLockGuardsTest : public ::testing::Test {
 protected:
  Client& client() {
    ClientOptions options;
    options.connect_string = "127.0.0.1:2181";
    options.keeper_factory = ensemble_.factory();
    clients_.push_back(std::make_unique<Client>(options));
    EXPECT_TRUE(clients_.back()->block_until_connected(5s));
    return *clients_.back();
  }
  std::size_t nodes_under(const std::vector<std::string>& dirs) {
    std::size_t n = 0;
    for (const auto& dir : dirs) n += ensemble_.children_now(dir).size();
    return n;
  }
  bool wait_nodes(const std::string& dir, std::size_t n) {
    return test::wait_children(
        *ensemble_.connect(), dir, [n](const auto& names) { return names.size() == n; }, 5s);
  }
  // async_acquire_guards with a callback, its outcome as a future.
  std::future<Guards> guards_async(MultiLock& lock,
                                   std::optional<std::chrono::steady_clock::time_point> deadline,
                                   std::stop_token stop = {}) {
    auto done = std::make_shared<std::promise<Guards>>();
    auto outcome = done->get_future();
    lock.async_acquire_guards(deadline, std::move(stop), [done](std::exception_ptr e, Guards g) {
      if (e) done->set_exception(e);
      else done->set_value(std::move(g));
    });
    return outcome;
  }
  test::FakeEnsemble ensemble_;
  std::vector<std::unique_ptr<Client>> clients_;
};

TEST_F(MultiLockGuardsTest, AllOrNoneAndTheGuardsOutliveTheLock) {
  InterProcessMutex b(client(), "/l/b");
  ASSERT_TRUE(b.try_acquire());
  auto both =
      std::make_unique<MultiLock>(client(), std::vector<std::string>{"/l/c", "/l/a", "/l/b"});
  EXPECT_TRUE(both->try_acquire_guards_for(100ms).empty());
  EXPECT_EQ(nodes_under({"/l/a", "/l/c"}), 0u);  // /l/a was taken, then given back
  EXPECT_TRUE(b.release());
  auto guards = both->try_acquire_guards_for(5s);
  ASSERT_EQ(guards.size(), 3u);
  for (std::size_t i = 0; i < guards.size(); ++i) {
    EXPECT_EQ(guards[i].grant().node_path().rfind(both->paths()[i] + "/", 0), 0u)
        << "guard " << i << " is not of " << both->paths()[i];
  }
  EXPECT_FALSE(both->is_acquired_in_this_process()) << "guards are no thread's";
  EXPECT_FALSE(b.try_acquire());
  both.reset();
  EXPECT_EQ(nodes_under({"/l/a", "/l/b", "/l/c"}), 3u);
  std::thread([guards = std::move(guards)]() mutable { guards.clear(); }).join();
  EXPECT_EQ(nodes_under({"/l/a", "/l/b", "/l/c"}), 0u);
}

// As the blocking form's test of that name: the session ends after the first
// guard is granted and while the second is awaited; another client takes
// the first path. The set must not be granted then, but once it is free.
TEST_F(MultiLockGuardsTest, ASessionLostWhileTakingTheSetIsNeverGrantedHalfLost) {
  auto& mine = client();
  InterProcessMutex other_b(client(), "/l/b");
  ASSERT_TRUE(other_b.try_acquire());
  MultiLock both(mine, {"/l/a", "/l/b"});
  auto taking = guards_async(both, std::chrono::steady_clock::now() + 10s);
  ASSERT_TRUE(wait_nodes("/l/b", 2));
  ensemble_.expire(mine.keeper()->session_id());
  InterProcessMutex other_a(client(), "/l/a");
  ASSERT_TRUE(other_a.try_acquire_for(5s));
  other_b.release();
  EXPECT_TRUE(wait_nodes("/l/a", 2));  // it started over and waits for a
  EXPECT_EQ(taking.wait_for(0s), std::future_status::timeout) << "granted half lost";
  other_a.release();
  ASSERT_EQ(taking.wait_for(10s), std::future_status::ready);
  auto guards = taking.get();
  ASSERT_EQ(guards.size(), 2u);
  for (const auto& guard : guards) {
    EXPECT_TRUE(guard.grant().held());
    EXPECT_EQ(guard.grant().session_epoch(), mine.session_epoch());
  }
}

TEST_F(MultiLockGuardsTest, AStopGivesEverythingBack) {
  auto& mine = client();
  InterProcessMutex b(client(), "/l/b");
  ASSERT_TRUE(b.try_acquire());
  MultiLock both(mine, {"/l/a", "/l/b"});
  std::stop_source stop;
  auto taking = guards_async(both, std::nullopt, stop.get_token());
  ASSERT_TRUE(wait_nodes("/l/b", 2));
  stop.request_stop();
  ASSERT_EQ(taking.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(taking.get().empty());
  EXPECT_TRUE(ensemble_.ephemerals_of(mine.keeper()->session_id()).empty());
  EXPECT_TRUE(b.release());
}

TEST_F(MultiLockGuardsTest, AsioCompletesOrIsCancelledLeavingNothing) {
  auto& mine = client();
  MultiLock both(mine, {"/l/a", "/l/b"});
  net::io_context io;
  auto done = net::co_spawn(
      io,
      [&]() -> net::awaitable<std::size_t> {
        auto guards = co_await asio::async_acquire_guards(
            both, std::chrono::steady_clock::now() + 5s, net::use_awaitable);
        co_return guards.size();
      },
      net::use_future);
  io.run();
  ASSERT_EQ(done.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(done.get(), 2u);
  EXPECT_EQ(nodes_under({"/l/a", "/l/b"}), 0u);  // released with the coroutine's guards

  InterProcessMutex b(client(), "/l/b");
  ASSERT_TRUE(b.try_acquire());
  io.restart();
  auto raced = net::co_spawn(
      io,
      [&]() -> net::awaitable<int> {
        net::steady_timer timer(io, 300ms);
        auto first = co_await (asio::async_acquire_guards(both, std::nullopt, net::use_awaitable) ||
                               timer.async_wait(net::use_awaitable));
        co_return static_cast<int>(first.index());
      },
      net::use_future);
  io.run();
  ASSERT_EQ(raced.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(raced.get(), 1);  // the timer
  EXPECT_TRUE(ensemble_.ephemerals_of(mine.keeper()->session_id()).empty());
  EXPECT_TRUE(b.release());
}

}  // namespace
}  // namespace zkr
