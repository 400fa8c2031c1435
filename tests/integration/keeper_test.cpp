// The Keeper over the ZooKeeper C client, against the live ensemble: every
// operation, watches, chroot, digest auth, multi, pipelining, close and expiry.
//
// No sleeps: every wait is on a future or a condition variable with a deadline.
// Each test works under its own unique root, removed in TearDown.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/ensemble.hpp"
#include "support/waits.hpp"
#include "zkr/keeper.hpp"
#include "zkr/path.hpp"
#include "zkr/retry.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

// Generous: an ensemble on a loaded machine can take seconds to elect or reconnect.
using test::kWait;
using test::remove_tree;

// Session states as the keeper reports them; outlives the keeper (closed is
// reported from its destructor).
class SessionLog {
 public:
  static SessionCallback callback(const std::shared_ptr<SessionLog>& log) {
    return [log](SessionState s) {
      std::lock_guard lock(log->mutex_);
      log->states_.push_back(s);
      log->changed_.notify_all();
    };
  }
  // True once `state` has been reported `times` times.
  bool wait_for(SessionState state, milliseconds timeout, int times = 1) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(
        lock, timeout, [&] { return std::count(states_.begin(), states_.end(), state) >= times; });
  }
  std::vector<SessionState> states() const {
    std::lock_guard lock(mutex_);
    return states_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<SessionState> states_;  // guarded by mutex_
};

// Records the events a watcher receives.
class Probe : public std::enable_shared_from_this<Probe> {
 public:
  static std::shared_ptr<Probe> make() { return std::make_shared<Probe>(); }
  Watcher watcher() {
    return [self = shared_from_this()](const WatchEvent& e) {
      std::lock_guard lock(self->mutex_);
      self->events_.push_back(e);
      self->changed_.notify_all();
    };
  }
  bool wait(milliseconds timeout = kWait) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return !events_.empty(); });
  }
  std::vector<WatchEvent> events() const {
    std::lock_guard lock(mutex_);
    return events_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<WatchEvent> events_;  // guarded by mutex_
};

KeeperConfig base_config() {
  KeeperConfig config;
  config.hosts = test::connect_string();
  config.session_timeout = 10s;
  return config;
}

// Opens a session and waits until it is connected.
std::shared_ptr<Keeper> open(KeeperConfig config = base_config(),
                             std::shared_ptr<SessionLog> log = std::make_shared<SessionLog>()) {
  auto keeper = connect_keeper(config, SessionLog::callback(log));
  if (!log->wait_for(SessionState::connected, kWait))
    throw std::runtime_error("no connection to " + config.hosts + " within 30 s");
  return keeper;
}

op::Create create_op(std::string path, std::string data = {},
                     CreateMode mode = CreateMode::persistent) {
  return op::Create{std::move(path), std::move(data), mode, CreateOptions{}};
}

// A round trip on the session after the server applied everything before it:
// any watch event those changes caused has been delivered once this returns
// (ZooKeeper sends a session its notifications before later replies).
void round_trip(Keeper& keeper, const std::string& path) {
  keeper.sync(path);
  (void)keeper.try_get(path);
}

class KeeperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ZKR_REQUIRE_ENSEMBLE();
    keeper_ = open();
    root_ = test::unique_path(::testing::UnitTest::GetInstance()->current_test_info()->name());
    keeper_->create(root_);
  }
  void TearDown() override {
    if (!keeper_ || root_.empty()) return;
    // A fresh session: a fault test may have left ours on a server that was
    // just killed or frozen.
    auto cleaner = open();
    cleaner->sync(root_);
    remove_tree(*cleaner, root_);
  }
  std::string at(const std::string& name) const { return join_path(root_, name); }

  std::shared_ptr<Keeper> keeper_;
  std::string root_;
};

// ---- Session basics.

TEST_F(KeeperTest, ReportsSessionOnceConnected) {
  EXPECT_EQ(keeper_->session_state(), SessionState::connected);
  EXPECT_NE(keeper_->session_id(), 0);
  EXPECT_EQ(keeper_->session_password().size(), 16u);
  EXPECT_GT(keeper_->session_timeout(), 0ms);
  const std::string host = keeper_->connected_host();
  ASSERT_FALSE(host.empty());
  EXPECT_NE(test::connect_string().find(host), std::string::npos) << host;
}

// ---- Create.

TEST_F(KeeperTest, CreatesEveryMode) {
  const auto persistent = keeper_->create(at("p"), "data", CreateMode::persistent);
  EXPECT_EQ(persistent.path, at("p"));
  EXPECT_EQ(persistent.stat.ephemeral_owner, 0);
  EXPECT_EQ(persistent.stat.data_length, 4);
  EXPECT_EQ(keeper_->get(at("p")).data, "data");

  const auto sequential = keeper_->create(at("s-"), "", CreateMode::persistent_sequential);
  ASSERT_EQ(sequential.path.size(), at("s-").size() + 10) << sequential.path;
  EXPECT_EQ(sequential.path.rfind(at("s-"), 0), 0u);

  const auto ephemeral = keeper_->create(at("e"), "", CreateMode::ephemeral);
  EXPECT_EQ(ephemeral.stat.ephemeral_owner, keeper_->session_id());

  const auto ephemeral_seq = keeper_->create(at("es-"), "", CreateMode::ephemeral_sequential);
  EXPECT_EQ(ephemeral_seq.path.size(), at("es-").size() + 10);
  EXPECT_EQ(ephemeral_seq.stat.ephemeral_owner, keeper_->session_id());

  // The server hides the extended types from clients: containers and TTL
  // nodes report ephemeralOwner 0, like persistent ones. Creating them at all
  // needs a server with extended types enabled.
  const auto container = keeper_->create(at("c"), "", CreateMode::container);
  EXPECT_EQ(container.stat.ephemeral_owner, 0);

  const CreateOptions ttl{.acl = std::nullopt, .ttl = 3600s};
  const auto with_ttl = keeper_->create(at("t"), "x", CreateMode::persistent_with_ttl, ttl);
  EXPECT_EQ(with_ttl.path, at("t"));
  EXPECT_EQ(with_ttl.stat.ephemeral_owner, 0);
  EXPECT_EQ(keeper_->get(at("t")).data, "x");

  const auto seq_ttl =
      keeper_->create(at("ts-"), "", CreateMode::persistent_sequential_with_ttl, ttl);
  EXPECT_EQ(seq_ttl.path.size(), at("ts-").size() + 10);

  EXPECT_EQ(keeper_->children(root_).names.size(), 7u);
  EXPECT_EQ(keeper_->try_create(at("p")).error(), Errc::node_exists);
  EXPECT_EQ(keeper_->try_create(at("missing/child")).error(), Errc::no_node);
  EXPECT_EQ(keeper_->try_create(at("e/child")).error(), Errc::no_children_for_ephemerals);
}

TEST_F(KeeperTest, RefusesBadArgumentsBeforeSendingAnything) {
  const Stat before = *keeper_->exists(root_);
  const CreateOptions no_ttl{};
  const CreateOptions ttl{.acl = std::nullopt, .ttl = 1000ms};
  const CreateOptions empty_acl{.acl = AclList{}, .ttl = 0ms};

  for (const std::string& bad : {std::string(), std::string("relative"), at("x/"), at("a//b"),
                                 at("./b"), at("x\n"), std::string("/zookeeper/x")}) {
    EXPECT_THROW((void)keeper_->async_create(bad, "", CreateMode::persistent),
                 std::invalid_argument)
        << bad;
    EXPECT_THROW((void)keeper_->async_remove(bad), std::invalid_argument) << bad;
    EXPECT_THROW((void)keeper_->async_set(bad, "x"), std::invalid_argument) << bad;
  }
  for (const std::string& bad : {std::string(), std::string("relative"), at("a//b"), at("x/")}) {
    EXPECT_THROW((void)keeper_->async_exists(bad), std::invalid_argument) << bad;
    EXPECT_THROW((void)keeper_->async_get(bad), std::invalid_argument) << bad;
    EXPECT_THROW((void)keeper_->async_children(bad), std::invalid_argument) << bad;
    EXPECT_THROW((void)keeper_->async_sync(bad), std::invalid_argument) << bad;
  }
  EXPECT_THROW((void)keeper_->async_create(at("t"), "", CreateMode::persistent_with_ttl, no_ttl),
               std::invalid_argument);
  EXPECT_THROW((void)keeper_->async_create(at("t"), "", CreateMode::persistent, ttl),
               std::invalid_argument);
  EXPECT_THROW((void)keeper_->async_create(at("t"), "", CreateMode::persistent, empty_acl),
               std::invalid_argument);
  EXPECT_THROW(
      (void)keeper_->async_multi({op::Create{at("t"), "", CreateMode::persistent_with_ttl, ttl}}),
      std::invalid_argument);
  EXPECT_THROW((void)keeper_->async_multi({create_op(at("ok")), op::Check{at("a//b")}}),
               std::invalid_argument);
  // The C client misreads the reply to a container create in a multi.
  EXPECT_THROW((void)keeper_->async_multi({create_op(at("c"), "", CreateMode::container)}),
               std::invalid_argument);
  // A sequential prefix may end in '/', a plain path may not.
  EXPECT_NO_THROW(keeper_->create(root_ + "/", "", CreateMode::persistent_sequential));

  // Nothing reached the server: only the one valid create changed the root.
  EXPECT_EQ(keeper_->exists(root_)->cversion, before.cversion + 1);
  EXPECT_EQ(keeper_->children(root_).names.size(), 1u);
}

// ---- Remove, exists, get, set, children, sync.

TEST_F(KeeperTest, RemoveChecksTheVersion) {
  keeper_->create(at("n"));
  EXPECT_EQ(keeper_->try_remove(at("n"), 3).error(), Errc::bad_version);
  EXPECT_EQ(keeper_->set(at("n"), "x").version, 1);
  EXPECT_EQ(keeper_->try_remove(at("n"), 0).error(), Errc::bad_version);
  EXPECT_TRUE(keeper_->try_remove(at("n"), 1).ok());
  EXPECT_EQ(keeper_->try_remove(at("n")).error(), Errc::no_node);

  keeper_->create(at("parent"));
  keeper_->create(at("parent/child"));
  EXPECT_EQ(keeper_->try_remove(at("parent")).error(), Errc::not_empty);
  keeper_->remove(at("parent/child"));
  keeper_->remove(at("parent"), kAnyVersion);
  EXPECT_FALSE(keeper_->exists(at("parent")));
}

TEST_F(KeeperTest, ReadsAndWritesWithStats) {
  const auto created = keeper_->create(at("n"), "one");
  const auto exists = keeper_->exists(at("n"));
  ASSERT_TRUE(exists);
  EXPECT_EQ(*exists, created.stat);
  EXPECT_EQ(exists->version, 0);
  EXPECT_EQ(exists->data_length, 3);

  const Stat set = keeper_->set(at("n"), "three", 0);
  EXPECT_EQ(set.version, 1);
  EXPECT_EQ(set.czxid, created.stat.czxid);
  EXPECT_GT(set.mzxid, created.stat.mzxid);
  EXPECT_EQ(keeper_->try_set(at("n"), "stale", 0).error(), Errc::bad_version);

  const NodeData data = keeper_->get(at("n"));
  EXPECT_EQ(data.data, "three");
  EXPECT_EQ(data.stat, set);

  keeper_->set(at("n"), "");  // empty, not null
  EXPECT_EQ(keeper_->get(at("n")).data, "");
  const std::string binary("a\0b\xff", 4);
  keeper_->set(at("n"), binary);
  EXPECT_EQ(keeper_->get(at("n")).data, binary);

  keeper_->create(at("a"));
  keeper_->create(at("b"));
  const Children children = keeper_->children(root_);
  EXPECT_EQ(std::set<std::string>(children.names.begin(), children.names.end()),
            (std::set<std::string>{"n", "a", "b"}));
  EXPECT_EQ(children.stat.num_children, 3);
  EXPECT_EQ(children.stat.cversion, 3);

  EXPECT_FALSE(keeper_->exists(at("missing")));
  EXPECT_EQ(keeper_->async_exists(at("missing")).get().error(), Errc::no_node);
  EXPECT_EQ(keeper_->try_get(at("missing")).error(), Errc::no_node);
  EXPECT_EQ(keeper_->try_set(at("missing"), "x").error(), Errc::no_node);
  EXPECT_EQ(keeper_->try_children(at("missing")).error(), Errc::no_node);
  try {
    (void)keeper_->get(at("missing"));
    FAIL() << "get of a missing node did not throw";
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::no_node);
    EXPECT_EQ(e.path(), at("missing"));
  }

  EXPECT_TRUE(keeper_->async_sync(root_).get().ok());
  // Reads may look at the reserved subtree.
  EXPECT_TRUE(keeper_->exists("/zookeeper"));
}

// ---- Watches.

TEST_F(KeeperTest, ExistsWatchOnAbsentNodeFiresOnCreateOnce) {
  auto probe = Probe::make();
  EXPECT_FALSE(keeper_->exists(at("n"), probe->watcher()));
  keeper_->create(at("n"));
  ASSERT_TRUE(probe->wait());
  keeper_->set(at("n"), "x");
  keeper_->remove(at("n"));
  round_trip(*keeper_, root_);
  const auto events = probe->events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, EventType::created);
  EXPECT_EQ(events[0].path, at("n"));
}

TEST_F(KeeperTest, DataWatchFiresChangedOnce) {
  keeper_->create(at("n"));
  auto probe = Probe::make();
  (void)keeper_->get(at("n"), probe->watcher());
  // The change comes from another session: the watch is the server's.
  auto other = open();
  other->set(at("n"), "1");
  ASSERT_TRUE(probe->wait());
  other->set(at("n"), "2");
  other->remove(at("n"));
  round_trip(*keeper_, root_);
  const auto events = probe->events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, EventType::changed);
  EXPECT_EQ(events[0].path, at("n"));
}

TEST_F(KeeperTest, WatchesFireDeletedAndChild) {
  keeper_->create(at("n"));
  auto exists_probe = Probe::make();
  auto child_probe = Probe::make();
  auto parent_probe = Probe::make();
  ASSERT_TRUE(keeper_->exists(at("n"), exists_probe->watcher()));
  (void)keeper_->children(root_, child_probe->watcher());
  (void)keeper_->children(at("n"), parent_probe->watcher());
  keeper_->remove(at("n"));
  ASSERT_TRUE(exists_probe->wait());
  ASSERT_TRUE(child_probe->wait());
  ASSERT_TRUE(parent_probe->wait());
  keeper_->create(at("again"));
  round_trip(*keeper_, root_);

  ASSERT_EQ(exists_probe->events().size(), 1u);
  EXPECT_EQ(exists_probe->events()[0].type, EventType::deleted);
  ASSERT_EQ(child_probe->events().size(), 1u);
  EXPECT_EQ(child_probe->events()[0].type, EventType::child);
  EXPECT_EQ(child_probe->events()[0].path, root_);
  // A child watch on a node that goes away says deleted.
  ASSERT_EQ(parent_probe->events().size(), 1u);
  EXPECT_EQ(parent_probe->events()[0].type, EventType::deleted);
}

TEST_F(KeeperTest, WatchNotSetWhenTheReadFails) {
  // get() on a missing node sets no watch: creating it fires nothing.
  auto probe = Probe::make();
  EXPECT_EQ(keeper_->try_get(at("n"), probe->watcher()).error(), Errc::no_node);
  EXPECT_EQ(keeper_->try_children(at("n"), probe->watcher()).error(), Errc::no_node);
  keeper_->create(at("n"));
  keeper_->create(at("n/c"));
  round_trip(*keeper_, root_);
  EXPECT_TRUE(probe->events().empty());
}

TEST_F(KeeperTest, WatchSurvivesReconnectionToAnotherServer) {
  ZKR_REQUIRE_SERVER_FAULTS();
  auto log = std::make_shared<SessionLog>();
  auto config = base_config();
  config.session_timeout = 20s;  // the session must outlive the reconnection
  auto watched = open(config, log);
  watched->create(at("n"));
  auto probe = Probe::make();
  (void)watched->get(at("n"), probe->watcher());

  const int server = test::server_index_of(watched->connected_host());
  ASSERT_GT(server, 0) << watched->connected_host();
  test::ensemble("kill " + std::to_string(server));
  struct Restart {
    int server;
    ~Restart() {
      try {
        test::ensemble("restart " + std::to_string(server));
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
      }
    }
  } restart{server};

  ASSERT_TRUE(log->wait_for(SessionState::connecting, kWait));
  ASSERT_TRUE(log->wait_for(SessionState::connected, kWait, 2));
  // Connecting/connected reached the watcher inside the C client; it stayed armed.
  EXPECT_TRUE(probe->events().empty());
  // keeper_ may have been on the killed server too: retry until it has moved
  // (setting the same data twice is harmless).
  RealSleeper sleeper;
  call_with_retry(RetryNTimes(40, std::chrono::milliseconds(250)), sleeper,
                  [&] { return keeper_->set(at("n"), "x"); });
  ASSERT_TRUE(probe->wait());
  round_trip(*watched, root_);
  ASSERT_EQ(probe->events().size(), 1u);
  EXPECT_EQ(probe->events()[0].type, EventType::changed);
}

TEST_F(KeeperTest, CloseEndsTheSessionEvenWhileOthersHoldTheKeeper) {
  auto held = open(base_config());
  held->create(at("mine"), "", CreateMode::ephemeral);
  auto also_held = held;  // another owner, as a recipe may be
  held->close();
  // Its ephemeral node is gone for everyone, at once: the server heard the
  // close. (Another session's server may lag: sync first.)
  keeper_->sync(root_);
  EXPECT_FALSE(keeper_->exists(at("mine")).has_value());
  // Calls after close fail with closing, without touching the freed handle.
  EXPECT_EQ(also_held->try_get(at("mine")).error(), Errc::closing);
  EXPECT_EQ(also_held->session_state(), SessionState::closed);
  held->close();  // twice is fine
}

// ---- Chroot.

TEST_F(KeeperTest, ChrootHandleSeesOnlyItsSubtree) {
  keeper_->create(at("app"));
  keeper_->create(at("outside"));
  auto config = base_config();
  config.chroot = at("app");
  auto chrooted = open(config);

  EXPECT_EQ(chrooted->create("/a", "x").path, "/a");
  const auto sequential = chrooted->create("/s-", "", CreateMode::persistent_sequential);
  EXPECT_EQ(sequential.path.rfind("/s-", 0), 0u) << sequential.path;
  // Reads on another session: sync first, its server may lag ours.
  keeper_->sync(root_);
  EXPECT_TRUE(keeper_->exists(at("app/a")));
  EXPECT_TRUE(keeper_->exists(at("app") + sequential.path));

  const auto names = chrooted->children("/").names;
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()),
            (std::set<std::string>{"a", sequential.path.substr(1)}));
  EXPECT_FALSE(chrooted->exists("/outside"));

  auto probe = Probe::make();
  EXPECT_FALSE(chrooted->exists("/b", probe->watcher()));
  keeper_->create(at("app/b"));
  ASSERT_TRUE(probe->wait());
  EXPECT_EQ(probe->events()[0].path, "/b");

  const auto multi = chrooted->multi({create_op("/m"), op::Set{"/a", "y"}});
  ASSERT_EQ(multi.results.size(), 2u);
  EXPECT_EQ(multi.results[0].path, "/m");
  EXPECT_EQ(multi.results[1].stat.version, 1);

  auto bad = base_config();
  bad.chroot = "relative";
  EXPECT_THROW((void)connect_keeper(bad, nullptr), std::invalid_argument);
  bad.chroot = at("x/");
  EXPECT_THROW((void)connect_keeper(bad, nullptr), std::invalid_argument);
}

// ---- ACLs and digest auth.

TEST_F(KeeperTest, CreatorOnlyNodeIsRefusedToOthersWithoutRetrying) {
  auto config = base_config();
  config.auth = DigestAuth{"alice", "secret"};
  auto alice = open(config);
  const CreateOptions creator_only{.acl = creator_all_acl(), .ttl = 0ms};
  alice->create(at("private"), "x", CreateMode::persistent, creator_only);
  EXPECT_EQ(alice->get(at("private")).data, "x");

  // Another session as the same user is the creator too. (Reads on other
  // sessions sync first: their servers may lag alice's.)
  auto alice_again = open(config);
  alice_again->sync(root_);
  EXPECT_EQ(alice_again->get(at("private")).data, "x");

  // Without credentials: refused, and no_auth is not worth a retry.
  keeper_->sync(root_);
  EXPECT_EQ(keeper_->try_get(at("private")).error(), Errc::no_auth);
  EXPECT_EQ(keeper_->try_set(at("private"), "y").error(), Errc::no_auth);
  ExponentialBackoffRetry policy(10ms, 5);
  RecordingSleeper sleeper;
  try {
    call_with_retry(policy, sleeper, [&] { return keeper_->get(at("private")); });
    FAIL() << "get of a creator-only node without credentials succeeded";
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::no_auth);
  }
  EXPECT_TRUE(sleeper.delays().empty());

  // With the wrong password: another identity.
  config.auth = DigestAuth{"alice", "wrong"};
  auto impostor = open(config);
  impostor->sync(root_);
  EXPECT_EQ(impostor->try_get(at("private")).error(), Errc::no_auth);

  // "auth" ACLs need an authenticated creator.
  EXPECT_EQ(keeper_->try_create(at("x"), "", CreateMode::persistent, creator_only).error(),
            Errc::invalid_acl);
}

TEST_F(KeeperTest, DefaultAclAppliesWhenNoneIsGiven) {
  auto config = base_config();
  config.default_acl = read_acl_unsafe();
  auto reader = open(config);
  reader->create(at("read-only"), "x");
  EXPECT_EQ(reader->get(at("read-only")).data, "x");
  EXPECT_EQ(reader->try_set(at("read-only"), "y").error(), Errc::no_auth);
  EXPECT_EQ(keeper_->try_set(at("read-only"), "y").error(), Errc::no_auth);
  // An explicit ACL wins over the default.
  const CreateOptions open_acl{.acl = open_acl_unsafe(), .ttl = 0ms};
  reader->create(at("open"), "x", CreateMode::persistent, open_acl);
  EXPECT_TRUE(reader->try_set(at("open"), "y").ok());
}

// ---- Multi.

TEST_F(KeeperTest, MultiIsAtomic) {
  const auto result = keeper_->try_multi({
      create_op(at("a")),
      create_op(at("b"), "x", CreateMode::persistent_sequential),
      op::Check{root_, 42},  // wrong version: everything rolls back
      op::Set{at("c"), "x"},
  });
  EXPECT_EQ(result.error, Errc::bad_version);
  ASSERT_EQ(result.results.size(), 4u);
  EXPECT_EQ(result.failed_index(), 2u);
  EXPECT_EQ(result.results[2].error, Errc::bad_version);
  // Rolled back, before and after the failed one alike.
  for (std::size_t i : {0u, 1u, 3u})
    EXPECT_EQ(result.results[i].error, Errc::runtime_inconsistency) << i;
  EXPECT_FALSE(keeper_->exists(at("a")));
  EXPECT_TRUE(keeper_->children(root_).names.empty());

  try {
    (void)keeper_->multi({create_op(at("a")), op::Remove{at("missing")}});
    FAIL() << "a failing multi did not throw";
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::no_node);
    EXPECT_EQ(e.path(), at("missing"));
  }
  EXPECT_FALSE(keeper_->exists(at("a")));
}

TEST_F(KeeperTest, MultiAppliesEveryOperation) {
  keeper_->create(at("old"));
  keeper_->create(at("data"), "v0");
  const auto result = keeper_->multi({
      create_op(at("a"), "x"),
      create_op(at("s-"), "", CreateMode::persistent_sequential),
      create_op(at("e"), "", CreateMode::ephemeral),
      op::Check{at("data"), 0},
      op::Set{at("data"), "v1", 0},
      op::Remove{at("old"), 0},
  });
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result.results.size(), 6u);
  for (const auto& r : result.results) EXPECT_EQ(r.error, Errc::ok);
  EXPECT_EQ(result.results[0].path, at("a"));
  EXPECT_EQ(result.results[1].path.size(), at("s-").size() + 10) << result.results[1].path;
  EXPECT_EQ(result.results[2].path, at("e"));
  EXPECT_EQ(result.results[4].stat.version, 1);
  EXPECT_EQ(result.results[4].stat, *keeper_->exists(at("data")));
  EXPECT_EQ(result.failed_index(), 6u);
  EXPECT_EQ(keeper_->get(at("data")).data, "v1");
  EXPECT_FALSE(keeper_->exists(at("old")));
  EXPECT_EQ(keeper_->exists(at("e"))->ephemeral_owner, keeper_->session_id());

  const auto empty = keeper_->multi({});
  EXPECT_TRUE(empty.ok());
  EXPECT_TRUE(empty.results.empty());
}

// ---- Pipelining.

TEST_F(KeeperTest, TwoHundredRequestsInFlightCompleteInOrder) {
  keeper_->create(at("q"));
  constexpr int kRequests = 200;
  std::vector<std::future<Result<Created>>> creates;
  std::vector<std::future<Result<Stat>>> sets;
  for (int i = 0; i < kRequests; ++i) {
    if (i % 10 == 9) {
      // Conditional sets pipelined behind each other: each expects the version
      // the previous one makes, so all succeed only if applied in send order.
      sets.push_back(keeper_->async_set(at("q"), std::to_string(i), i / 10));
    } else {
      creates.push_back(keeper_->async_create(at("q/n-"), "", CreateMode::persistent_sequential));
    }
  }
  // Completions run in send order, so once the last is ready all are.
  auto last = sets.back().get();
  for (auto& f : creates) EXPECT_EQ(f.wait_for(0s), std::future_status::ready);
  for (std::size_t i = 0; i + 1 < sets.size(); ++i)
    EXPECT_EQ(sets[i].wait_for(0s), std::future_status::ready);

  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last.value().version, kRequests / 10);
  for (std::size_t i = 0; i + 1 < sets.size(); ++i) EXPECT_TRUE(sets[i].get().ok()) << i;
  std::string previous;
  for (auto& f : creates) {
    const auto created = f.get();
    ASSERT_TRUE(created.ok()) << errc_name(created.error());
    EXPECT_GT(created.value().path, previous);  // same width: string order is number order
    previous = created.value().path;
  }
  EXPECT_EQ(keeper_->children(at("q")).names.size(), creates.size());
}

// ---- Host list.

// The handler forms: each reply is handed over on the C client's event
// thread, in send order, and a handler may send the next request, as an
// event-driven recipe does (no thread waits for any of it).
TEST_F(KeeperTest, HandlersRunInSendOrderAndMaySendTheNextRequest) {
  keeper_->create(at("h"));
  constexpr int kPipelined = 100;
  constexpr int kChained = 20;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<int> order;                  // guarded by mutex: handlers, in the order they ran
  std::vector<std::string> chained;        // guarded by mutex: paths the chain created
  std::optional<Result<Children>> listed;  // guarded by mutex: the chain's last reply
  bool on_calling_thread = false;          // guarded by mutex
  const auto caller = std::this_thread::get_id();
  const auto note = [&](int i) {
    std::lock_guard lock(mutex);
    order.push_back(i);
    on_calling_thread = on_calling_thread || std::this_thread::get_id() == caller;
    changed.notify_all();
  };
  for (int i = 0; i < kPipelined; ++i)
    keeper_->async_exists(at("h"), {}, [&note, i](Result<Stat> r) {
      EXPECT_TRUE(r.ok()) << errc_name(r.error());
      note(i);
    });
  // Each create's handler sends the next create; the last one's sends a listing.
  std::function<void(int)> link = [&](int i) {
    keeper_->async_create(at("h/c-"), "", CreateMode::persistent_sequential, {},
                          [&, i](Result<Created> r) {
                            {
                              std::lock_guard lock(mutex);
                              if (r.ok()) chained.push_back(r.value().path);
                            }
                            note(kPipelined + i);
                            if (i + 1 < kChained) {
                              link(i + 1);
                              return;
                            }
                            keeper_->async_children(at("h"), {}, [&](Result<Children> c) {
                              std::lock_guard lock(mutex);
                              listed = std::move(c);
                              changed.notify_all();
                            });
                          });
  };
  link(0);

  std::unique_lock lock(mutex);
  if (!changed.wait_for(lock, kWait, [&] { return listed.has_value(); })) {
    lock.unlock();
    keeper_->close();  // answers the rest now, while what the handlers touch lives
    FAIL() << "the chain did not end within " << kWait.count() << " s";
  }
  std::vector<int> expected(kPipelined + kChained);
  for (int i = 0; i < kPipelined + kChained; ++i) expected[i] = i;
  EXPECT_EQ(order, expected);
  EXPECT_FALSE(on_calling_thread);
  ASSERT_EQ(chained.size(), std::size_t{kChained});
  EXPECT_TRUE(std::is_sorted(chained.begin(), chained.end()));
  ASSERT_TRUE(listed->ok()) << errc_name(listed->error());
  EXPECT_EQ(listed->value().names.size(), std::size_t{kChained});
}

// A request the keeper cannot send is answered before the call returns, on
// the calling thread, and the handler may send again from there.
TEST_F(KeeperTest, ARequestToAClosedKeeperIsAnsweredBeforeTheCallReturns) {
  auto closed = open();
  closed->close();
  std::vector<Errc> answers;
  closed->async_create(at("x"), "", CreateMode::persistent, {}, [&](Result<Created> r) {
    answers.push_back(r.error());
    closed->async_children(root_, {}, [&](Result<Children> c) { answers.push_back(c.error()); });
  });
  EXPECT_EQ(answers, (std::vector<Errc>{Errc::closing, Errc::closing}));
  EXPECT_FALSE(keeper_->exists(at("x")));
}

// Pending handlers are answered when the keeper closes, each exactly once.
TEST_F(KeeperTest, ClosingAnswersEveryPendingHandlerOnce) {
  auto doomed = open();
  std::mutex mutex;
  std::vector<int> answers(200);  // guarded by mutex: how often each handler ran
  for (int i = 0; i < 200; ++i)
    doomed->async_get(root_, {}, [&, i](Result<NodeData> r) {
      EXPECT_TRUE(r.ok() || r.error() == Errc::closing || r.error() == Errc::connection_loss)
          << errc_name(r.error());
      std::lock_guard lock(mutex);
      ++answers[i];
    });
  doomed.reset();  // closes the session; answers what is pending on this thread
  std::lock_guard lock(mutex);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(answers[i], 1) << i;
}

TEST(KeeperHostsTest, BadHostListIsRefusedBeforeConnecting) {
  for (const std::string hosts :
       {"", "localhost", "127.0.0.1:", ":2181", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:2181,",
        "127.0.0.1:2181,,127.0.0.1:2182", "127.0.0.1:2181/chroot", "127.0.0.1 :2181", "::1:2181",
        "[::1:2181", "host_name:2181", "127.0.0.1:02181"}) {
    KeeperConfig config;
    config.hosts = hosts;
    EXPECT_THROW((void)connect_keeper(config, nullptr), std::invalid_argument) << hosts;
  }
}

// ---- Close and expiry.

TEST_F(KeeperTest, ClosingFulfilsPendingFuturesAndEndsWatches) {
  auto log = std::make_shared<SessionLog>();
  auto doomed = open(base_config(), log);
  auto probe = Probe::make();
  EXPECT_FALSE(doomed->exists(at("never"), probe->watcher()));
  std::vector<std::future<Result<Created>>> creates;
  std::vector<std::future<Result<NodeData>>> gets;
  for (int i = 0; i < 300; ++i) {
    creates.push_back(doomed->async_create(at("n-"), "", CreateMode::ephemeral_sequential));
    gets.push_back(doomed->async_get(root_, probe->watcher()));
  }
  doomed.reset();  // closes the session

  int closing = 0;
  for (auto& f : creates) {
    ASSERT_EQ(f.wait_for(0s), std::future_status::ready);
    const auto r = f.get();
    EXPECT_TRUE(r.ok() || r.error() == Errc::closing || r.error() == Errc::connection_loss)
        << errc_name(r.error());
    closing += r.error() == Errc::closing;
  }
  for (auto& f : gets) {
    ASSERT_EQ(f.wait_for(0s), std::future_status::ready);
    const auto r = f.get();
    EXPECT_TRUE(r.ok() || r.error() == Errc::closing || r.error() == Errc::connection_loss)
        << errc_name(r.error());
  }
  // Every armed watch heard that the session ended, and nothing else.
  const auto events = probe->events();
  EXPECT_FALSE(events.empty());
  for (const auto& e : events) EXPECT_EQ(e.type, EventType::session_ended) << e.path;
  EXPECT_EQ(log->states().back(), SessionState::closed);
  // Ephemeral nodes went with the session (sync: our server may lag the close).
  keeper_->sync(root_);
  EXPECT_TRUE(keeper_->children(root_).names.empty());
  RecordProperty("answered_closing", closing);
}

// A watcher that owns the last reference destroys the keeper on the C client's
// event thread, which the C client cannot join from itself: the close must
// happen elsewhere, and still happen.
TEST_F(KeeperTest, DroppingTheLastReferenceInAWatcherStillCloses) {
  keeper_->create(at("n"));
  auto log = std::make_shared<SessionLog>();
  auto owner = open(base_config(), log);
  owner->sync(root_);
  auto holder = std::make_shared<std::shared_ptr<Keeper>>(owner);
  (void)owner->get(at("n"), [holder](const WatchEvent&) { holder->reset(); });
  owner.reset();
  keeper_->set(at("n"), "x");
  ASSERT_TRUE(log->wait_for(SessionState::closed, kWait));
}

// The server stops answering: the close cannot wait for the requests in
// flight, and answers them itself.
TEST_F(KeeperTest, ClosingWhileTheServerIsFrozenAnswersEverything) {
  ZKR_REQUIRE_SERVER_FAULTS();
  auto log = std::make_shared<SessionLog>();
  auto doomed = open(base_config(), log);
  auto probe = Probe::make();
  doomed->sync(root_);  // its server may not have our root yet
  (void)doomed->get(root_, probe->watcher());
  const int server = test::server_index_of(doomed->connected_host());
  ASSERT_GT(server, 0) << doomed->connected_host();
  test::ensemble("freeze " + std::to_string(server));
  struct Thaw {
    int server;
    ~Thaw() {
      try {
        test::ensemble("thaw " + std::to_string(server));
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
      }
    }
  } thaw{server};

  std::vector<std::future<Result<Stat>>> sets;
  for (int i = 0; i < 50; ++i) sets.push_back(doomed->async_set(root_, "x"));
  doomed.reset();
  for (auto& f : sets) {
    ASSERT_EQ(f.wait_for(0s), std::future_status::ready);
    const auto error = f.get().error();
    EXPECT_TRUE(error == Errc::closing || error == Errc::connection_loss ||
                error == Errc::operation_timeout)
        << errc_name(error);
  }
  ASSERT_EQ(probe->events().size(), 1u);
  EXPECT_EQ(probe->events()[0].type, EventType::session_ended);
  EXPECT_EQ(log->states().back(), SessionState::closed);
}

TEST_F(KeeperTest, ExpiredSessionEndsWatchesAndFailsRequests) {
  auto log = std::make_shared<SessionLog>();
  auto config = base_config();
  config.session_timeout = 4s;
  auto victim = open(config, log);
  victim->create(at("e"), "", CreateMode::ephemeral);
  auto probe = Probe::make();
  EXPECT_FALSE(victim->exists(at("never"), probe->watcher()));

  // Expire it the usual way: join the session from a second handle, then close that.
  test::expire_session(*victim);
  // A request makes the victim notice soon, whatever server it is on.
  auto pending = victim->async_sync(root_);
  ASSERT_TRUE(log->wait_for(SessionState::expired, kWait));
  ASSERT_EQ(pending.wait_for(kWait), std::future_status::ready);
  const auto pending_result = pending.get();
  EXPECT_TRUE(pending_result.ok() || is_connection_error(pending_result.error()))
      << errc_name(pending_result.error());

  ASSERT_TRUE(probe->wait());
  ASSERT_EQ(probe->events().size(), 1u);
  EXPECT_EQ(probe->events()[0].type, EventType::session_ended);
  EXPECT_EQ(probe->events()[0].path, at("never"));
  EXPECT_EQ(victim->session_state(), SessionState::expired);

  // The handle is dead: requests fail at once with the reason.
  auto after = victim->async_get(root_);
  ASSERT_EQ(after.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(after.get().error(), Errc::session_expired);
  keeper_->sync(root_);
  EXPECT_FALSE(keeper_->exists(at("e")));
}

// The C client's zoo_amulti, asked on a handle whose session has expired,
// frees the paths of the operations after the first (an uninitialised request
// left from the failed one) and, under a chroot, the first one's twice: the
// process dies of a double free. CKeeper must never let it try.
TEST_F(KeeperTest, MultiOnAnExpiredSessionFailsWithoutCorruptingMemory) {
  keeper_->create(at("app"));
  auto log = std::make_shared<SessionLog>();
  auto chrooted_log = std::make_shared<SessionLog>();
  auto config = base_config();
  config.session_timeout = 4s;
  auto victim = open(config, log);
  config.chroot = at("app");
  auto chrooted = open(config, chrooted_log);
  test::expire_session(*victim);
  test::expire_session(*chrooted);
  // A request makes each notice soon, whatever server it is on.
  (void)victim->async_sync(root_);
  (void)chrooted->async_sync("/");
  ASSERT_TRUE(log->wait_for(SessionState::expired, kWait));
  ASSERT_TRUE(chrooted_log->wait_for(SessionState::expired, kWait));

  // Many operations of each kind, many times: each freed path is one of ours.
  for (int round = 0; round < 20; ++round) {
    std::vector<Op> ops;
    for (int i = 0; i < 4; ++i) {
      const auto name = "n" + std::to_string(i) + std::string(64, 'x');
      ops.push_back(op::Check{at(name), kAnyVersion});
      ops.push_back(op::Set{at(name + "s"), "data"});
      ops.push_back(create_op(at(name + "c")));
      ops.push_back(op::Remove{at(name + "r")});
    }
    const auto result = victim->try_multi(std::move(ops));
    EXPECT_EQ(result.error, Errc::session_expired) << errc_name(result.error);
    const auto single = chrooted->try_multi({create_op("/m" + std::string(64, 'x'))});
    EXPECT_EQ(single.error, Errc::session_expired) << errc_name(single.error);
  }
  keeper_->sync(root_);
  EXPECT_TRUE(keeper_->children(at("app")).names.empty());
}

TEST_F(KeeperTest, JoiningWithAWrongPasswordFailsAndTheOwnerKeepsItsSession) {
  auto owner = open();
  owner->create(at("e"), "", CreateMode::ephemeral);
  const auto owner_id = owner->session_id();

  auto config = base_config();
  config.session_id = owner_id;
  config.session_password = std::string(16, 'x');
  auto log = std::make_shared<SessionLog>();
  auto intruder = connect_keeper(config, SessionLog::callback(log));
  // The server answers a bad password as an expired session.
  ASSERT_TRUE(log->wait_for(SessionState::expired, kWait));
  EXPECT_EQ(intruder->async_get(root_).get().error(), Errc::session_expired);

  // The server drops the owner's connection before it checks the password, so
  // a request in flight may see connection_loss; the next one waits for the
  // reconnection. The session itself lives on.
  RecordingSleeper sleeper;
  const auto stat =
      call_with_retry(RetryNTimes(3, 0ms), sleeper, [&] { return owner->exists(at("e")); });
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->ephemeral_owner, owner_id);
  EXPECT_EQ(owner->session_id(), owner_id);
}

}  // namespace
}  // namespace zkr
