// Applications that share paths on a live ensemble: namespaces of different
// identities under one parent, a namespace the server refuses or someone
// deletes, and lock factories of different layouts on one root:
// lock roots are shared, and the library may delete nothing it did not make.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/ensemble.hpp"
#include "support/process_state.hpp"
#include "support/waits.hpp"
#include "zkr/lock.hpp"
#include "zkr/lock_factory.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using test::connected_client;
using test::kWait;
using test::remove_tree;

ClientOptions options_as(std::optional<DigestAuth> auth, std::string namespace_path = {}) {
  ClientOptions o;
  o.connect_string = test::connect_string();
  o.session_timeout = 6s;
  o.connection_timeout = 10s;
  o.retry_policy = std::make_shared<ExponentialBackoffRetry>(50ms, 5, 500ms);
  o.logging.level = LogLevel::off;
  o.auth = std::move(auth);
  o.namespace_path = std::move(namespace_path);
  return o;
}

const DigestAuth kAlice{"alice", "alice-secret"};
const DigestAuth kBob{"bob", "bob-secret"};

class SharedRootsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ZKR_REQUIRE_ENSEMBLE();
    base_ = test::unique_path("shared");
    // Alice can clean everything up: whatever is creator-only is hers.
    alice_raw_ = connected_client(options_as(kAlice));
  }
  void TearDown() override {
    if (!alice_raw_) return;
    auto keeper = alice_raw_->keeper();
    keeper->sync(base_);
    remove_tree(*keeper, base_);
  }

  std::string base_;  // "/t-...-shared": the shared parent
  std::unique_ptr<Client> alice_raw_;
};

// With auth, the default ACL is creator-only; the parent the namespace needs
// must not be, or the first identity locks every other out of it.
TEST_F(SharedRootsTest, TwoIdentitiesMakeNamespacesUnderOneParent) {
  auto alice = connected_client(options_as(kAlice, base_ + "/app-a"));
  auto bob = connected_client(options_as(kBob, base_ + "/app-b"));
  auto raw = alice_raw_->keeper();
  raw->sync(base_);  // another session, maybe another server: catch up first
  EXPECT_TRUE(raw->exists(base_ + "/app-b"));
  // Both work in their namespace; nodes inside stay their creator's.
  InterProcessMutex alices(*alice, "/locks/x");
  InterProcessMutex bobs(*bob, "/locks/x");
  ASSERT_TRUE(alices.try_acquire_for(kWait));
  ASSERT_TRUE(bobs.try_acquire_for(kWait));  // another namespace: another lock
  EXPECT_TRUE(alices.release());
  EXPECT_TRUE(bobs.release());
  bob->keeper()->create("/bobs-own", "private");
  raw->sync(base_ + "/app-b");
  EXPECT_EQ(raw->try_get(base_ + "/app-b/bobs-own").error(), Errc::no_auth);
}

// A parent where the namespace cannot be made: the Client says so at once,
// with the server's reason and the namespace's path, and does not pretend to
// be connected.
TEST_F(SharedRootsTest, RefusedNamespaceIsANamedErrorAtOnce) {
  const std::string fenced = base_ + "/alice-only";
  alice_raw_->keeper()->create_parents(fenced);
  alice_raw_->keeper()->create(fenced, "", CreateMode::persistent, {.acl = creator_all_acl()});

  Client bob(options_as(kBob, fenced + "/app-b"));
  const auto start = Clock::now();
  EXPECT_FALSE(bob.block_until_connected(kWait));
  EXPECT_LT(Clock::now() - start, kWait / 2) << "the refusal was not reported at once";
  try {
    (void)bob.keeper_when_connected();
    ADD_FAILURE() << "a keeper whose namespace does not exist";
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::no_auth) << e.what();
    EXPECT_EQ(e.path(), fenced + "/app-b");
    EXPECT_NE(std::string(e.what()).find("namespace " + fenced + "/app-b"), std::string::npos)
        << e.what();
  }
  InterProcessMutex lock(bob, "/l");
  try {
    (void)lock.try_acquire_for(1s);
    ADD_FAILURE() << "a lock in a namespace that does not exist";
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::no_auth) << e.what();
  }
  alice_raw_->keeper()->sync(fenced);
  EXPECT_FALSE(alice_raw_->keeper()->exists(fenced + "/app-b"));
}

// Deleted under a connected Client, the namespace is made again, and locks in
// it work again without a restart.
TEST_F(SharedRootsTest, DeletedNamespaceIsMadeAgain) {
  const std::string ns = base_ + "/app";
  auto alice = connected_client(options_as(kAlice, ns));
  InterProcessMutex lock(*alice, "/l");
  ASSERT_TRUE(lock.try_acquire_for(kWait));
  EXPECT_TRUE(lock.release());
  auto raw = alice_raw_->keeper();
  raw->sync(ns);
  const auto made_first = raw->exists(ns)->czxid;
  remove_tree(*raw, ns);
  ASSERT_TRUE(test::wait_children(
      *raw, base_, [](const auto& names) { return names.size() == 1; }, kWait))
      << "the namespace was not made again";
  EXPECT_GT(raw->exists(ns)->czxid, made_first);
  ASSERT_TRUE(lock.try_acquire_for(kWait));
  EXPECT_TRUE(lock.release());
}

// Two processes (two Clients) with different layouts on one root: the second
// refuses to make locks, naming both layouts; one with the same layout shares
// the first one's lock paths and is excluded by it.
TEST_F(SharedRootsTest, LockFactoriesWithDifferentLayoutsOnOneRootRefuse) {
  const std::string root = base_ + "/locks";
  auto first_client = connected_client(options_as(kAlice));
  auto second_client = connected_client(options_as(kBob));
  LockFactory first(*first_client, root, LockLayout::hashed_for(1'000'000));
  auto held = first.non_reentrant_mutex("order-42");
  ASSERT_TRUE(held->try_acquire_for(kWait));

  LockFactory other(*second_client, root, LockLayout::hashed_for(10'000'000));
  try {
    (void)other.non_reentrant_mutex("order-42");
    ADD_FAILURE() << "a factory with another layout made a lock";
  } catch (const LayoutMismatch& e) {
    EXPECT_EQ(e.root(), root);
    EXPECT_EQ(e.recorded(), layout_record(first.layout()));
    EXPECT_EQ(e.ours(), layout_record(other.layout()));
  }
  EXPECT_THROW(other.check_layout(), LayoutMismatch);

  LockFactory same(*second_client, root, LockLayout::hashed_for(1'000'000));
  EXPECT_NO_THROW(same.check_layout());
  auto contender = same.non_reentrant_mutex("order-42");
  EXPECT_FALSE(contender->try_acquire_for(200ms));
  EXPECT_TRUE(held->release());
  ASSERT_TRUE(contender->try_acquire_for(kWait));
  EXPECT_TRUE(contender->release());
}

// The ordinary order, client, factory, mutex(key), acquire, with no wait
// for the connection: making the lock checks nothing while the Client is not
// yet connected, so on e527dab such a lock skipped the check and was granted
// at its flat path beside the hashed layout's holder. Now its acquire reads
// the record first, whatever the order.
TEST_F(SharedRootsTest, ALockMadeBeforeItsClientConnectedChecksTheLayoutBeforeItsGrant) {
  const std::string root = base_ + "/locks";
  auto hashed_client = connected_client(options_as(kAlice));
  LockFactory hashed(*hashed_client, root, LockLayout::hashed(16));
  auto held = hashed.mutex("order-42");
  ASSERT_TRUE(held->try_acquire_for(kWait));

  // The Client hears of its session only once the gate opens: the factory
  // and the lock are surely made before it knows it is connected, however
  // fast the connection on this machine.
  struct SessionGate {
    std::mutex mutex;
    bool open = false;
    std::vector<SessionState> held;  // guarded by mutex
    SessionCallback forward;         // guarded by mutex
    void pass(SessionState s) {
      std::lock_guard lock(mutex);
      if (open) forward(s);
      else held.push_back(s);
    }
    void let_through() {
      std::lock_guard lock(mutex);
      open = true;
      for (const auto s : held) forward(s);
      held.clear();
    }
  };
  auto gate = std::make_shared<SessionGate>();
  auto options = options_as(kBob);
  options.keeper_factory = [gate](const KeeperConfig& config, SessionCallback on_state) {
    {
      std::lock_guard lock(gate->mutex);
      gate->forward = std::move(on_state);
    }
    return connect_keeper(config, [gate](SessionState s) { gate->pass(s); });
  };
  Client fresh(options);
  LockFactory flat(fresh, root);
  auto mutex = flat.mutex("order-42");
  ASSERT_FALSE(fresh.is_connected());
  gate->let_through();

  EXPECT_THROW((void)mutex->try_acquire_for(kWait), LayoutMismatch);
  std::promise<std::exception_ptr> ended;
  mutex->async_acquire_guard(Clock::now() + kWait, {},
                             [&ended](std::exception_ptr error, LockGuard guard) {
                               ended.set_value(guard ? nullptr : error);
                             });
  auto outcome = ended.get_future();
  ASSERT_EQ(outcome.wait_for(kWait + 10s), std::future_status::ready);
  const auto error = outcome.get();
  ASSERT_TRUE(error) << "an async acquire was granted on another layout";
  EXPECT_THROW(std::rethrow_exception(error), LayoutMismatch);
  EXPECT_TRUE(held->grant().held());
  EXPECT_TRUE(held->release());
}

// Two processes, two layouts, and a foreign client in between: the flat
// factory checked and held; someone deletes the record and a hashed factory
// records its own and holds the same key at its path. On e527dab the flat
// factory's locks went on being granted (two holders of one key); now they
// refuse, naming the change.
TEST_F(SharedRootsTest, ALayoutRecordChangedByAnotherClientIsRefused) {
  const std::string root = base_ + "/locks";
  auto flat_client = connected_client(options_as(kAlice));
  LockFactory flat(*flat_client, root);
  auto flat_lock = flat.mutex("order-42");
  ASSERT_TRUE(flat_lock->try_acquire_for(kWait));
  EXPECT_TRUE(flat_lock->release());

  const std::string record = root + "/" + std::string(kLayoutNodeName);
  alice_raw_->keeper()->remove(record);  // Alice made it: her ACL allows it
  auto hashed_client = connected_client(options_as(kBob));
  LockFactory hashed(*hashed_client, root, LockLayout::hashed(16));
  auto hashed_lock = hashed.mutex("order-42");
  ASSERT_TRUE(hashed_lock->try_acquire_for(kWait));

  // The record now names another layout: that is what the refusal says.
  try {
    (void)flat_lock->try_acquire_for(kWait);
    ADD_FAILURE() << "granted after the layout record changed";
  } catch (const LayoutMismatch& e) {
    EXPECT_EQ(e.recorded(), layout_record(hashed.layout())) << e.what();
    EXPECT_NE(std::string(e.what()).find(root), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)flat.non_reentrant_mutex("order-43")->try_acquire(), LayoutMismatch);
  EXPECT_TRUE(hashed_lock->grant().held());
  EXPECT_TRUE(hashed_lock->release());
}

}  // namespace
}  // namespace zkr
