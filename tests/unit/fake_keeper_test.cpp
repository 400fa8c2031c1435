// Tests of the in-memory ZooKeeper itself: the recipes' unit tests stand on it,
// so each behaviour they rely on is pinned here.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/fake_keeper.hpp"
#include "zkr/client.hpp"

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

// Operations of a multi (aggregate initialisation would leave fields to -Wextra).
op::Create create_op(std::string path, CreateMode mode = CreateMode::persistent,
                     CreateOptions options = {}) {
  op::Create c;
  c.path = std::move(path);
  c.mode = mode;
  c.options = std::move(options);
  return c;
}
op::Remove remove_op(std::string path) {
  op::Remove r;
  r.path = std::move(path);
  return r;
}
op::Set set_op(std::string path, std::string data) {
  op::Set set;
  set.path = std::move(path);
  set.data = std::move(data);
  return set;
}
op::Check check_op(std::string path, Version version = kAnyVersion) {
  op::Check c;
  c.path = std::move(path);
  c.version = version;
  return c;
}

std::string name(EventType t) {
  switch (t) {
    case EventType::created: return "created";
    case EventType::deleted: return "deleted";
    case EventType::changed: return "changed";
    case EventType::child: return "child";
    case EventType::session_ended: return "session_ended";
  }
  return "?";
}

std::string name(SessionState s) {
  switch (s) {
    case SessionState::connecting: return "connecting";
    case SessionState::connected: return "connected";
    case SessionState::connected_read_only: return "connected_read_only";
    case SessionState::expired: return "expired";
    case SessionState::auth_failed: return "auth_failed";
    case SessionState::closed: return "closed";
  }
  return "?";
}

// Collects what callbacks saw, as "tag event path" lines. Declare it before the
// keepers: closing a keeper calls its armed watchers.
class Log {
 public:
  Watcher watcher(std::string tag) {
    return [this, tag](const WatchEvent& e) { add(tag + " " + name(e.type) + " " + e.path); };
  }
  SessionCallback states(std::string tag) {
    return [this, tag](SessionState s) { add(tag + " " + name(s)); };
  }
  void add(std::string line) {
    std::lock_guard lock(mutex_);
    lines_.push_back(std::move(line));
    cv_.notify_all();
  }
  [[nodiscard]] bool wait_for(std::size_t n) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, kDeadline, [&] { return lines_.size() >= n; });
  }
  std::vector<std::string> lines() {
    std::lock_guard lock(mutex_);
    return lines_;
  }
  // The lines of one tag, without the tag.
  std::vector<std::string> of(const std::string& tag) {
    std::vector<std::string> out;
    for (const auto& line : lines())
      if (line.starts_with(tag + " ")) out.push_back(line.substr(tag.size() + 1));
    return out;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::string> lines_;
};

// Holds the event thread inside a callback until opened: replies queued
// meanwhile stay undelivered, which makes "pending reply" tests exact.
class Gate {
 public:
  void block_event_thread(Keeper& keeper, const std::string& path) {
    keeper.exists(path, [this](const WatchEvent&) {
      std::unique_lock lock(mutex_);
      entered_ = true;
      cv_.notify_all();
      cv_.wait_for(lock, kDeadline, [&] { return open_; });
    });
    // Not waited for: its reply is queued behind the blocked event.
    (void)keeper.async_create(path, "", CreateMode::persistent);
    std::unique_lock lock(mutex_);
    ASSERT_TRUE(cv_.wait_for(lock, kDeadline, [&] { return entered_; }));
  }
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool entered_ = false;
  bool open_ = false;
};

TEST(FakeKeeper, SequentialNamesCountTheParentsCversion) {
  FakeEnsemble ensemble;
  auto k = ensemble.connect();
  k->create("/q");
  EXPECT_EQ(k->create("/q/n-", "", CreateMode::ephemeral_sequential).path, "/q/n-0000000000");
  EXPECT_EQ(k->create("/q/n-", "", CreateMode::persistent_sequential).path, "/q/n-0000000001");
  k->create("/q/plain");  // any child counts
  k->remove("/q/plain");  // and so does a delete
  EXPECT_EQ(k->create("/q/n-", "", CreateMode::ephemeral_sequential).path, "/q/n-0000000004");
  EXPECT_EQ(k->create("/q/", "", CreateMode::persistent_sequential).path, "/q/0000000005");
  EXPECT_EQ(ensemble.exists_now("/q")->cversion, 6);
}

TEST(FakeKeeper, SequenceStartsAgainWhenTheParentIsRecreated) {
  FakeEnsemble ensemble;
  auto k = ensemble.connect();
  k->create("/q");
  k->create("/q/n-", "", CreateMode::persistent_sequential);
  k->create("/q/n-", "", CreateMode::persistent_sequential);
  for (const auto& child : ensemble.children_now("/q")) k->remove("/q/" + child);
  k->remove("/q");
  k->create("/q");
  EXPECT_EQ(k->create("/q/n-", "", CreateMode::persistent_sequential).path, "/q/n-0000000000");
}

TEST(FakeKeeper, StatFieldsComeFromOneGrowingZxid) {
  FakeEnsemble ensemble;
  auto k = ensemble.connect();
  const Created a = k->create("/a", "xy");
  EXPECT_EQ(a.stat.czxid, ensemble.last_zxid());
  EXPECT_EQ(a.stat.mzxid, a.stat.czxid);
  EXPECT_EQ(a.stat.pzxid, a.stat.czxid);
  EXPECT_EQ(a.stat.version, 0);
  EXPECT_EQ(a.stat.data_length, 2);
  EXPECT_EQ(a.stat.ephemeral_owner, 0);
  EXPECT_GT(a.stat.ctime, 0);

  const Stat set = k->set("/a", "xyz");
  EXPECT_EQ(set.version, 1);
  EXPECT_GT(set.mzxid, a.stat.czxid);
  EXPECT_EQ(set.czxid, a.stat.czxid);
  EXPECT_EQ(set.data_length, 3);

  const Created child = k->create("/a/c", "", CreateMode::ephemeral);
  EXPECT_GT(child.stat.czxid, set.mzxid);
  EXPECT_EQ(child.stat.ephemeral_owner, k->session_id());
  const Stat parent = *k->exists("/a");
  EXPECT_EQ(parent.cversion, 1);
  EXPECT_EQ(parent.num_children, 1);
  EXPECT_EQ(parent.pzxid, child.stat.czxid);
  EXPECT_EQ(parent.mzxid, set.mzxid);  // a child is not a data change

  // A failed write uses up a zxid too, as the server logs an error txn.
  const auto before = ensemble.last_zxid();
  EXPECT_EQ(k->try_create("/a").error(), Errc::node_exists);
  EXPECT_EQ(ensemble.last_zxid(), before + 1);
}

// The server keeps its container and TTL marks to itself (an integration test
// checks the real one): clients see 0, as for any persistent node.
TEST(FakeKeeper, ContainersAndTtlNodesLookPersistentToClients) {
  FakeEnsemble ensemble;
  auto k = ensemble.connect();
  EXPECT_EQ(k->create("/c", "", CreateMode::container).stat.ephemeral_owner, 0);
  CreateOptions ttl;
  ttl.ttl = 5000ms;
  EXPECT_EQ(k->create("/t", "", CreateMode::persistent_with_ttl, ttl).stat.ephemeral_owner, 0);
  EXPECT_FALSE(k->exists("/c")->is_ephemeral());
}

TEST(FakeKeeper, ErrorsAreTheServers) {
  FakeEnsemble ensemble;
  auto k = ensemble.connect();
  EXPECT_EQ(k->try_create("/missing/a").error(), Errc::no_node);
  k->create("/a");
  EXPECT_EQ(k->try_create("/a").error(), Errc::node_exists);
  k->create("/e", "", CreateMode::ephemeral);
  EXPECT_EQ(k->try_create("/e/child").error(), Errc::no_children_for_ephemerals);
  EXPECT_EQ(k->try_set("/a", "x", 3).error(), Errc::bad_version);
  EXPECT_EQ(k->try_remove("/a", 3).error(), Errc::bad_version);
  k->create("/a/b");
  EXPECT_EQ(k->try_remove("/a").error(), Errc::not_empty);
  EXPECT_EQ(k->try_remove("/nope").error(), Errc::no_node);
  EXPECT_EQ(k->try_get("/nope").error(), Errc::no_node);
  EXPECT_EQ(k->try_children("/nope").error(), Errc::no_node);
  EXPECT_EQ(k->try_set("/nope", "x").error(), Errc::no_node);
  EXPECT_FALSE(k->exists("/nope"));
  EXPECT_EQ(k->try_remove("/").error(), Errc::bad_arguments);
  EXPECT_EQ(k->try_remove("/a/b", 0).error(), Errc::ok);
  EXPECT_EQ(k->try_get("/a").error(), Errc::ok);
  EXPECT_EQ(k->try_get("/a").path(), "");
  EXPECT_EQ(k->try_get("/nope").path(), "/nope");
}

TEST(FakeKeeper, InvalidArgumentsThrowBeforeAnythingIsSent) {
  FakeEnsemble ensemble;
  auto k = ensemble.connect();
  const auto zxid = ensemble.last_zxid();
  EXPECT_THROW((void)k->async_create("relative", "", CreateMode::persistent),
               std::invalid_argument);
  EXPECT_THROW((void)k->async_create("/a/", "", CreateMode::persistent), std::invalid_argument);
  EXPECT_THROW((void)k->async_create("/a//b", "", CreateMode::persistent), std::invalid_argument);
  EXPECT_THROW((void)k->async_create("/zookeeper/x", "", CreateMode::persistent),
               std::invalid_argument);
  EXPECT_THROW((void)k->async_create("/", "", CreateMode::persistent_sequential),
               std::invalid_argument);
  CreateOptions ttl;
  ttl.ttl = 10ms;
  EXPECT_THROW((void)k->async_create("/a", "", CreateMode::persistent, ttl), std::invalid_argument);
  EXPECT_THROW((void)k->async_create("/a", "", CreateMode::persistent_with_ttl),
               std::invalid_argument);
  CreateOptions no_acl;
  no_acl.acl = AclList{};
  EXPECT_THROW((void)k->async_create("/a", "", CreateMode::persistent, no_acl),
               std::invalid_argument);
  EXPECT_THROW((void)k->async_remove("/a/../b"), std::invalid_argument);
  EXPECT_THROW((void)k->async_set("", "x"), std::invalid_argument);
  EXPECT_THROW((void)k->async_get("/a\n"), std::invalid_argument);
  EXPECT_THROW((void)k->async_children("/a/./b"), std::invalid_argument);
  EXPECT_THROW((void)k->async_exists("no-slash"), std::invalid_argument);
  EXPECT_THROW((void)k->async_sync("/a/"), std::invalid_argument);
  EXPECT_THROW((void)k->async_multi({create_op("/ok"), remove_op("bad")}), std::invalid_argument);
  CreateOptions good_ttl;
  good_ttl.ttl = 10ms;
  EXPECT_THROW((void)k->async_multi({create_op("/t", CreateMode::persistent_with_ttl, good_ttl)}),
               std::invalid_argument);
  EXPECT_EQ(ensemble.last_zxid(), zxid);
  EXPECT_EQ(ensemble.node_count(), 0u);
  // Reads may look at the reserved subtree, as on a real server.
  EXPECT_TRUE(k->exists("/zookeeper"));
}

TEST(FakeKeeper, ChildrenComeInTheServersOrderNotSorted) {
  FakeEnsemble ensemble;
  auto k = ensemble.connect();
  k->create("/p");
  for (int i = 0; i < 20; ++i) k->create("/p/n-", "", CreateMode::persistent_sequential);
  const Children listed = k->children("/p");
  auto sorted = listed.names;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_NE(listed.names, sorted) << "code that forgets to sort should fail on the fake";
  EXPECT_EQ(sorted, ensemble.children_now("/p"));
  EXPECT_EQ(listed.stat.num_children, 20);
}

TEST(FakeKeeper, MultiIsAtomicAndReportsEachOperation) {
  Log log;
  FakeEnsemble ensemble;
  auto k = ensemble.connect();
  k->exists("/m", log.watcher("w"));
  const auto before = ensemble.last_zxid();
  const MultiResult failed = k->try_multi({
      create_op("/m"),
      create_op("/m/a", CreateMode::ephemeral),
      check_op("/m/a", 5),
      set_op("/m", "x"),
  });
  EXPECT_EQ(failed.error, Errc::bad_version);
  ASSERT_EQ(failed.results.size(), 4u);
  // As DataTree.processTxn reports it: ok before, the code, then rolled back.
  EXPECT_EQ(failed.results[0].error, Errc::ok);
  EXPECT_EQ(failed.results[1].error, Errc::ok);
  EXPECT_EQ(failed.results[2].error, Errc::bad_version);
  EXPECT_EQ(failed.results[3].error, Errc::runtime_inconsistency);
  EXPECT_EQ(failed.failed_index(), 2u);
  EXPECT_EQ(ensemble.node_count(), 0u);
  EXPECT_EQ(ensemble.last_zxid(), before + 1);
  EXPECT_THROW(k->multi({remove_op("/nope")}), KeeperError);

  const MultiResult done = k->multi({
      create_op("/m"),
      create_op("/m/s-", CreateMode::persistent_sequential),
      set_op("/m", "x"),
      check_op("/m", 1),
  });
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done.results[0].path, "/m");
  EXPECT_EQ(done.results[1].path, "/m/s-0000000000");
  EXPECT_EQ(done.results[2].stat.version, 1);
  // One transaction: one zxid for all of it.
  EXPECT_EQ(ensemble.exists_now("/m")->czxid, ensemble.exists_now("/m/s-0000000000")->czxid);
  EXPECT_EQ(ensemble.exists_now("/m")->mzxid, ensemble.exists_now("/m")->czxid);
  ASSERT_TRUE(log.wait_for(1));
  ASSERT_TRUE(ensemble.wait_idle());
  EXPECT_EQ(log.lines(), std::vector<std::string>{"w created /m"});  // not for the failed multi
}

TEST(FakeKeeper, WatchesAreOneShot) {
  Log log;
  FakeEnsemble ensemble;
  auto k = ensemble.connect();
  k->exists("/w", log.watcher("w"));
  k->create("/w");
  k->set("/w", "1");
  k->remove("/w");
  ASSERT_TRUE(ensemble.wait_idle());
  EXPECT_EQ(log.lines(), std::vector<std::string>{"w created /w"});
}

TEST(FakeKeeper, WatchesFireByZooKeepersRules) {
  Log log;
  FakeEnsemble ensemble;
  auto k = ensemble.connect();
  auto other = ensemble.connect();
  k->create("/p");
  k->create("/p/c", "v");

  k->get("/p/c", log.watcher("get"));
  other->set("/p/c", "w");
  k->children("/p", log.watcher("children"));
  other->create("/p/d");
  ASSERT_TRUE(log.wait_for(2));
  EXPECT_EQ(log.of("get"), std::vector<std::string>{"changed /p/c"});
  EXPECT_EQ(log.of("children"), std::vector<std::string>{"child /p"});

  // A delete fires the node's data and child watches "deleted", and the
  // parent's child watches "child". A data change fires no child watch.
  k->exists("/p/c", log.watcher("exists"));
  k->get("/p/c", log.watcher("get2"));
  k->children("/p/c", log.watcher("own-children"));
  k->children("/p", log.watcher("parent"));
  other->set("/p/d", "x");
  other->remove("/p/c");
  ASSERT_TRUE(log.wait_for(6));
  ASSERT_TRUE(ensemble.wait_idle());
  EXPECT_EQ(log.of("exists"), std::vector<std::string>{"deleted /p/c"});
  EXPECT_EQ(log.of("get2"), std::vector<std::string>{"deleted /p/c"});
  EXPECT_EQ(log.of("own-children"), std::vector<std::string>{"deleted /p/c"});
  EXPECT_EQ(log.of("parent"), std::vector<std::string>{"child /p"});
  EXPECT_EQ(log.lines().size(), 6u);
}

TEST(FakeKeeper, OnlyExistsWatchesAMissingNode) {
  Log log;
  FakeEnsemble ensemble;
  auto k = ensemble.connect();
  EXPECT_EQ(k->try_get("/n", log.watcher("get")).error(), Errc::no_node);
  EXPECT_EQ(k->try_children("/n", log.watcher("children")).error(), Errc::no_node);
  EXPECT_FALSE(k->exists("/n", log.watcher("exists")));
  k->create("/n");
  k->create("/n/x");
  ASSERT_TRUE(log.wait_for(1));
  ASSERT_TRUE(ensemble.wait_idle());
  EXPECT_EQ(log.lines(), std::vector<std::string>{"exists created /n"});
}

TEST(FakeKeeper, RepliesComeInRequestOrder) {
  FakeEnsemble ensemble;
  auto k = ensemble.connect();
  std::vector<std::future<Result<Created>>> creates;
  std::vector<std::future<Result<Stat>>> reads;
  for (int i = 0; i < 100; ++i) {
    creates.push_back(k->async_create("/r-", "", CreateMode::persistent_sequential));
    reads.push_back(k->async_exists("/r-0000000000"));
  }
  auto last = k->async_sync("/");
  ASSERT_EQ(last.wait_for(kDeadline), std::future_status::ready);
  for (std::size_t i = 0; i < creates.size(); ++i) {
    // The last reply is in, so every earlier one must be too.
    ASSERT_EQ(creates[i].wait_for(0s), std::future_status::ready) << i;
    ASSERT_EQ(reads[i].wait_for(0s), std::future_status::ready) << i;
    char expected[32];
    std::snprintf(expected, sizeof expected, "/r-%010zu", i);
    EXPECT_EQ(creates[i].get().value().path, expected);
    EXPECT_TRUE(reads[i].get().ok());  // pipelined behind the first create
  }
}

TEST(FakeKeeper, WatchEventComesBeforeTheReplyOfALaterRequest) {
  FakeEnsemble ensemble;
  auto watcher = ensemble.connect();
  auto writer = ensemble.connect();
  for (int round = 0; round < 50; ++round) {
    const std::string path = "/o" + std::to_string(round);
    std::atomic<bool> fired{false};
    watcher->exists(path, [&fired](const WatchEvent&) { fired = true; });
    writer->create(path);
    // The create is applied before this get is sent: its event must be
    // delivered before the get's reply.
    auto read = watcher->async_get(path);
    ASSERT_TRUE(await(std::move(read)).ok());
    EXPECT_TRUE(fired) << round;
  }
  ASSERT_TRUE(ensemble.wait_idle());
}

TEST(FakeKeeper, CallbacksMaySendRequests) {
  FakeEnsemble ensemble;
  auto k = ensemble.connect();
  std::mutex mutex;
  std::condition_variable cv;
  int events = 0;
  // A watcher that re-arms itself from the event thread, five times.
  std::function<void(const WatchEvent&)> rearm = [&](const WatchEvent&) {
    std::lock_guard lock(mutex);
    if (++events < 5) (void)k->async_get("/x", rearm);
    cv.notify_all();
  };
  k->create("/x");
  k->get("/x", rearm);
  for (int i = 0; i < 5; ++i) {
    k->set("/x", std::to_string(i));
    std::unique_lock lock(mutex);
    ASSERT_TRUE(cv.wait_for(lock, kDeadline, [&] { return events > i; }));
  }
  ASSERT_TRUE(ensemble.wait_idle());
  EXPECT_EQ(events, 5);
  k->set("/x", "after");
  ASSERT_TRUE(ensemble.wait_idle());
  EXPECT_EQ(events, 5);
}

TEST(FakeKeeper, SessionsHaveDistinctIdsAndHearConnected) {
  Log log;
  FakeEnsemble ensemble;
  auto a = ensemble.connect(log.states("a"));
  auto b = ensemble.connect(log.states("b"));
  EXPECT_NE(a->session_id(), 0);
  EXPECT_NE(a->session_id(), b->session_id());
  EXPECT_NE(a->session_password(), b->session_password());
  EXPECT_EQ(a->session_state(), SessionState::connected);
  EXPECT_EQ(a->connected_host(), "fake:2181");
  EXPECT_EQ(a->session_timeout(), 15000ms);
  ASSERT_TRUE(log.wait_for(2));
  EXPECT_EQ(log.of("a"), std::vector<std::string>{"connected"});
}

TEST(FakeKeeper, ExpiryRemovesEphemeralsFiresOthersWatchesAndEndsTheSession) {
  Log log;
  FakeEnsemble ensemble;
  auto a = ensemble.connect(log.states("a"));
  auto b = ensemble.connect();
  ASSERT_TRUE(log.wait_for(1));
  a->create("/e", "", CreateMode::ephemeral);
  a->create("/kept");
  b->create("/b-own", "", CreateMode::ephemeral);
  b->exists("/e", log.watcher("b"));
  a->exists("/never", log.watcher("a-watch"));
  EXPECT_EQ(ensemble.ephemerals_of(a->session_id()), std::vector<std::string>{"/e"});

  ensemble.expire(a->session_id());
  ASSERT_TRUE(log.wait_for(4));
  ASSERT_TRUE(ensemble.wait_idle());
  EXPECT_EQ(log.of("b"), std::vector<std::string>{"deleted /e"});
  EXPECT_EQ(log.of("a"), (std::vector<std::string>{"connected", "expired"}));
  EXPECT_EQ(log.of("a-watch"), std::vector<std::string>{"session_ended /never"});
  EXPECT_FALSE(ensemble.exists_now("/e"));
  EXPECT_TRUE(ensemble.exists_now("/kept"));
  EXPECT_TRUE(ensemble.ephemerals_of(a->session_id()).empty());
  EXPECT_EQ(ensemble.ephemerals_of(b->session_id()), std::vector<std::string>{"/b-own"});
  EXPECT_EQ(a->session_state(), SessionState::expired);
  EXPECT_EQ(a->try_get("/kept").error(), Errc::session_expired);
  EXPECT_EQ(a->try_create("/x").error(), Errc::session_expired);
  EXPECT_EQ(await(a->async_multi({check_op("/kept")})).error, Errc::session_expired);

  ensemble.expire(a->session_id());  // again: nothing more happens
  ASSERT_TRUE(ensemble.wait_idle());
  EXPECT_EQ(log.lines().size(), 4u);
}

TEST(FakeKeeper, ARepliedButUndeliveredRequestIsLostWithTheSession) {
  Gate gate;
  FakeEnsemble ensemble;
  auto a = ensemble.connect();
  auto b = ensemble.connect();
  gate.block_event_thread(*b, "/gate");
  // The server applies the create; its reply waits behind the gate.
  auto created = a->async_create("/e", "", CreateMode::ephemeral);
  EXPECT_TRUE(ensemble.exists_now("/e"));
  ensemble.expire(a->session_id());
  gate.open();
  EXPECT_EQ(await(std::move(created)).error(), Errc::session_expired);
  EXPECT_FALSE(ensemble.exists_now("/e"));
}

TEST(FakeKeeper, DisconnectLosesPendingRepliesAndHoldsEventsUntilReconnect) {
  Log log;
  Gate gate;
  FakeEnsemble ensemble;
  auto a = ensemble.connect(log.states("a"));
  auto b = ensemble.connect();
  a->exists("/d", log.watcher("a"));
  a->create("/p");
  gate.block_event_thread(*b, "/gate");
  auto applied =
      a->async_create("/p/x", "", CreateMode::persistent);  // applied; its reply is still queued
  auto watched = a->async_get("/p", log.watcher("lost-watch"));
  ensemble.disconnect(a->session_id());
  gate.open();
  EXPECT_EQ(await(std::move(applied)).error(), Errc::connection_loss);
  EXPECT_TRUE(ensemble.exists_now("/p/x")) << "the server applied it; only the reply was lost";
  EXPECT_EQ(await(std::move(watched)).error(), Errc::connection_loss);

  EXPECT_EQ(a->session_state(), SessionState::connecting);
  EXPECT_EQ(a->connected_host(), "");
  EXPECT_EQ(a->try_get("/p").error(), Errc::connection_loss);
  b->create("/d");
  b->set("/p", "changed");  // the watch of the lost get reply was never armed
  ASSERT_TRUE(ensemble.wait_idle());
  EXPECT_EQ(log.lines(), (std::vector<std::string>{"a connected", "a connecting"}));

  ensemble.reconnect(a->session_id());
  ASSERT_TRUE(log.wait_for(4));
  ASSERT_TRUE(ensemble.wait_idle());
  EXPECT_EQ(log.lines(), (std::vector<std::string>{"a connected", "a connecting", "a connected",
                                                   "a created /d"}));
  EXPECT_TRUE(a->try_get("/p").ok());
}

TEST(FakeKeeper, ExpiryWhileDisconnectedEndsHeldWatches) {
  Log log;
  FakeEnsemble ensemble;
  auto a = ensemble.connect();
  auto b = ensemble.connect();
  a->create("/e", "", CreateMode::ephemeral);
  a->exists("/d", log.watcher("a"));
  ensemble.disconnect(a->session_id());
  b->create("/d");  // fires a's watch while it cannot hear it
  ASSERT_TRUE(ensemble.wait_idle());
  EXPECT_TRUE(log.lines().empty());
  EXPECT_TRUE(ensemble.exists_now("/e")) << "ephemerals stay while the session lives";
  ensemble.expire(a->session_id());
  ASSERT_TRUE(log.wait_for(1));
  ASSERT_TRUE(ensemble.wait_idle());
  EXPECT_EQ(log.lines(), std::vector<std::string>{"a session_ended /d"});
  EXPECT_FALSE(ensemble.exists_now("/e"));
  ensemble.reconnect(a->session_id());  // too late: ignored
  EXPECT_EQ(a->session_state(), SessionState::expired);
}

TEST(FakeKeeper, ClosingRemovesEphemeralsAndEndsArmedWatches) {
  Log log;
  FakeEnsemble ensemble;
  auto a = ensemble.connect(log.states("a"));
  auto b = ensemble.connect();
  ASSERT_TRUE(log.wait_for(1));
  a->create("/e", "", CreateMode::ephemeral);
  a->exists("/armed", log.watcher("a"));
  b->exists("/e", log.watcher("b"));
  a.reset();
  // The closing keeper's own notices come on the destroying thread, at once.
  EXPECT_EQ(log.of("a"), (std::vector<std::string>{"connected", "session_ended /armed", "closed"}));
  ASSERT_TRUE(log.wait_for(4));
  EXPECT_EQ(log.of("b"), std::vector<std::string>{"deleted /e"});
  EXPECT_FALSE(ensemble.exists_now("/e"));
}

TEST(FakeKeeper, ContainersAreReapedOnceTheyHadChildrenAndHaveNone) {
  Log log;
  FakeEnsemble ensemble;
  auto k = ensemble.connect();
  k->create("/c", "", CreateMode::container);
  EXPECT_EQ(ensemble.reap_containers(), 0u) << "a new container is safe";
  k->create("/c/x");
  EXPECT_EQ(ensemble.reap_containers(), 0u);
  k->exists("/c", log.watcher("w"));
  k->remove("/c/x");
  EXPECT_EQ(ensemble.reap_containers(), 1u);
  EXPECT_FALSE(ensemble.exists_now("/c"));
  ASSERT_TRUE(log.wait_for(1));
  EXPECT_EQ(log.lines(), std::vector<std::string>{"w deleted /c"});

  // Nested: the sweep that empties a parent container leaves it for the next.
  k->create("/c1", "", CreateMode::container);
  k->create("/c1/c2", "", CreateMode::container);
  k->create("/c1/c2/x");
  k->remove("/c1/c2/x");
  EXPECT_EQ(ensemble.reap_containers(), 1u);
  EXPECT_TRUE(ensemble.exists_now("/c1"));
  EXPECT_EQ(ensemble.reap_containers(), 1u);
  EXPECT_EQ(ensemble.node_count(), 0u);
}

TEST(FakeKeeper, TtlNodesAreReapedAfterTheirTtlOnceEmpty) {
  FakeEnsemble ensemble;
  auto k = ensemble.connect();
  CreateOptions ttl;
  ttl.ttl = 100ms;
  const Created t = k->create("/t", "", CreateMode::persistent_with_ttl, ttl);
  const Created full = k->create("/full-", "", CreateMode::persistent_sequential_with_ttl, ttl);
  k->create(full.path + "/child");
  const auto mtime = std::chrono::system_clock::time_point(std::chrono::milliseconds(t.stat.mtime));
  EXPECT_EQ(ensemble.reap_ttl(mtime + 100ms), 0u) << "not more than its ttl yet";
  EXPECT_EQ(ensemble.reap_ttl(mtime + 101ms + 5s), 1u);
  EXPECT_FALSE(ensemble.exists_now("/t"));
  EXPECT_TRUE(ensemble.exists_now(full.path)) << "a TTL node with children stays";
}

TEST(FakeKeeper, ChrootIsAddedAndStripped) {
  Log log;
  FakeEnsemble ensemble;
  ensemble.connect()->create("/app");
  KeeperConfig config;
  config.chroot = "/app";
  auto k = ensemble.connect(config, {});
  EXPECT_EQ(k->create("/x").path, "/x");
  EXPECT_EQ(k->create("/x/s-", "", CreateMode::persistent_sequential).path, "/x/s-0000000000");
  EXPECT_TRUE(ensemble.exists_now("/app/x/s-0000000000"));
  EXPECT_EQ(k->children("/").names, std::vector<std::string>{"x"});
  k->exists("/y", log.watcher("w"));
  k->create("/y");
  EXPECT_EQ(k->multi({create_op("/z")}).results[0].path, "/z");
  ASSERT_TRUE(log.wait_for(1));
  EXPECT_EQ(log.lines(), std::vector<std::string>{"w created /y"});
  config.session_id = 42;
  EXPECT_THROW(ensemble.connect(config, {}), std::invalid_argument);
}

// The handler forms, as CKeeper gives them: replies in send order on the
// event thread, a handler may send again, and a request to a closed session
// is answered too.
TEST(FakeKeeper, ReplyHandlersRunInSendOrderAndMaySendAgain) {
  FakeEnsemble ensemble;
  auto k = ensemble.connect();
  const auto caller = std::this_thread::get_id();
  std::mutex mutex;
  std::vector<std::string> seen;  // guarded by mutex
  bool on_caller = false;         // guarded by mutex
  const auto note = [&](std::string what) {
    std::lock_guard lock(mutex);
    seen.push_back(std::move(what));
    on_caller = on_caller || std::this_thread::get_id() == caller;
  };
  // The event thread waits behind a gate until all three are sent: without
  // it, the first reply could come (and its handler send the listing) before
  // the caller sends the other two.
  std::promise<void> gate;
  k->async_sync("/", [opened = gate.get_future().share()](Result<Empty>) { opened.wait(); });
  k->async_create("/h", "", CreateMode::persistent, {}, [&](Result<Created> r) {
    note("create " + r.value().path);
    k->async_children("/h", {}, [&](Result<Children> c) {
      note("children " + std::to_string(c.value().names.size()));
    });
  });
  k->async_exists("/h", {}, [&](Result<Stat> r) { note(r.ok() ? "exists" : "absent"); });
  k->async_remove("/none", kAnyVersion,
                  [&](Result<Empty> r) { note(std::string(errc_name(r.error()))); });
  gate.set_value();
  ASSERT_TRUE(ensemble.wait_idle());
  {
    std::lock_guard lock(mutex);
    // The listing was sent from the first handler, so after the other two.
    EXPECT_EQ(seen, (std::vector<std::string>{"create /h", "exists", "no_node", "children 0"}));
    EXPECT_FALSE(on_caller);
  }
  k->close();
  std::optional<Errc> refused;
  k->async_sync("/", [&](Result<Empty> r) { refused = r.error(); });
  ASSERT_TRUE(ensemble.wait_idle());
  EXPECT_EQ(refused, Errc::closing);
}

TEST(FakeKeeper, KeepersOutlivingTheEnsembleFailWithClosing) {
  std::shared_ptr<FakeKeeper> k;
  std::future<Result<Empty>> pending;
  {
    FakeEnsemble ensemble;
    k = ensemble.connect();
    pending = k->async_sync("/");
  }
  const auto delivered = await(std::move(pending));  // one way or the other, never hanging
  EXPECT_TRUE(delivered.ok() || delivered.error() == Errc::closing);
  EXPECT_EQ(k->try_get("/").error(), Errc::closing);
}

TEST(FakeKeeper, AClientRunsOnFakes) {
  FakeEnsemble ensemble;
  ClientOptions options;
  options.connect_string = "127.0.0.1:2181";
  options.namespace_path = "app/ns";
  options.keeper_factory = ensemble.factory();
  Client client(options);
  ASSERT_TRUE(client.block_until_connected(kDeadline));
  auto k = client.keeper_when_connected();
  k->create("/n", "", CreateMode::ephemeral);
  EXPECT_TRUE(ensemble.exists_now("/app/ns/n"));
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<ConnectionState> states;
  client.add_listener([&](ConnectionState s) {
    std::lock_guard lock(mutex);
    states.push_back(s);
    cv.notify_all();
  });
  ensemble.expire(k->session_id());
  // The Client hears of the expiry and opens a new session.
  std::unique_lock lock(mutex);
  ASSERT_TRUE(cv.wait_for(lock, kDeadline, [&] {
    return std::count(states.begin(), states.end(), ConnectionState::reconnected) > 0;
  }));
  // (The first connected may still reach the new listener before these.)
  const auto lost = std::find(states.begin(), states.end(), ConnectionState::lost);
  EXPECT_LT(lost, std::find(states.begin(), states.end(), ConnectionState::reconnected));
  EXPECT_EQ(client.session_epoch(), 2u);
  EXPECT_NE(client.keeper()->session_id(), k->session_id());
  EXPECT_FALSE(ensemble.exists_now("/app/ns/n"));
}

}  // namespace
}  // namespace zkr::test
