// LeaderSelector on the live three-server ensemble: one leader at a time
// judged from the servers' state with guarded writes, and failover when the
// leader's session expires: its term's token stops, its write is refused,
// and it queues again on its new session.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "lock_driver.hpp"
#include "support/ensemble.hpp"
#include "support/waits.hpp"
#include "zkr/leader_selector.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;

using test::kWait;

class LeaderSelectorIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (test::connect_string().empty()) GTEST_SKIP() << "no ensemble: run scripts/test";
    dir_ = test::unique_path("selector");
    resource_ = dir_ + "-resource";
  }

  void TearDown() override {
    selectors_.clear();
    if (!clients_.empty()) {
      auto& keeper = *clients_.front()->keeper();
      EXPECT_TRUE(test::wait_children(
          keeper, dir_, [](const auto& n) { return n.empty(); }, kWait))
          << "selector nodes left behind in " << dir_;
      (void)keeper.try_remove(dir_);
      (void)keeper.try_remove(resource_);
    }
    clients_.clear();
  }

  Client& client() {
    ClientOptions options;
    options.connect_string = test::connect_string();
    options.session_timeout = 6s;
    options.retry_policy = std::make_shared<ExponentialBackoffRetry>(50ms, 10, 1s);
    clients_.push_back(std::make_unique<Client>(options));
    EXPECT_TRUE(clients_.back()->block_until_connected(kWait));
    return *clients_.back();
  }

  LeaderSelector& selector(Client& c, const std::string& id, LeaderSelector::TakeLeadership take,
                           bool auto_requeue) {
    LeaderSelectorOptions options;
    options.auto_requeue = auto_requeue;
    selectors_.push_back(
        std::make_unique<LeaderSelector>(c, dir_, id, std::move(take), std::move(options)));
    return *selectors_.back();
  }

  bool wait_queue_length(std::size_t n) {
    return test::wait_children(
        *clients_.front()->keeper(), dir_, [n](const auto& names) { return names.size() == n; },
        kWait);
  }

  // The servers' view, after a sync: the first node of the queue, and its owner.
  std::pair<std::string, std::int64_t> first_of_queue(Keeper& keeper) {
    keeper.sync(dir_);
    const auto queue = detail::sorted_lock_nodes(keeper.children(dir_).names);
    if (queue.empty()) return {};
    const auto path = dir_ + "/" + queue.front();
    const auto stat = keeper.exists(path);
    return {path, stat ? stat->ephemeral_owner : 0};
  }

  std::string dir_, resource_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::vector<std::unique_ptr<LeaderSelector>> selectors_;  // destroyed before their clients
};

// Holds a term until its token stops.
void wait_for_stop(const LeaderTerm& term) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  cv.wait(lock, term.stop, [] { return false; });
}

// Each term: the servers list our node first, owned by our session; the
// leader's guarded write applies; nobody else leads meanwhile; epochs rise.
TEST_F(LeaderSelectorIntegrationTest, OneLeaderAtATime) {
  constexpr int kParticipants = 3, kTerms = 12;
  clients_.reserve(kParticipants);
  std::vector<Client*> clients;
  for (int i = 0; i < kParticipants; ++i) clients.push_back(&client());
  clients.front()->keeper()->create(resource_, "");
  std::mutex m;
  std::condition_variable done;
  int terms = 0, overlaps = 0, not_first = 0, writes_refused = 0, epochs_not_rising = 0;
  std::int64_t last_epoch = 0;
  std::atomic<int> leading{0};
  std::size_t longest_queue = 0;
  for (int i = 0; i < kParticipants; ++i) {
    auto& keeper = *clients[i]->keeper();
    const std::string id = "p" + std::to_string(i);
    selector(
        *clients[i], id,
        [&, id](const LeaderTerm& term) {
          if (leading.fetch_add(1) != 0) ++overlaps;
          const auto [first, owner] = first_of_queue(keeper);
          const auto queued = keeper.children(dir_).names.size();
          const auto wrote = guarded_write(keeper, term.grant, {op::Set{resource_, id}});
          leading.fetch_sub(1);
          std::lock_guard lock(m);
          ++terms;
          if (first != term.grant.node_path() || owner != keeper.session_id()) ++not_first;
          if (!wrote.applied()) ++writes_refused;
          if (term.epoch() <= last_epoch) ++epochs_not_rising;
          last_epoch = term.epoch();
          longest_queue = std::max(longest_queue, queued);
          done.notify_all();
        },
        true);
  }
  for (auto& s : selectors_) s->start();
  {
    std::unique_lock lock(m);
    ASSERT_TRUE(done.wait_for(lock, kWait, [&] { return terms >= kTerms; }));
  }
  for (auto& s : selectors_) s->close();
  std::lock_guard lock(m);
  EXPECT_EQ(overlaps, 0);
  EXPECT_EQ(not_first, 0);
  EXPECT_EQ(writes_refused, 0);
  EXPECT_EQ(epochs_not_rising, 0);
  EXPECT_GE(longest_queue, 2u);  // leaders had others queued behind them
}

TEST_F(LeaderSelectorIntegrationTest, FailoverWhenTheLeadersSessionExpires) {
  auto& a_client = client();
  auto& b_client = client();
  a_client.keeper()->create(resource_, "");
  std::mutex m;
  std::condition_variable changed;
  std::vector<std::pair<std::string, Grant>> terms;
  const auto take = [&](const std::string& id) {
    return [&, id](const LeaderTerm& term) {
      {
        std::lock_guard lock(m);
        terms.emplace_back(id, term.grant);
        changed.notify_all();
      }
      wait_for_stop(term);
    };
  };
  const auto wait_terms = [&](std::size_t n) {
    std::unique_lock lock(m);
    return changed.wait_for(lock, kWait, [&] { return terms.size() >= n; });
  };
  auto& a = selector(a_client, "a", take("a"), true);
  a.start();
  ASSERT_TRUE(wait_terms(1));
  auto& b = selector(b_client, "b", take("b"), false);
  b.start();
  ASSERT_TRUE(wait_queue_length(2));
  EXPECT_EQ(b.leader().value_or(Participant{}).id, "a");

  const auto old_term = terms[0].second;
  const auto old_epoch = a_client.session_epoch();
  test::Latch told;
  old_term.on_lost([&](LostReason) { told.open(); });
  test::expire_session(*a_client.keeper());
  ASSERT_TRUE(wait_terms(2));  // b leads
  EXPECT_EQ(terms[1].first, "b");
  // a hears of its session's end in its own time, maybe after b leads: the
  // gap its guarded writes are fenced for.
  ASSERT_TRUE(told.wait(kWait));
  EXPECT_GT(terms[1].second.fencing_token(), old_term.fencing_token());
  // The deposed leader's write fails; the new leader's applies.
  ASSERT_TRUE(test::wait_new_session(a_client, old_epoch));
  EXPECT_EQ(guarded_write(*a_client.keeper(), old_term, {op::Set{resource_, "a"}}).outcome,
            GuardedWriteResult::Outcome::lock_lost);
  EXPECT_TRUE(
      guarded_write(*b_client.keeper(), terms[1].second, {op::Set{resource_, "b"}}).applied());
  // a queues again by itself, on its new session, behind b, and leads when b
  // gives up.
  ASSERT_TRUE(wait_queue_length(2));
  EXPECT_FALSE(a.has_leadership());
  EXPECT_TRUE(b.has_leadership());
  b.close();
  ASSERT_TRUE(wait_terms(3));
  EXPECT_EQ(terms[2].first, "a");
  EXPECT_GT(terms[2].second.fencing_token(), terms[1].second.fencing_token());
  EXPECT_TRUE(a.has_leadership());
  a.close();
}

}  // namespace
}  // namespace zkr
