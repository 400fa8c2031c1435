// A coroutine that owns a term of the LeaderSelector protocol: the protocol is
// a hold of our InterProcessMutex with the participant id as the node's data,
// so a coroutine takes part by awaiting that mutex's guard
// (zkr::asio::async_acquire_guard) and leads while it keeps the guard. A
// LeaderSelector on the same path queues in the same line and names it.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <future>
#include <thread>

#include "lock_fixture.hpp"
#include "zkr/asio.hpp"
#include "zkr/leader_selector.hpp"

namespace zkr {
namespace {

namespace net = boost::asio;

class LeaderSelectorAsioTest : public LockUnitTest<InterProcessMutex> {
 protected:
  void TearDown() override {
    work_.reset();
    if (io_thread_.joinable()) io_thread_.join();
  }
  net::io_context io_;
  net::executor_work_guard<net::io_context::executor_type> work_ = net::make_work_guard(io_);
  std::jthread io_thread_{[this] { io_.run(); }};
};

TEST_F(LeaderSelectorAsioTest, ACoroutineOwnsATermInTheSelectorsQueue) {
  test::Latch thread_leads, thread_may_end;
  LeaderSelector selector(*contender().client, kDir, "thread", [&](const LeaderTerm&) {
    thread_leads.open();
    ASSERT_TRUE(thread_may_end.wait(kWait));
  });
  selector.start();
  ASSERT_TRUE(thread_leads.wait(kWait));

  LockOptions as_participant;
  as_participant.holder_id = "coroutine";
  InterProcessMutex leadership(*contender().client, kDir, as_participant);
  test::Latch coroutine_may_end;
  auto led = net::co_spawn(
      io_,
      [&]() -> net::awaitable<std::string> {
        LockGuard term = co_await asio::async_acquire_guard(leadership, net::use_awaitable);
        // The term: our node first; the selector names us and does not lead.
        const auto leader = selector.leader().value_or(Participant{}).id;
        const bool selector_leads = selector.has_leadership();
        const auto node = ensemble_.exists_now(term.grant().node_path());
        const bool epoch_is_czxid = node && node->czxid == term.grant().fencing_token();
        if (!coroutine_may_end.wait(kWait)) co_return "not ended";
        term.unlock();  // the term ends: the next participant may lead
        co_return leader + (selector_leads ? " beside the selector" : "") +
            (epoch_is_czxid ? "" : " (epoch is not the czxid)");
      },
      net::use_future);
  ASSERT_TRUE(wait_queue_length(2));
  std::vector<std::string> ids;
  for (const auto& p : selector.participants()) ids.push_back(p.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"thread", "coroutine"}));

  thread_may_end.open();  // the selector's term ends; the coroutine leads
  ASSERT_TRUE(test::wait_children(
      raw(), kDir, [](const auto& names) { return names.size() == 1; }, kWait));
  coroutine_may_end.open();
  ASSERT_EQ(led.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(led.get(), "coroutine");
  selector.close();
  EXPECT_TRUE(wait_queue_length(0));
}

}  // namespace
}  // namespace zkr
