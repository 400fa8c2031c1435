// LeaderSelector on the in-memory ensemble: terms in queue order, one at a
// time (judged from the servers' state), hand-over when the term's function
// returns, auto_requeue and requeue(), the term's stop token on loss, on
// interrupt_leadership() and on close(), the lost signal before a new term,
// errors to on_error, no node left, and misuse refused.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "lock_fixture.hpp"
#include "zkr/leader_latch.hpp"
#include "zkr/leader_selector.hpp"

namespace zkr {
namespace {

// Holds a term until its token stops.
void wait_for_stop(const LeaderTerm& term) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  cv.wait(lock, term.stop, [] { return false; });
}

// One term as its function saw it.
struct TermRecord {
  std::string id;
  std::int64_t epoch = 0;
  std::string node;
  bool first_in_queue = false;  // our node first among the servers' lock nodes
  bool stopped = false;         // it ended by its stop token, not by end_term()
};

class LeaderSelectorTest : public LockUnitTest<InterProcessMutex> {
 protected:
  // A term function that records the term, checks it against the servers'
  // state, and holds until end_term() lets it go or its token stops.
  LeaderSelector::TakeLeadership hold_until_ended(std::string id) {
    return [this, id](const LeaderTerm& term) {
      const auto q = queue();
      const bool first = !q.empty() && kDir + "/" + q.front() == term.grant.node_path();
      std::unique_lock lock(mutex_);
      if (running_++ != 0) ++overlaps_;
      terms_.push_back({id, term.epoch(), term.grant.node_path(), first, false});
      const std::size_t mine = terms_.size() - 1;
      changed_.notify_all();
      changed_.wait(lock, term.stop, [&] { return ended_ > mine; });
      terms_[mine].stopped = ended_ <= mine;
      if (ended_ <= mine) ended_ = mine + 1;
      --running_;
      changed_.notify_all();
    };
  }
  // Lets the oldest running term's function return.
  void end_term() {
    std::lock_guard lock(mutex_);
    ++ended_;
    changed_.notify_all();
  }
  bool wait_terms(std::size_t n) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kWait, [&] { return terms_.size() >= n; });
  }
  bool wait_no_term_running() {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kWait, [&] { return running_ == 0; });
  }
  std::vector<TermRecord> terms() {
    std::lock_guard lock(mutex_);
    return terms_;
  }
  std::unique_ptr<LeaderSelector> selector(Contender& c, const std::string& id,
                                           LeaderSelectorOptions options = {}) {
    return std::make_unique<LeaderSelector>(*c.client, kDir, id, hold_until_ended(id),
                                            std::move(options));
  }
  static LeaderSelectorOptions requeueing() {
    LeaderSelectorOptions options;
    options.auto_requeue = true;
    return options;
  }

  std::mutex mutex_;
  std::condition_variable_any changed_;
  std::vector<TermRecord> terms_;
  std::size_t ended_ = 0;
  int running_ = 0;
  int overlaps_ = 0;
};

TEST_F(LeaderSelectorTest, TermsFollowTheQueueOneAtATimeAndEndWhenTheFunctionReturns) {
  auto a = selector(contender(), "a");
  auto b = selector(contender(), "b");
  auto c = selector(contender(), "c");
  a->start();
  ASSERT_TRUE(wait_terms(1));
  b->start();
  ASSERT_TRUE(wait_queue_length(2));
  c->start();
  ASSERT_TRUE(wait_queue_length(3));

  // Curator's LeaderSelector layout: our mutex's nodes, the id as data.
  for (const auto& name : lock_nodes()) {
    EXPECT_TRUE(name.starts_with("_c_")) << name;
    EXPECT_TRUE(detail::queue_kind(name) == detail::QueueKind::mutex) << name;
  }
  std::vector<std::string> ids;
  for (const auto& p : c->participants()) ids.push_back(p.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(b->leader().value_or(Participant{}).id, "a");
  EXPECT_TRUE(a->has_leadership());
  EXPECT_FALSE(b->has_leadership());
  EXPECT_EQ(terms()[0].epoch, ensemble_.exists_now(terms()[0].node)->czxid);

  end_term();  // a's function returns: its node goes, b leads
  ASSERT_TRUE(wait_terms(2));
  end_term();
  ASSERT_TRUE(wait_terms(3));
  end_term();
  ASSERT_TRUE(wait_no_term_running());
  ASSERT_TRUE(wait_queue_length(0));  // nobody requeues without auto_requeue

  const auto seen = terms();
  ASSERT_EQ(seen.size(), 3u);
  for (std::size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].id, std::string(1, static_cast<char>('a' + i)));
    EXPECT_TRUE(seen[i].first_in_queue) << i;
    EXPECT_FALSE(seen[i].stopped) << i;
    if (i > 0) {
      EXPECT_GT(seen[i].epoch, seen[i - 1].epoch);
    }
  }
  EXPECT_EQ(overlaps_, 0);
  EXPECT_FALSE(a->has_leadership());
  EXPECT_FALSE(a->leader());
  // requeue() queues a selector that is neither queued nor leading, once.
  EXPECT_TRUE(a->requeue());
  EXPECT_FALSE(a->requeue());
  ASSERT_TRUE(wait_terms(4));
  EXPECT_EQ(terms()[3].id, "a");
  end_term();
  ASSERT_TRUE(wait_queue_length(0));
}

// Three selectors with auto_requeue take turns; every term is judged from the
// servers' state (its node first), none overlaps another, epochs rise, and
// the leader queues again behind the other two.
TEST_F(LeaderSelectorTest, AutoRequeueTakesTurnsWithOneLeaderAtATime) {
  constexpr std::size_t kTerms = 12;
  std::vector<std::unique_ptr<LeaderSelector>> selectors;
  for (const char* id : {"p0", "p1", "p2"})
    selectors.push_back(selector(contender(), id, requeueing()));
  for (auto& s : selectors) s->start();
  for (std::size_t n = 1; n <= kTerms; ++n) {
    ASSERT_TRUE(wait_terms(n));
    // Every term ends with all three queued (the last leader's new node in):
    // the order is then fixed, and fairness means strict turns.
    ASSERT_TRUE(wait_queue_length(3));
    end_term();
  }
  for (auto& s : selectors) s->close();
  ASSERT_TRUE(wait_queue_length(0));
  const auto seen = terms();
  ASSERT_GE(seen.size(), kTerms);
  for (std::size_t i = 0; i < seen.size(); ++i) {
    EXPECT_TRUE(seen[i].first_in_queue) << i;
    if (i > 0) {
      EXPECT_GT(seen[i].epoch, seen[i - 1].epoch) << i;
    }
    if (i >= 3 && i < kTerms) {  // fair: strict turns (closing may let one more in)
      EXPECT_EQ(seen[i].id, seen[i - 3].id) << i;
    }
  }
  EXPECT_EQ(overlaps_, 0);
}

// Our node deleted by someone: the term's token stops, and the term's lost
// callbacks have run before the selector queues again.
TEST_F(LeaderSelectorTest, LostLeadershipStopsTheTermAndItsSignalComesBeforeTheNextTerm) {
  auto& a = contender();
  std::mutex events_mutex;
  std::vector<std::string> events;
  std::condition_variable events_changed;
  std::atomic<bool> queued_during_callback{false};
  test::Latch lost_seen;
  int term_count = 0;
  LeaderSelector s(
      *a.client, kDir, "a",
      [&](const LeaderTerm& term) {
        const int n = ++term_count;
        {
          std::lock_guard lock(events_mutex);
          events.push_back("term " + std::to_string(n));
          events_changed.notify_all();
        }
        if (n > 1) return wait_for_stop(term);
        term.grant.on_lost([&](LostReason why) {
          // Looks for a while for a node of a next term: none may appear.
          queued_during_callback = test::wait_children(
              raw(), kDir, [](const auto& names) { return !names.empty(); }, 1s);
          std::lock_guard lock(events_mutex);
          events.push_back(std::string("lost:") + std::string(to_string(why)));
          events_changed.notify_all();
        });
        wait_for_stop(term);
        lost_seen.open();
      },
      requeueing());
  s.start();
  {
    std::unique_lock lock(events_mutex);
    ASSERT_TRUE(events_changed.wait_for(lock, kWait, [&] { return !events.empty(); }));
  }
  const auto node = kDir + "/" + lock_nodes().front();
  raw().remove(node);
  ASSERT_TRUE(lost_seen.wait(kWait));
  ASSERT_TRUE(test::wait_children(
      raw(), kDir, [](const auto& names) { return names.empty(); }, kWait));
  // The next term comes (a new node), after the lost callback.
  {
    std::unique_lock lock(events_mutex);
    ASSERT_TRUE(events_changed.wait_for(lock, kWait, [&] { return events.size() >= 3; }));
  }
  s.close();
  std::lock_guard lock(events_mutex);
  EXPECT_EQ(events, (std::vector<std::string>{"term 1", "lost:node_deleted", "term 2"}));
  EXPECT_FALSE(queued_during_callback.load());
}

TEST_F(LeaderSelectorTest, ASuspensionEndsTheTermUnderTheDefaultPolicyOnly) {
  auto& a = contender();
  auto& b = contender();
  LeaderSelectorOptions ignore;
  ignore.suspended_policy = SuspendedPolicy::ignore;
  auto keeps = selector(a, "keeps", ignore);
  keeps->start();
  ASSERT_TRUE(wait_terms(1));
  ensemble_.disconnect(session_of(a));
  ensemble_.reconnect(session_of(a));
  ASSERT_TRUE(a.client->block_until_connected(kWait));
  EXPECT_TRUE(keeps->has_leadership());
  end_term();
  ASSERT_TRUE(wait_no_term_running());
  EXPECT_FALSE(terms()[0].stopped);

  auto stops = selector(b, "stops");
  stops->start();
  ASSERT_TRUE(wait_terms(2));
  ensemble_.disconnect(session_of(b));
  ASSERT_TRUE(wait_no_term_running());  // the term's token stopped
  EXPECT_TRUE(terms()[1].stopped);
  EXPECT_FALSE(stops->has_leadership());
  ensemble_.reconnect(session_of(b));
  ASSERT_TRUE(b.client->block_until_connected(kWait));
  ASSERT_TRUE(wait_queue_length(0));  // the lost term's node is given back
}

TEST_F(LeaderSelectorTest, InterruptStopsTheTermAndCloseWaitsForItAndLeavesNoNode) {
  auto& a = contender();
  auto leader = selector(a, "a");
  EXPECT_FALSE(leader->interrupt_leadership());
  leader->start();
  ASSERT_TRUE(wait_terms(1));
  auto& w = contender();
  auto waiter = selector(w, "w");
  waiter->start();
  ASSERT_TRUE(wait_queue_length(2));

  EXPECT_TRUE(leader->interrupt_leadership());
  ASSERT_TRUE(wait_terms(2));  // the waiter leads
  EXPECT_TRUE(terms()[0].stopped);
  EXPECT_EQ(terms()[1].id, "w");
  EXPECT_TRUE(leader->requeue());
  ASSERT_TRUE(wait_queue_length(2));

  waiter->close();  // stops its term and waits for the function to return
  {
    std::lock_guard lock(mutex_);
    EXPECT_TRUE(terms_[1].stopped);
    EXPECT_GE(terms_.size(), 2u);
  }
  EXPECT_TRUE(no_ephemerals_of(w));
  ASSERT_TRUE(wait_terms(3));
  EXPECT_EQ(terms()[2].id, "a");
  leader->close();  // a term under way
  EXPECT_TRUE(no_ephemerals_of(a));
  EXPECT_FALSE(leader->requeue());

  // Closing one that waits in the queue leaves no node either.
  auto holder = selector(contender(), "h");
  holder->start();
  ASSERT_TRUE(wait_terms(4));
  auto& q = contender();
  auto queued = selector(q, "q");
  queued->start();
  ASSERT_TRUE(wait_queue_length(2));
  queued->close();
  ASSERT_TRUE(wait_queue_length(1));
  EXPECT_TRUE(no_ephemerals_of(q));
  end_term();
  holder->close();
  ASSERT_TRUE(wait_queue_length(0));
}

TEST_F(LeaderSelectorTest, CloseFromInsideTheTermEndsIt) {
  auto& a = contender();
  LeaderSelector* self = nullptr;
  test::Latch closed;
  LeaderSelector s(*a.client, kDir, "a", [&](const LeaderTerm& term) {
    self->close();  // does not wait for itself
    EXPECT_TRUE(term.stop.stop_requested());
    closed.open();
  });
  self = &s;
  s.start();
  ASSERT_TRUE(closed.wait(kWait));
  s.close();
  ASSERT_TRUE(wait_queue_length(0));
  EXPECT_FALSE(s.requeue());
}

TEST_F(LeaderSelectorTest, ErrorsGoToOnErrorAndQueueingWaitsForRequeue) {
  auto& a = contender();
  std::mutex m;
  std::vector<std::string> errors;
  test::Latch told;
  LeaderSelectorOptions options;
  options.auto_requeue = true;
  options.on_error = [&](std::exception_ptr error) {
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      std::lock_guard lock(m);
      errors.push_back(e.what());
    }
    told.open();
  };
  // A latch on the path: the selector's mutex refuses the foreign protocol.
  auto latch = std::make_unique<LeaderLatch>(*contender().client, kDir, "latch");
  ASSERT_TRUE(latch->try_await_leadership());
  std::atomic<int> terms{0};
  test::Latch second_term;
  LeaderSelector s(
      *a.client, kDir, "a",
      [&](const LeaderTerm& term) {
        if (++terms == 1) throw std::runtime_error("term failed");
        second_term.open();
        wait_for_stop(term);
      },
      options);
  s.start();
  ASSERT_TRUE(told.wait(kWait));
  {
    std::lock_guard lock(m);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_NE(errors[0].find("LeaderLatch"), std::string::npos) << errors[0];
  }
  EXPECT_TRUE(no_ephemerals_of(a));
  EXPECT_EQ(terms.load(), 0);
  latch->close();
  ASSERT_TRUE(wait_queue_length(0));
  EXPECT_TRUE(s.requeue());  // not queued since the error
  // A term that throws is reported and ends; auto_requeue queues again.
  ASSERT_TRUE(second_term.wait(kWait));
  {
    std::lock_guard lock(m);
    ASSERT_EQ(errors.size(), 2u);
    EXPECT_EQ(errors[1], "term failed");
  }
  s.close();
  EXPECT_TRUE(no_ephemerals_of(a));
}

TEST_F(LeaderSelectorTest, MisuseIsRefused) {
  auto& a = contender();
  const auto run = [](const LeaderTerm&) {};
  EXPECT_THROW(LeaderSelector(*a.client, kDir, "two\nlines", run), std::invalid_argument);
  EXPECT_THROW(LeaderSelector(*a.client, "/", "x", run), std::invalid_argument);
  EXPECT_THROW(LeaderSelector(*a.client, kDir, "x", nullptr), std::invalid_argument);
  LeaderSelector s(*a.client, kDir, "x", run);
  EXPECT_FALSE(s.requeue());  // not started
  s.start();
  EXPECT_THROW(s.start(), std::logic_error);
  s.close();
  EXPECT_THROW(s.start(), std::logic_error);
  EXPECT_EQ(s.id(), "x");
  EXPECT_EQ(s.path(), kDir);
}

}  // namespace
}  // namespace zkr
