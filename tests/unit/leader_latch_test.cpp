// LeaderLatch on the in-memory ensemble: election order, hand-over, one
// leader at a time, the lost signal before a new term, rising epochs, no node
// left by a cancelled wait, no node re-created on reconnect, re-joining when
// our node or the whole latch path is deleted, and no silent mix with locks.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>

#include "lock_driver.hpp"
#include "lock_fixture.hpp"
#include "zkr/leader_latch.hpp"

namespace zkr {
namespace {

class LeaderLatchTest : public LockUnitTest<InterProcessMutex> {
 protected:
  std::unique_ptr<LeaderLatch> latch_for(Contender& c, const std::string& id,
                                         LeaderLatchOptions options = {}) {
    return std::make_unique<LeaderLatch>(*c.client, kDir, id, options);
  }
  // The latch nodes in queue order: the leader's first.
  std::vector<std::string> latch_queue() {
    return detail::sorted_queue_nodes(lock_nodes(), detail::QueueFamily::latch);
  }
  std::string first_node() {
    const auto queue = latch_queue();
    return queue.empty() ? std::string() : kDir + "/" + queue.front();
  }
  std::vector<std::string> ids(const LeaderLatch& latch) {
    std::vector<std::string> out;
    for (const auto& p : latch.participants()) out.push_back(p.id);
    return out;
  }
};

// An await in the background, its outcome as a future.
std::future<bool> await_async(LeaderLatch& latch, std::stop_token stop = {}) {
  auto done = std::make_shared<std::promise<bool>>();
  auto future = done->get_future();
  latch.async_await_leadership(std::nullopt, std::move(stop),
                               [done](std::exception_ptr error, bool leader) {
                                 if (error) done->set_exception(error);
                                 else done->set_value(leader);
                               });
  return future;
}

bool ready(std::future<bool>& f) { return f.wait_for(kWait) == std::future_status::ready; }

TEST_F(LeaderLatchTest, ParticipantsLeadInJoinOrderAndHandOverOnClose) {
  auto a = latch_for(contender(), "a");
  auto b = latch_for(contender(), "b");
  auto c = latch_for(contender(), "c");
  ASSERT_TRUE(a->try_await_leadership());
  auto b_leads = await_async(*b);
  ASSERT_TRUE(wait_queue_length(2));
  auto c_leads = await_async(*c);
  ASSERT_TRUE(wait_queue_length(3));

  // Curator's layout: protected names with "latch-", the id as data.
  for (const auto& name : lock_nodes()) {
    EXPECT_TRUE(name.starts_with("_c_")) << name;
    EXPECT_TRUE(detail::queue_kind(name) == detail::QueueKind::latch) << name;
  }
  EXPECT_EQ(ensemble_.data_now(first_node()), "a");
  EXPECT_EQ(ids(*c), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(c->leader().value_or(LatchParticipant{}).id, "a");
  EXPECT_TRUE(c->leader().value_or(LatchParticipant{}).is_leader);
  EXPECT_TRUE(a->has_leadership());
  EXPECT_FALSE(b->has_leadership());
  EXPECT_FALSE(b->epoch());

  const auto epoch_a = *a->epoch();
  EXPECT_EQ(epoch_a, ensemble_.exists_now(first_node())->czxid);
  const auto term_a = a->term();
  a->close();  // at once: no term, node deleted, b leads
  EXPECT_FALSE(a->has_leadership());
  EXPECT_TRUE(term_a.released());
  EXPECT_FALSE(term_a.lost());  // given up, not lost
  ASSERT_TRUE(ready(b_leads));
  EXPECT_TRUE(b_leads.get());
  EXPECT_TRUE(b->has_leadership());
  EXPECT_FALSE(c->has_leadership());
  EXPECT_EQ(b->leader().value_or(LatchParticipant{}).id, "b");
  EXPECT_GT(*b->epoch(), epoch_a);
  const auto epoch_b = *b->epoch();
  b->close();
  ASSERT_TRUE(ready(c_leads));
  EXPECT_TRUE(c_leads.get());
  EXPECT_GT(*c->epoch(), epoch_b);
  EXPECT_EQ(ids(*a), (std::vector<std::string>{"c"}));
  c->close();
  EXPECT_TRUE(wait_queue_length(0));
  EXPECT_FALSE(a->leader());
}

// Each term is checked against the servers' state: our node is the first of
// the queue while we lead, and nobody else leads.
TEST_F(LeaderLatchTest, OneLeaderAtATime) {
  constexpr int kParticipants = 4, kTerms = 5;
  std::vector<Contender*> contenders;
  for (int i = 0; i < kParticipants; ++i) contenders.push_back(&contender());
  std::atomic<int> leading{0}, overlaps{0}, not_first{0};
  std::atomic<std::size_t> longest_queue{0};
  std::atomic<std::int64_t> last_epoch{0};
  std::atomic<int> epochs_not_rising{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kParticipants; ++i)
    threads.emplace_back([&, i] {
      for (int t = 0; t < kTerms; ++t) {
        auto latch = latch_for(*contenders[i], "p" + std::to_string(i));
        if (!latch->try_await_leadership_for(kWait)) continue;
        if (leading.fetch_add(1) != 0) ++overlaps;
        const auto queue = latch_queue();
        longest_queue = std::max(longest_queue.load(), queue.size());
        if (first_node() != latch->term().node_path()) ++not_first;
        const auto epoch = *latch->epoch();
        if (epoch <= last_epoch.exchange(epoch)) ++epochs_not_rising;
        leading.fetch_sub(1);
        latch->close();
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(not_first.load(), 0);
  EXPECT_EQ(epochs_not_rising.load(), 0);
  EXPECT_GE(longest_queue.load(), 2u);  // some leader had others queued behind it
  EXPECT_TRUE(lock_nodes().empty());
}

// The old term's lost callbacks have run before an await joins again, and so
// before it reports the next term. The callback looks, for a while, for a
// node of the await: none may appear while it runs (without the ordering the
// await joins in milliseconds, and this fails).
TEST_F(LeaderLatchTest, LostSignalComesBeforeANewTerm) {
  auto& a = contender();
  auto latch = latch_for(a, "a");
  ASSERT_TRUE(latch->try_await_leadership());
  const auto old_term = latch->term();
  std::mutex mutex;
  std::vector<std::string> events;
  test::Latch in_callback;
  std::atomic<bool> joined_during_callback{false};
  old_term.on_lost([&](LostReason why) {
    in_callback.open();
    joined_during_callback = test::wait_children(
        raw(), kDir, [](const auto& names) { return !names.empty(); }, 1s);
    std::lock_guard lock(mutex);
    events.push_back(std::string("lost:") + std::string(to_string(why)));
  });
  raw().remove(old_term.node_path());
  ASSERT_TRUE(in_callback.wait(kWait));
  EXPECT_FALSE(latch->has_leadership());
  const bool leader = latch->try_await_leadership_for(kWait);
  {
    std::lock_guard lock(mutex);
    events.push_back("new term");
  }
  EXPECT_TRUE(leader);
  EXPECT_FALSE(joined_during_callback.load());
  EXPECT_EQ(events, (std::vector<std::string>{"lost:node_deleted", "new term"}));
  EXPECT_GT(*latch->epoch(), old_term.fencing_token());
  EXPECT_NE(latch->term().node_path(), old_term.node_path());
}

TEST_F(LeaderLatchTest, ACancelledWaitLeavesNoNode) {
  auto leader = latch_for(contender(), "leader");
  ASSERT_TRUE(leader->try_await_leadership());
  auto& w = contender();
  auto waiter = latch_for(w, "waiter");
  // A blocking wait stopped by its token.
  std::stop_source stop;
  auto blocked =
      std::async(std::launch::async, [&] { return waiter->await_leadership(stop.get_token()); });
  ASSERT_TRUE(wait_queue_length(2));
  stop.request_stop();
  ASSERT_TRUE(ready(blocked));
  EXPECT_FALSE(blocked.get());
  ASSERT_TRUE(wait_queue_length(1));
  EXPECT_TRUE(no_ephemerals_of(w));
  // An asynchronous one.
  std::stop_source async_stop;
  auto pending = await_async(*waiter, async_stop.get_token());
  ASSERT_TRUE(wait_queue_length(2));
  async_stop.request_stop();
  ASSERT_TRUE(ready(pending));
  EXPECT_FALSE(pending.get());
  ASSERT_TRUE(wait_queue_length(1));
  EXPECT_TRUE(no_ephemerals_of(w));
  // A deadline, and a try with no wait.
  EXPECT_FALSE(waiter->try_await_leadership_for(1ms));
  EXPECT_FALSE(waiter->try_await_leadership());
  ASSERT_TRUE(wait_queue_length(1));
  EXPECT_TRUE(no_ephemerals_of(w));
  // close() ends a wait under way; the latch is then done with.
  auto closed = await_async(*waiter);
  ASSERT_TRUE(wait_queue_length(2));
  waiter->close();
  ASSERT_TRUE(ready(closed));
  EXPECT_FALSE(closed.get());
  ASSERT_TRUE(wait_queue_length(1));
  EXPECT_THROW(waiter->try_await_leadership(), std::logic_error);
  EXPECT_TRUE(leader->has_leadership());
}

TEST_F(LeaderLatchTest, ReconnectKeepsOurNodes) {
  auto& a = contender();
  auto& b = contender();
  LeaderLatchOptions ignore;
  ignore.suspended_policy = SuspendedPolicy::ignore;
  auto leader = latch_for(a, "a", ignore);
  ASSERT_TRUE(leader->try_await_leadership());
  auto waiter = latch_for(b, "b");
  auto b_leads = await_async(*waiter);
  ASSERT_TRUE(wait_queue_length(2));
  const auto before = lock_nodes();
  const auto queued = latch_queue();
  const auto zxid = ensemble_.last_zxid();
  for (auto* c : {&a, &b}) ensemble_.disconnect(session_of(*c));
  for (auto* c : {&a, &b}) ensemble_.reconnect(session_of(*c));
  for (auto* c : {&a, &b}) ASSERT_TRUE(c->client->block_until_connected(kWait));
  // The own-node reads after the reconnect, then no write at all.
  const auto term = leader->term();
  ASSERT_TRUE(test::wait_children(
      raw(), kDir,
      [&](auto n) {
        std::sort(n.begin(), n.end());
        return n == before;
      },
      kWait));
  EXPECT_EQ(ensemble_.last_zxid(), zxid);  // nothing created or deleted
  EXPECT_TRUE(leader->has_leadership());
  EXPECT_EQ(leader->term().node_path(), term.node_path());
  leader->close();
  ASSERT_TRUE(ready(b_leads));
  EXPECT_TRUE(b_leads.get());
  // b leads on the node it made before the disconnect.
  EXPECT_EQ(waiter->term().node_path(), kDir + "/" + queued.back());
}

// Under the default SuspendedPolicy::lost a suspended link ends the term,
// though the node lives on. The next await takes that node up again (no new
// node, no write at all) and leads again at once: nobody queued behind it
// can have led meanwhile, and the waiter behind keeps waiting.
TEST_F(LeaderLatchTest, AfterASuspensionTheNextAwaitTakesUpOurNodeAgain) {
  auto& a = contender();
  auto leader = latch_for(a, "a");
  ASSERT_TRUE(leader->try_await_leadership());
  const auto term = leader->term();
  test::Latch told;
  term.on_lost([&](LostReason) { told.open(); });
  auto waiter = latch_for(contender(), "b");
  auto b_leads = await_async(*waiter);
  ASSERT_TRUE(wait_queue_length(2));
  ensemble_.disconnect(session_of(a));
  ASSERT_TRUE(told.wait(kWait));
  EXPECT_EQ(term.lost_reason(), LostReason::suspended);
  EXPECT_FALSE(leader->has_leadership());
  EXPECT_FALSE(leader->epoch());
  ensemble_.reconnect(session_of(a));
  ASSERT_TRUE(a.client->block_until_connected(kWait));
  const auto zxid = ensemble_.last_zxid();
  ASSERT_TRUE(leader->try_await_leadership_for(kWait));
  EXPECT_EQ(ensemble_.last_zxid(), zxid);  // nothing created or deleted
  EXPECT_EQ(leader->term().node_path(), term.node_path());
  EXPECT_EQ(*leader->epoch(), term.fencing_token());  // the same reign, as the servers know it
  EXPECT_TRUE(term.released());  // the old handle is done with: guarded_write refuses it
  EXPECT_EQ(ensemble_.ephemerals_of(session_of(a)), std::vector<std::string>{term.node_path()});
  EXPECT_EQ(b_leads.wait_for(0s), std::future_status::timeout);
  leader->close();
  ASSERT_TRUE(ready(b_leads));
  EXPECT_TRUE(b_leads.get());
  EXPECT_GT(*waiter->epoch(), term.fencing_token());
}

// Lost to a suspension, and the next await ends before it could take the
// node up (a stop already requested, close()): the node is deleted, not left
// first in the queue.
TEST_F(LeaderLatchTest, ANodeNotTakenUpAgainIsDeleted) {
  auto& a = contender();
  auto leader = latch_for(a, "a");
  ASSERT_TRUE(leader->try_await_leadership());
  const auto term = leader->term();
  test::Latch told;
  term.on_lost([&](LostReason) { told.open(); });
  auto waiter = latch_for(contender(), "b");
  auto b_leads = await_async(*waiter);
  ASSERT_TRUE(wait_queue_length(2));
  ensemble_.disconnect(session_of(a));
  ASSERT_TRUE(told.wait(kWait));
  ensemble_.reconnect(session_of(a));
  ASSERT_TRUE(a.client->block_until_connected(kWait));
  std::stop_source stopped;
  stopped.request_stop();
  EXPECT_FALSE(leader->await_leadership(stopped.get_token()));
  EXPECT_TRUE(test::wait_gone(raw(), term.node_path(), kWait));
  ASSERT_TRUE(ready(b_leads));
  EXPECT_TRUE(b_leads.get());
  EXPECT_TRUE(no_ephemerals_of(a));
}

// Lost to a suspension, and the node deleted before the next await: that
// await queues a new node.
TEST_F(LeaderLatchTest, ANodeGoneSinceTheSuspensionIsNotTakenUp) {
  auto& a = contender();
  auto leader = latch_for(a, "a");
  ASSERT_TRUE(leader->try_await_leadership());
  const auto term = leader->term();
  test::Latch told;
  term.on_lost([&](LostReason) { told.open(); });
  ensemble_.disconnect(session_of(a));
  ASSERT_TRUE(told.wait(kWait));
  raw().remove(term.node_path());
  ensemble_.reconnect(session_of(a));
  ASSERT_TRUE(a.client->block_until_connected(kWait));
  ASSERT_TRUE(leader->try_await_leadership_for(kWait));
  EXPECT_NE(leader->term().node_path(), term.node_path());
  EXPECT_GT(*leader->epoch(), term.fencing_token());
  EXPECT_EQ(ensemble_.ephemerals_of(session_of(a)),
            std::vector<std::string>{leader->term().node_path()});
}

TEST_F(LeaderLatchTest, AWaiterJoinsAgainWhenItsNodeOrTheLatchPathIsDeleted) {
  auto leader = latch_for(contender(), "a");
  ASSERT_TRUE(leader->try_await_leadership());
  auto waiter = latch_for(contender(), "b");
  auto b_leads = await_async(*waiter);
  ASSERT_TRUE(wait_queue_length(2));
  // Everything under the latch path, and the path itself, deleted by an
  // operator at once (one at a time, b would lead on its old node first).
  const auto term = leader->term();
  test::Latch told;
  term.on_lost([&](LostReason) { told.open(); });
  const auto old_waiter_node = kDir + "/" + latch_queue().back();
  std::vector<Op> removes;
  for (const auto& name : lock_nodes()) removes.push_back(op::Remove{kDir + "/" + name});
  removes.push_back(op::Remove{kDir});
  raw().multi(std::move(removes));
  // The leader's term is lost (heard through its own session, maybe after
  // b's grant: a's watch and b's listing are two sessions' news); the
  // waiter queues again and now leads.
  ASSERT_TRUE(ready(b_leads));
  EXPECT_TRUE(b_leads.get());
  ASSERT_TRUE(told.wait(kWait));
  EXPECT_TRUE(term.lost());
  EXPECT_EQ(term.lost_reason(), LostReason::node_deleted);
  EXPECT_FALSE(leader->has_leadership());
  EXPECT_EQ(waiter->leader().value_or(LatchParticipant{}).id, "b");
  EXPECT_NE(waiter->term().node_path(), old_waiter_node);  // a node of its new queueing
  // The old leader joins again, behind b.
  EXPECT_FALSE(leader->try_await_leadership());
  auto a_leads = await_async(*leader);
  ASSERT_TRUE(wait_queue_length(2));
  waiter->close();
  ASSERT_TRUE(ready(a_leads));
  EXPECT_TRUE(a_leads.get());
  EXPECT_GT(*leader->epoch(), term.fencing_token());
}

TEST_F(LeaderLatchTest, AParticipantGoneMidReadIsLeftOut) {
  auto a = latch_for(contender(), "a");
  ASSERT_TRUE(a->try_await_leadership());
  auto b = latch_for(contender(), "b");
  auto b_leads = await_async(*b);
  ASSERT_TRUE(wait_queue_length(2));
  auto& reader = contender();
  auto observer = latch_for(reader, "observer");
  // a's node vanishes between the listing and its read.
  auto& rule = reader.faults->on(test::OpKind::get, a->term().node_path()).fail(Errc::no_node);
  const auto seen = observer->participants();
  EXPECT_EQ(rule.fired(), 1);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].id, "b");
  EXPECT_TRUE(seen[0].is_leader);  // the first one read, as Curator marks it
  reader.faults->clear();
  a->close();
  ASSERT_TRUE(ready(b_leads));
}

TEST_F(LeaderLatchTest, ALatchAndALockRefuseEachOthersPath) {
  auto& a = contender();
  auto mutex = lock_for(a);
  ASSERT_TRUE(mutex->try_acquire());
  auto& b = contender();
  auto latch = latch_for(b, "b");
  try {
    (void)latch->try_await_leadership_for(kWait);
    ADD_FAILURE() << "a latch on a lock path joined";
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::foreign_lock_protocol);
    EXPECT_NE(std::string(e.what()).find("InterProcessMutex"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(no_ephemerals_of(b));
  mutex->release();
  ASSERT_TRUE(wait_queue_length(0));

  ASSERT_TRUE(latch->try_await_leadership());
  auto other = lock_for(a);
  try {
    (void)other->try_acquire_for(kWait);
    ADD_FAILURE() << "a lock on a latch path was granted";
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::foreign_lock_protocol);
    EXPECT_NE(std::string(e.what()).find("LeaderLatch"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(no_ephemerals_of(a));
  EXPECT_TRUE(latch->has_leadership());
}

TEST_F(LeaderLatchTest, MisuseIsRefused) {
  auto& a = contender();
  EXPECT_THROW(LeaderLatch(*a.client, kDir, "two\nlines"), std::invalid_argument);
  EXPECT_THROW(LeaderLatch(*a.client, "/", "x"), std::invalid_argument);
  EXPECT_THROW(LeaderLatch(*a.client, "/" + std::string(kMaxLatchPathLength, 'p'), "x"),
               std::invalid_argument);
  auto holder = latch_for(a, "a");
  ASSERT_TRUE(holder->try_await_leadership());
  auto waiter = latch_for(contender(), "b");
  auto pending = await_async(*waiter);
  EXPECT_THROW(waiter->try_await_leadership(), std::logic_error);  // one await at a time
  EXPECT_THROW((void)LeaderLatch(*a.client, kDir, "c").term(), std::logic_error);
  // An await while leading is true at once.
  EXPECT_TRUE(holder->await_leadership());
  holder->close();
  ASSERT_TRUE(ready(pending));
  EXPECT_TRUE(pending.get());
}

}  // namespace
}  // namespace zkr
