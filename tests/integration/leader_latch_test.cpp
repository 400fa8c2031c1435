// LeaderLatch on the live three-server ensemble: one leader at a time judged
// from the servers' state, failover when the leader closes, and when its
// session expires.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "lock_driver.hpp"
#include "support/ensemble.hpp"
#include "support/waits.hpp"
#include "zkr/leader_latch.hpp"
#include "zkr/lock.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;

using test::kWait;

class LeaderLatchIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (test::connect_string().empty()) GTEST_SKIP() << "no ensemble: run scripts/test";
    dir_ = test::unique_path("latch");
    resource_ = dir_ + "-resource";
  }

  void TearDown() override {
    latches_.clear();
    if (!clients_.empty()) {
      auto& keeper = *clients_.front()->keeper();
      EXPECT_TRUE(test::wait_children(
          keeper, dir_, [](const auto& n) { return n.empty(); }, kWait))
          << "latch nodes left behind in " << dir_;
      (void)keeper.try_remove(dir_);
      (void)keeper.try_remove(resource_);
    }
    clients_.clear();
  }

  Client& client(std::chrono::milliseconds session_timeout = 6s) {
    ClientOptions options;
    options.connect_string = test::connect_string();
    options.session_timeout = session_timeout;
    options.retry_policy = std::make_shared<ExponentialBackoffRetry>(50ms, 10, 1s);
    clients_.push_back(std::make_unique<Client>(options));
    EXPECT_TRUE(clients_.back()->block_until_connected(kWait));
    return *clients_.back();
  }

  LeaderLatch& latch(Client& c, const std::string& id) {
    latches_.push_back(std::make_unique<LeaderLatch>(c, dir_, id));
    return *latches_.back();
  }

  bool wait_queue_length(std::size_t n) {
    return test::wait_children(
        *clients_.front()->keeper(), dir_, [n](const auto& names) { return names.size() == n; },
        kWait);
  }

  // The servers' view, after a sync: the first node of the latch queue, and its owner.
  std::pair<std::string, std::int64_t> first_of_queue(Keeper& keeper) {
    keeper.sync(dir_);
    const auto queue =
        detail::sorted_queue_nodes(keeper.children(dir_).names, detail::QueueFamily::latch);
    if (queue.empty()) return {};
    const auto path = dir_ + "/" + queue.front();
    const auto stat = keeper.exists(path);
    return {path, stat ? stat->ephemeral_owner : 0};
  }

  std::string dir_, resource_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::vector<std::unique_ptr<LeaderLatch>> latches_;  // destroyed before their clients
};

std::future<bool> await_async(LeaderLatch& latch) {
  auto done = std::make_shared<std::promise<bool>>();
  auto future = done->get_future();
  latch.async_await_leadership(std::nullopt, {}, [done](std::exception_ptr error, bool leader) {
    if (error) done->set_exception(error);
    else done->set_value(leader);
  });
  return future;
}

bool resolved_in_time(std::future<bool>& f) {
  return f.wait_for(kWait) == std::future_status::ready;
}

// Each term: the servers list our node first, owned by our session; the
// leader's guarded write applies; nobody else leads meanwhile.
TEST_F(LeaderLatchIntegrationTest, OneLeaderAtATime) {
  constexpr int kParticipants = 3, kTerms = 4;
  std::vector<Client*> clients;
  for (int i = 0; i < kParticipants; ++i) clients.push_back(&client());
  clients.front()->keeper()->create(resource_, "");
  std::atomic<int> leading{0}, overlaps{0}, not_first{0}, writes_refused{0}, terms{0};
  std::atomic<std::size_t> longest_queue{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kParticipants; ++i)
    threads.emplace_back([&, i] {
      auto& keeper = *clients[i]->keeper();
      for (int t = 0; t < kTerms; ++t) {
        LeaderLatch latch(*clients[i], dir_, "p" + std::to_string(i));
        if (!latch.try_await_leadership_for(kWait)) continue;
        if (leading.fetch_add(1) != 0) ++overlaps;
        ++terms;
        const auto [first, owner] = first_of_queue(keeper);
        if (first != latch.term().node_path() || owner != keeper.session_id()) ++not_first;
        longest_queue = std::max(longest_queue.load(), keeper.children(dir_).names.size());
        const auto wrote =
            guarded_write(keeper, latch.term(), {op::Set{resource_, "p" + std::to_string(i)}});
        if (!wrote.applied()) ++writes_refused;
        leading.fetch_sub(1);
        latch.close();
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(terms.load(), kParticipants * kTerms);
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(not_first.load(), 0);
  EXPECT_EQ(writes_refused.load(), 0);
  EXPECT_GE(longest_queue.load(), 2u);  // leaders had others queued behind them
}

TEST_F(LeaderLatchIntegrationTest, FailoverWhenTheLeaderCloses) {
  auto& a = latch(client(), "a");
  auto& b = latch(client(), "b");
  auto& c = latch(client(), "c");
  ASSERT_TRUE(a.try_await_leadership_for(kWait));
  auto b_leads = await_async(b);
  ASSERT_TRUE(wait_queue_length(2));
  auto c_leads = await_async(c);
  ASSERT_TRUE(wait_queue_length(3));
  std::vector<std::string> ids;
  for (const auto& p : c.participants()) ids.push_back(p.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"a", "b", "c"}));
  const auto epoch_a = *a.epoch();
  a.close();
  ASSERT_TRUE(resolved_in_time(b_leads));
  EXPECT_TRUE(b_leads.get());
  EXPECT_GT(*b.epoch(), epoch_a);
  EXPECT_EQ(c.leader().value_or(LatchParticipant{}).id, "b");
  EXPECT_FALSE(c.has_leadership());
  b.close();
  ASSERT_TRUE(resolved_in_time(c_leads));
  EXPECT_TRUE(c_leads.get());
  c.close();
}

TEST_F(LeaderLatchIntegrationTest, FailoverWhenTheLeadersSessionExpires) {
  auto& leader_client = client();
  auto& a = latch(leader_client, "a");
  auto& b_client = client();
  auto& b = latch(b_client, "b");
  ASSERT_TRUE(a.try_await_leadership_for(kWait));
  leader_client.keeper()->create(resource_, "");
  const auto old_term = a.term();
  test::Latch told;
  old_term.on_lost([&](LostReason) { told.open(); });
  auto b_leads = await_async(b);
  ASSERT_TRUE(wait_queue_length(2));
  const auto old_epoch = leader_client.session_epoch();
  test::expire_session(*leader_client.keeper());
  ASSERT_TRUE(resolved_in_time(b_leads));
  EXPECT_TRUE(b_leads.get());
  ASSERT_TRUE(told.wait(kWait));
  EXPECT_FALSE(a.has_leadership());
  EXPECT_GT(*b.epoch(), old_term.fencing_token());
  // The deposed leader's write fails; the new leader's applies.
  ASSERT_TRUE(test::wait_new_session(leader_client, old_epoch));
  const auto stale = guarded_write(*leader_client.keeper(), old_term, {op::Set{resource_, "a"}});
  EXPECT_EQ(stale.outcome, GuardedWriteResult::Outcome::lock_lost);
  EXPECT_TRUE(guarded_write(*b_client.keeper(), b.term(), {op::Set{resource_, "b"}}).applied());
  // a joins again, on its new session, behind b.
  auto a_leads = await_async(a);
  ASSERT_TRUE(wait_queue_length(2));
  EXPECT_EQ(a.leader().value_or(LatchParticipant{}).id, "b");
  b.close();
  ASSERT_TRUE(resolved_in_time(a_leads));
  EXPECT_TRUE(a_leads.get());
  EXPECT_GT(*a.epoch(), b.term().fencing_token());
  a.close();
}

}  // namespace
}  // namespace zkr
