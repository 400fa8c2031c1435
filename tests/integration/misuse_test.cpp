// Bad input and misuse against the live ensemble (and against no ensemble at
// all): clear errors, nothing sent for bad arguments, nothing left behind, no
// thread left running, no hang.
//
// Already covered elsewhere, not repeated here: the common bad paths for each
// Keeper operation (keeper_test RefusesBadArgumentsBeforeSendingAnything),
// bad host lists (keeper_test, client_faults_test), a Client with no ensemble
// (client_faults_test NoEnsembleTimesOutClearly...), a creator-only node read
// with wrong or no credentials (keeper_test CreatorOnlyNodeIsRefused...), and
// locks destroyed while held (lock_test TimeoutsAndDestructionLeaveNoNodes).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/ensemble.hpp"
#include "support/process_state.hpp"
#include "support/waits.hpp"
#include "zkr/lock.hpp"
#include "zkr/lock_factory.hpp"
#include "zkr/multi_lock.hpp"
#include "zkr/path.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

using test::connected_client;
using test::kWait;
using test::remove_tree;
using test::unused_port;

ClientOptions quiet_options(std::string hosts) {
  ClientOptions o;
  o.connect_string = std::move(hosts);
  o.session_timeout = 6s;
  o.connection_timeout = 10s;
  o.retry_policy = std::make_shared<ExponentialBackoffRetry>(50ms, 5, 500ms);
  o.logging.level = LogLevel::off;
  return o;
}

// Expects a KeeperError with this code whose path starts with `path`.
template <class F>
void expect_keeper_error(F&& f, Errc code, const std::string& path, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << what << ": no error, expected " << errc_name(code);
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), code) << what << ": " << e.what();
    EXPECT_TRUE(e.path().starts_with(path)) << what << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << what << ": " << e.what();
  }
}

// The children of dir; none if it is gone (a release may remove it).
std::vector<std::string> children_of(Keeper& keeper, const std::string& dir) {
  keeper.sync(dir);
  auto listed = keeper.try_children(dir);
  if (listed.error() == Errc::no_node) return {};
  return std::move(listed).value().names;
}

// ---- Keeper operations: the bad paths keeper_test does not try.

TEST(KeeperMisuse, EveryOperationRefusesEveryBadPathAndSendsNothing) {
  ZKR_REQUIRE_ENSEMBLE();
  auto client = connected_client(quiet_options(test::connect_string()));
  auto keeper = client->keeper();
  const auto root = test::unique_path("keeper-misuse");
  keeper->create(root);
  const auto at = [&](const std::string& rest) { return root + rest; };
  const std::vector<std::string> bad_everywhere = {
      at("/.."),
      at("/x/.."),
      at("/."),
      at("/x/./y"),
      root + std::string("/a\0b", 4),
      at("/a\x7f"),
      at("/a\xc2\x9f"),
      at("/\x1b[0m"),
      "/" + std::string(kMaxPathLength, 'x'),
  };
  const std::vector<std::string> bad_writes = {"/zookeeper", "/zookeeper/quota/x",
                                               "/zookeeper/config"};
  const auto before = *keeper->exists(root);
  const auto top_before = keeper->children("/").names;

  auto refused = [](const std::string& path, const std::function<void()>& call, const char* op) {
    try {
      call();
      ADD_FAILURE() << op << " accepted a bad path";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("invalid znode path"), std::string::npos)
          << op << ": " << e.what();
    }
    (void)path;
  };
  for (const auto& bad : bad_everywhere) {
    refused(
        bad, [&] { (void)keeper->async_create(bad, "", CreateMode::persistent); }, "create");
    refused(
        bad, [&] { (void)keeper->async_create(bad, "", CreateMode::ephemeral_sequential); },
        "create sequential");
    refused(
        bad, [&] { (void)keeper->async_remove(bad); }, "remove");
    refused(
        bad, [&] { (void)keeper->async_set(bad, "x"); }, "set");
    refused(
        bad, [&] { (void)keeper->async_exists(bad); }, "exists");
    refused(
        bad, [&] { (void)keeper->async_get(bad); }, "get");
    refused(
        bad, [&] { (void)keeper->async_children(bad); }, "children");
    refused(
        bad, [&] { (void)keeper->async_sync(bad); }, "sync");
    refused(
        bad, [&] { keeper->create_parents(bad + "/child"); }, "create_parents");
    // A multi is refused whole, whichever operation is bad.
    refused(
        bad,
        [&] {
          (void)keeper->async_multi({op::Create{at("/ok")}, op::Create{bad}});
        },
        "multi create");
    refused(
        bad,
        [&] {
          (void)keeper->async_multi({op::Create{at("/ok")}, op::Remove{bad}});
        },
        "multi remove");
    refused(
        bad,
        [&] {
          (void)keeper->async_multi({op::Create{at("/ok")}, op::Set{bad}});
        },
        "multi set");
    refused(
        bad,
        [&] {
          (void)keeper->async_multi({op::Create{at("/ok")}, op::Check{bad}});
        },
        "multi check");
  }
  for (const auto& bad : bad_writes) {
    refused(
        bad, [&] { (void)keeper->async_create(bad + "/x", "", CreateMode::persistent); }, "create");
    refused(
        bad, [&] { (void)keeper->async_remove(bad); }, "remove");
    refused(
        bad, [&] { (void)keeper->async_set(bad, "x"); }, "set");
    refused(
        bad, [&] { (void)keeper->async_multi({op::Set{bad}}); }, "multi set");
  }
  // Reads of the reserved subtree are allowed, as on the server.
  EXPECT_TRUE(keeper->exists("/zookeeper"));

  // Nothing reached the server: our root did not change, and "/" has no new
  // child but the unique roots ("/t-...") of live tests running beside this
  // one (its version would count theirs too).
  const auto after = *keeper->exists(root);
  EXPECT_EQ(after.cversion, before.cversion);
  EXPECT_EQ(after.pzxid, before.pzxid);
  for (const auto& name : keeper->children("/").names) {
    if (std::find(top_before.begin(), top_before.end(), name) == top_before.end()) {
      EXPECT_TRUE(name.starts_with("t-")) << "a new child of /: " << name.substr(0, 40);
    }
  }
  EXPECT_TRUE(keeper->children(root).names.empty());
  keeper->remove(root);
}

// ---- No ensemble: acquire and connect fail by their deadline, clearly.

TEST(DeadEnsemble, AcquiresFailByTheirDeadlineNamingTheLockAndLeaveNoThread) {
  // Needs no ensemble: nothing listens on this port.
  const auto threads_before = test::thread_baseline();
  const std::string hosts = "127.0.0.1:" + std::to_string(unused_port());
  auto options = quiet_options(hosts);
  // Each bound below tells a wait for a connection (a whole
  // connection_timeout) from none, with room for a busy machine's stalls.
  options.connection_timeout = 1s;
  options.retry_policy = std::make_shared<RetryNTimes>(2, 20ms);
  auto client = std::make_unique<Client>(options);
  const std::string dir = "/locks/dead";
  {
    InterProcessMutex mutex(*client, dir);
    NonReentrantMutex semaphore(*client, dir);
    MultiLock multi(*client, {dir + "-a", dir + "-b"});
    LockFactory factory(*client, "/locks/factory");
    auto by_key = factory.non_reentrant_mutex("k");

    auto start = Clock::now();
    EXPECT_FALSE(mutex.try_acquire());
    EXPECT_FALSE(by_key->try_acquire());
    EXPECT_LT(Clock::now() - start, 800ms) << "one attempt must not wait for a connection";

    start = Clock::now();
    EXPECT_FALSE(semaphore.try_acquire_for(150ms));
    EXPECT_FALSE(multi.try_acquire_for(150ms));
    auto took = Clock::now() - start;
    EXPECT_GE(took, 300ms);
    EXPECT_LT(took, 1800ms) << "a timed acquire waited past its deadline";

    // No deadline: the retry policy's (3 waits of connection_timeout).
    start = Clock::now();
    expect_keeper_error([&] { mutex.acquire(); }, Errc::connection_loss, dir, "acquire");
    expect_keeper_error([&] { multi.acquire(); }, Errc::connection_loss, dir, "MultiLock acquire");
    took = Clock::now() - start;
    EXPECT_GE(took, 2 * 3 * 1s);
    EXPECT_LT(took, 2 * 3 * 1s + 3s);
    try {
      semaphore.acquire();
      ADD_FAILURE() << "acquired without an ensemble";
    } catch (const KeeperError& e) {
      EXPECT_NE(std::string(e.what()).find("not connected to " + hosts), std::string::npos)
          << e.what();
    }
    EXPECT_FALSE(multi.is_acquired_in_this_process());
  }
  const auto start = Clock::now();
  client.reset();
  EXPECT_LT(Clock::now() - start, 10s) << "closing a never-connected Client hung";
  EXPECT_TRUE(test::threads_back_to(threads_before, kWait))
      << test::thread_count() << " threads, " << threads_before << " before";
}

// ---- Credentials and ACLs.

class AclMisuseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ZKR_REQUIRE_ENSEMBLE();
    root_ = test::unique_path("acl-root");
    auto options = quiet_options(test::connect_string());
    options.auth = DigestAuth{"alice", "secret"};
    alice_ = connected_client(options);
    // Alice's lock root: only she may do anything in it.
    alice_->keeper()->create(root_, "", CreateMode::persistent, {.acl = creator_all_acl()});
  }
  void TearDown() override {
    if (!alice_) return;
    auto keeper = alice_->keeper();
    keeper->sync(root_);
    remove_tree(*keeper, root_);
  }

  // The root is as Alice left it: nothing created in it by anyone else.
  void expect_root_untouched() {
    auto keeper = alice_->keeper();
    keeper->sync(root_);
    EXPECT_TRUE(keeper->children(root_).names.empty());
  }

  std::string root_;
  std::unique_ptr<Client> alice_;
};

TEST_F(AclMisuseTest, WrongPasswordIsAnotherIdentityAndGetsNoAuthAtOnce) {
  // ZooKeeper's digest scheme accepts any user:password: a wrong password is
  // not refused at connection (no auth_failed), it is another identity, and
  // every protected node says no_auth.
  auto options = quiet_options(test::connect_string());
  options.auth = DigestAuth{"alice", "wrong"};
  auto sleeper = std::make_shared<RecordingSleeper>();
  options.sleeper = sleeper;
  auto impostor = connected_client(options);
  EXPECT_TRUE(impostor->is_connected());

  const std::string dir = root_ + "/orders";
  InterProcessMutex mutex(*impostor, dir);
  const auto start = Clock::now();
  expect_keeper_error([&] { mutex.acquire(); }, Errc::no_auth, root_, "acquire");
  expect_keeper_error([&] { (void)mutex.try_acquire_for(kWait); }, Errc::no_auth, root_,
                      "try_acquire_for");
  EXPECT_LT(Clock::now() - start, 5s) << "no_auth is not worth a retry";
  EXPECT_TRUE(sleeper->delays().empty()) << "no_auth was retried";
  EXPECT_FALSE(mutex.is_acquired_in_this_process());
  EXPECT_TRUE(impostor->is_connected());
  expect_root_untouched();

  // Alice herself is fine.
  InterProcessMutex hers(*alice_, dir);
  ASSERT_TRUE(hers.try_acquire_for(kWait));
  EXPECT_TRUE(hers.release());
}

TEST_F(AclMisuseTest, EveryLockUnderAProtectedRootFailsWithNoAuthAndLeavesNothing) {
  // No credentials at all, and a lock directory Alice already made.
  auto stranger = connected_client(quiet_options(test::connect_string()));
  const std::string existing = root_ + "/existing";
  alice_->keeper()->create(existing, "", CreateMode::persistent, {.acl = creator_all_acl()});
  const std::string open_dir = test::unique_path("acl-open");

  NonReentrantMutex semaphore(*stranger, root_ + "/new");
  InterProcessMutex in_existing(*stranger, existing);
  LockFactory factory(*stranger, root_, LockLayout::hashed(4));
  auto by_key = factory.mutex("order-42");
  // One path open, one protected: the open one is given back.
  MultiLock both(*stranger, {open_dir, root_ + "/new"});

  expect_keeper_error([&] { semaphore.acquire(); }, Errc::no_auth, root_, "new directory");
  expect_keeper_error([&] { (void)in_existing.try_acquire(); }, Errc::no_auth, existing,
                      "existing directory");
  expect_keeper_error([&] { by_key->acquire(); }, Errc::no_auth, root_, "LockFactory");
  expect_keeper_error([&] { (void)both.try_acquire_for(kWait); }, Errc::no_auth, root_,
                      "MultiLock");
  EXPECT_FALSE(both.is_acquired_in_this_process());

  auto keeper = alice_->keeper();
  keeper->sync(root_);
  EXPECT_EQ(keeper->children(root_).names, std::vector<std::string>{"existing"});
  EXPECT_TRUE(keeper->children(existing).names.empty());
  // The open path's lock was taken, then given back: no node of ours left.
  EXPECT_TRUE(test::wait_children(
      *keeper, open_dir, [](const auto& n) { return n.empty(); }, kWait));
  (void)keeper->try_remove(open_dir);
}

// ---- Destroying the Client under a held lock or a waiting acquire.

TEST(ClientDestroyed, WhileALockIsHeldItsNodeGoesAndTheLockStaysSafe) {
  ZKR_REQUIRE_ENSEMBLE();
  const std::string dir = test::unique_path("client-gone-held");
  auto observer = connected_client(quiet_options(test::connect_string()));
  const auto threads_before = test::thread_baseline();
  auto doomed = connected_client(quiet_options(test::connect_string()));
  auto mutex = std::make_unique<InterProcessMutex>(*doomed, dir);
  auto semaphore = std::make_unique<NonReentrantMutex>(*doomed, dir + "-s");
  ASSERT_TRUE(mutex->try_acquire());
  ASSERT_TRUE(semaphore->try_acquire());
  const Grant grant = mutex->grant();

  doomed.reset();
  // The session closed: the nodes are gone now, not a session timeout later.
  auto keeper = observer->keeper();
  EXPECT_TRUE(children_of(*keeper, dir).empty());
  EXPECT_TRUE(children_of(*keeper, dir + "-s").empty());
  EXPECT_TRUE(grant.lost());
  expect_keeper_error([&] { mutex->acquire(); }, Errc::closing, dir, "acquire after the Client");
  EXPECT_TRUE(semaphore->release());
  mutex.reset();  // held, Client gone
  semaphore.reset();
  EXPECT_TRUE(test::threads_back_to(threads_before, kWait));

  // Another process takes the lock at once.
  InterProcessMutex next(*observer, dir);
  ASSERT_TRUE(next.try_acquire());
  EXPECT_TRUE(next.release());
}

TEST(ClientDestroyed, WhileAnAcquireWaitsTheAcquireFailsWithClosing) {
  ZKR_REQUIRE_ENSEMBLE();
  const std::string dir = test::unique_path("client-gone-waiting");
  auto holder_client = connected_client(quiet_options(test::connect_string()));
  InterProcessMutex held(*holder_client, dir);
  ASSERT_TRUE(held.try_acquire());

  auto doomed = connected_client(quiet_options(test::connect_string()));
  InterProcessMutex forever(*doomed, dir);
  NonReentrantMutex timed(*doomed, dir);
  auto waiting = std::async(std::launch::async, [&] { forever.acquire(); });
  auto bounded = std::async(std::launch::async, [&] { return timed.try_acquire_for(kWait * 4); });
  ASSERT_TRUE(test::wait_children(
      *holder_client->keeper(), dir, [](const auto& n) { return n.size() == 3; }, kWait));

  const auto start = Clock::now();
  doomed.reset();
  EXPECT_LT(Clock::now() - start, 15s) << "~Client hung on a waiting acquire";
  ASSERT_EQ(waiting.wait_for(kWait), std::future_status::ready);
  expect_keeper_error([&] { waiting.get(); }, Errc::closing, dir, "waiting acquire()");
  ASSERT_EQ(bounded.wait_for(kWait), std::future_status::ready);
  expect_keeper_error([&] { (void)bounded.get(); }, Errc::closing, dir,
                      "waiting try_acquire_for()");

  // Only the holder's node is left, and it still holds.
  auto keeper = holder_client->keeper();
  EXPECT_EQ(children_of(*keeper, dir).size(), 1u);
  EXPECT_FALSE(held.grant().lost());
  EXPECT_TRUE(held.release());
}

}  // namespace
}  // namespace zkr
