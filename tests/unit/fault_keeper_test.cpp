// Tests of the fault injector: each rule fires exactly at its point, the
// stated number of times, and everything else passes through in order.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/fake_keeper.hpp"
#include "support/fault_keeper.hpp"

namespace zkr::test {
namespace {

using namespace std::chrono_literals;

constexpr auto kDeadline = 5s;

template <class T>
T await(std::future<T> future) {
  if (future.wait_for(kDeadline) != std::future_status::ready)
    throw std::runtime_error("no reply within the deadline");
  return future.get();
}

op::Create create_op(std::string path) {
  op::Create c;
  c.path = std::move(path);
  return c;
}

// A watcher whose events can be awaited. Declare it before the keepers.
class Events {
 public:
  Watcher watcher() {
    return [this](const WatchEvent& e) {
      std::lock_guard lock(mutex_);
      events_.push_back(e);
      cv_.notify_all();
    };
  }
  [[nodiscard]] bool wait_for(std::size_t n) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, kDeadline, [&] { return events_.size() >= n; });
  }
  std::size_t count() {
    std::lock_guard lock(mutex_);
    return events_.size();
  }
  WatchEvent at(std::size_t i) {
    std::lock_guard lock(mutex_);
    return events_.at(i);
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<WatchEvent> events_;
};

class FaultKeeperTest : public ::testing::Test {
 protected:
  Events events;  // before the keepers: closing a keeper ends its armed watches
  FakeEnsemble ensemble;
  std::shared_ptr<Faults> faults = std::make_shared<Faults>();
  std::shared_ptr<FakeKeeper> inner = ensemble.connect();
  std::shared_ptr<FaultKeeper> keeper = std::make_shared<FaultKeeper>(inner, faults);
  std::shared_ptr<FakeKeeper> other = ensemble.connect();
};

TEST_F(FaultKeeperTest, PassesEverythingThroughWithoutRules) {
  EXPECT_EQ(keeper->create("/a", "x").path, "/a");
  EXPECT_EQ(keeper->get("/a").data, "x");
  EXPECT_EQ(keeper->set("/a", "y").version, 1);
  EXPECT_EQ(keeper->children("/").names.size(), 2u);  // a, zookeeper
  EXPECT_TRUE(keeper->multi({create_op("/b")}).ok());
  keeper->sync("/");
  keeper->remove("/b");
  EXPECT_FALSE(keeper->exists("/b"));
  EXPECT_EQ(keeper->try_remove("/b").error(), Errc::no_node);
  EXPECT_EQ(keeper->session_id(), inner->session_id());
  EXPECT_EQ(keeper->session_state(), SessionState::connected);
  EXPECT_EQ(keeper->connected_host(), inner->connected_host());
}

TEST_F(FaultKeeperTest, FailNeverReachesTheServer) {
  auto& rule = faults->on(OpKind::create, "/f/").fail(Errc::connection_loss);
  keeper->create("/f");
  const auto zxid = ensemble.last_zxid();
  EXPECT_EQ(keeper->try_create("/f/a").error(), Errc::connection_loss);
  EXPECT_FALSE(ensemble.exists_now("/f/a"));
  EXPECT_EQ(ensemble.last_zxid(), zxid) << "the server saw nothing";
  EXPECT_EQ(rule.fired(), 1);
  EXPECT_EQ(keeper->try_create("/f/a").error(), Errc::ok) << "once by default";
  EXPECT_EQ(rule.fired(), 1);
}

TEST_F(FaultKeeperTest, LoseReplyAfterApplyFiresTheStatedNumberOfTimes) {
  keeper->create("/locks");
  auto& rule = faults->on(OpKind::create, "/locks/").lose_reply_after_apply().times(2);
  EXPECT_EQ(keeper->try_create("/locks/a", "", CreateMode::ephemeral).error(),
            Errc::connection_loss);
  EXPECT_EQ(keeper->try_create("/locks/b-", "", CreateMode::ephemeral_sequential).error(),
            Errc::connection_loss);
  EXPECT_EQ(keeper->try_create("/locks/c").error(), Errc::ok);
  EXPECT_EQ(rule.fired(), 2);
  // The server applied both: the nodes exist though the caller heard nothing.
  EXPECT_EQ(ensemble.children_now("/locks"), (std::vector<std::string>{"a", "b-0000000001", "c"}));
}

TEST_F(FaultKeeperTest, LoseReplyPassesAnErrorReplyThrough) {
  keeper->create("/x");
  auto& rule = faults->on(OpKind::create, "/x").lose_reply_after_apply();
  EXPECT_EQ(keeper->try_create("/x").error(), Errc::node_exists) << "the server refused it";
  EXPECT_EQ(rule.fired(), 1) << "a matching request uses a firing whatever its reply";
}

TEST_F(FaultKeeperTest, ALostReadReplyArmsNoWatch) {
  keeper->create("/w");
  faults->on(OpKind::get, "/w").lose_reply_after_apply();
  EXPECT_EQ(keeper->try_get("/w", events.watcher()).error(), Errc::connection_loss);
  other->set("/w", "changed");
  ASSERT_TRUE(ensemble.wait_idle());
  keeper->sync("/");  // everything the inner keeper delivered has been relayed
  EXPECT_EQ(events.count(), 0u);
}

TEST_F(FaultKeeperTest, HookRunsAfterTheReplyAndBeforeItsDelivery) {
  keeper->create("/q");
  keeper->create("/q/a");
  keeper->create("/q/b");
  std::vector<std::string> seen_by_hook;
  auto& rule = faults->on(OpKind::children, "/q").after([&](const FaultCall& call) {
    seen_by_hook.push_back(std::string(to_string(call.kind)) + " " + call.path + " " +
                           std::string(errc_name(call.error)));
    other->remove("/q/a");  // between the listing and whatever the caller does next
  });
  auto listed = keeper->children("/q");
  std::sort(listed.names.begin(), listed.names.end());
  EXPECT_EQ(listed.names, (std::vector<std::string>{"a", "b"})) << "listed before the hook";
  EXPECT_EQ(seen_by_hook, std::vector<std::string>{"children /q ok"});
  EXPECT_FALSE(ensemble.exists_now("/q/a")) << "the hook ran before the reply was delivered";
  EXPECT_FALSE(keeper->exists("/q/a", events.watcher()));
  EXPECT_EQ(rule.fired(), 1);
}

TEST_F(FaultKeeperTest, HookCanExpireTheSessionRightAfterACreate) {
  auto& rule = faults->on(OpKind::create, "/e").after([&](const FaultCall&) {
    ensemble.expire(keeper->session_id());
  });
  const auto created = keeper->try_create("/e", "", CreateMode::ephemeral);
  EXPECT_TRUE(created.ok()) << "the reply had arrived before the expiry";
  EXPECT_FALSE(ensemble.exists_now("/e"));
  EXPECT_EQ(keeper->try_get("/").error(), Errc::session_expired);
  EXPECT_EQ(keeper->session_state(), SessionState::expired);
  EXPECT_EQ(rule.fired(), 1);
}

TEST_F(FaultKeeperTest, HeldWatchEventsWaitForRelease) {
  auto& rule = faults->on(OpKind::exists, "/h").hold_watch();
  EXPECT_FALSE(keeper->exists("/h", events.watcher()));
  other->create("/h");
  ASSERT_TRUE(faults->wait_held_watches(1, kDeadline));
  keeper->sync("/");  // replies keep flowing past the held event
  EXPECT_EQ(events.count(), 0u);
  EXPECT_EQ(faults->release_watches(), 1u);
  ASSERT_TRUE(events.wait_for(1));
  EXPECT_EQ(events.at(0).type, EventType::created);
  EXPECT_EQ(events.at(0).path, "/h");
  EXPECT_EQ(faults->held_watches(), 0u);
  EXPECT_EQ(rule.fired(), 1);

  // The next watch is not held.
  EXPECT_TRUE(keeper->exists("/h", events.watcher()));
  other->remove("/h");
  ASSERT_TRUE(events.wait_for(2));
  EXPECT_EQ(events.at(1).type, EventType::deleted);
}

TEST_F(FaultKeeperTest, RulesMatchByKindPathPrefixAndRegex) {
  auto& by_regex = faults->on(OpKind::any, std::regex("/r/[0-9]+")).fail(Errc::no_auth).times(2);
  auto& by_kind = faults->on(OpKind::set, "/s").fail(Errc::bad_version);
  keeper->create("/r");
  EXPECT_EQ(keeper->try_create("/r/x").error(), Errc::ok);
  EXPECT_EQ(keeper->try_create("/r/12").error(), Errc::no_auth);
  EXPECT_EQ(keeper->try_get("/r/34").error(), Errc::no_auth);
  EXPECT_EQ(keeper->try_get("/r/x").error(), Errc::ok);
  EXPECT_EQ(by_regex.fired(), 2);
  keeper->create("/s");
  EXPECT_EQ(keeper->try_get("/s").error(), Errc::ok) << "a get is not a set";
  EXPECT_EQ(keeper->try_set("/s", "v").error(), Errc::bad_version);
  EXPECT_EQ(keeper->try_set("/s", "v").error(), Errc::ok);
  EXPECT_EQ(by_kind.fired(), 1);
}

TEST_F(FaultKeeperTest, AMultiMatchesByAnyOfItsPaths) {
  auto& rule = faults->on(OpKind::multi, "/deep/").fail(Errc::connection_loss);
  keeper->create("/deep");
  const auto result = keeper->try_multi({create_op("/m"), create_op("/deep/x")});
  EXPECT_EQ(result.error, Errc::connection_loss);
  EXPECT_TRUE(result.results.empty());
  EXPECT_FALSE(ensemble.exists_now("/m"));
  EXPECT_EQ(rule.fired(), 1);
}

TEST_F(FaultKeeperTest, AMultiReplyCanBeLost) {
  faults->on(OpKind::multi).lose_reply_after_apply();
  const auto result = keeper->try_multi({create_op("/m1"), create_op("/m2")});
  EXPECT_EQ(result.error, Errc::connection_loss);
  EXPECT_TRUE(ensemble.exists_now("/m1"));
  EXPECT_TRUE(ensemble.exists_now("/m2"));
}

TEST_F(FaultKeeperTest, FirstMatchingRuleWithFiringsLeftWins) {
  auto& first = faults->on(OpKind::create, "/a").fail(Errc::no_auth);
  auto& second = faults->on(OpKind::create, "/a").fail(Errc::throttled_op).times(2);
  EXPECT_EQ(keeper->try_create("/a").error(), Errc::no_auth);
  EXPECT_EQ(keeper->try_create("/a").error(), Errc::throttled_op);
  faults->clear();
  EXPECT_EQ(keeper->try_create("/a").error(), Errc::ok);
  EXPECT_EQ(first.fired(), 1);
  EXPECT_EQ(second.fired(), 1);
}

TEST_F(FaultKeeperTest, ARuleWithoutActionMatchesNothing) {
  auto& rule = faults->on(OpKind::create, "/");
  EXPECT_TRUE(keeper->try_create("/a").ok());
  EXPECT_EQ(rule.fired(), 0);
  EXPECT_THROW(rule.times(0), std::invalid_argument);
}

TEST_F(FaultKeeperTest, InvalidPathsThrowWithoutUsingAFiring) {
  auto& rule = faults->on(OpKind::any).fail(Errc::connection_loss);
  EXPECT_THROW((void)keeper->async_create("bad", "", CreateMode::persistent),
               std::invalid_argument);
  EXPECT_THROW((void)keeper->async_get("/a/"), std::invalid_argument);
  EXPECT_THROW((void)keeper->async_multi({create_op("x")}), std::invalid_argument);
  EXPECT_THROW((void)keeper->async_remove("/zookeeper"), std::invalid_argument);
  EXPECT_EQ(rule.fired(), 0);
}

TEST_F(FaultKeeperTest, RepliesAndEventsKeepTheInnerOrder) {
  // The fake's guarantee must survive the relay: an event comes before the
  // reply of any request sent after the change.
  for (int round = 0; round < 50; ++round) {
    const std::string path = "/o" + std::to_string(round);
    std::atomic<bool> fired{false};
    keeper->exists(path, [&fired](const WatchEvent&) { fired = true; });
    other->create(path);
    ASSERT_TRUE(await(keeper->async_get(path)).ok());
    EXPECT_TRUE(fired) << round;
  }
  // And a session's replies come in request order.
  std::vector<std::future<Result<Created>>> creates;
  for (int i = 0; i < 50; ++i)
    creates.push_back(keeper->async_create("/n-", "", CreateMode::persistent_sequential));
  ASSERT_EQ(creates.back().wait_for(kDeadline), std::future_status::ready);
  for (auto& c : creates) EXPECT_EQ(c.wait_for(0s), std::future_status::ready);
}

TEST_F(FaultKeeperTest, HooksMayUseBlockingCallsOfOtherKeepersAndOfTheInner) {
  keeper->create("/b");
  faults->on(OpKind::get, "/b").after([&](const FaultCall&) {
    other->set("/b", "from-other");
    inner->create("/b/from-inner");
  });
  EXPECT_EQ(keeper->get("/b").stat.version, 0);
  EXPECT_EQ(*ensemble.data_now("/b"), "from-other");
  EXPECT_TRUE(ensemble.exists_now("/b/from-inner"));
}

TEST_F(FaultKeeperTest, AFactoryWrapsEverySessionWithTheSameRules) {
  auto factory = with_faults(ensemble.factory(), faults);
  auto& rule = faults->on(OpKind::create, "/shared").fail(Errc::connection_loss).times(2);
  auto first = factory(KeeperConfig{}, {});
  auto second = factory(KeeperConfig{}, {});
  ASSERT_TRUE(dynamic_cast<FaultKeeper*>(first.get()));
  EXPECT_NE(first->session_id(), second->session_id());
  EXPECT_EQ(first->try_create("/shared").error(), Errc::connection_loss);
  EXPECT_EQ(second->try_create("/shared").error(), Errc::connection_loss);
  EXPECT_EQ(second->try_create("/shared").error(), Errc::ok);
  EXPECT_EQ(rule.fired(), 2);
}

TEST_F(FaultKeeperTest, PendingRepliesAreDeliveredWhenTheKeeperGoes) {
  std::vector<std::future<Result<Stat>>> pending;
  for (int i = 0; i < 20; ++i) pending.push_back(keeper->async_exists("/"));
  keeper.reset();
  for (auto& p : pending) EXPECT_TRUE(await(std::move(p)).ok());
}

}  // namespace
}  // namespace zkr::test
