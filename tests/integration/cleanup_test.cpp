// Cleanup on the live ensemble: locks leave nothing behind, and the cleaner
// sweeps what others left without touching a held lock. (Contenders racing a
// directory's removal: lock_stress_test.cpp.)
#include "zkr/cleanup.hpp"

#include <gtest/gtest.h>

#include "lock_directory.hpp"
#include "support/ensemble.hpp"
#include "support/waits.hpp"
#include "zkr/lock.hpp"
#include "zkr/lock_factory.hpp"
#include "zkr/read_write_lock.hpp"
#include "zkr/semaphore.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using test::kWait;

class CleanupIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ZKR_REQUIRE_ENSEMBLE();
    root_ = test::unique_path("cleanup");
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

  std::string root_;
  std::vector<std::unique_ptr<Client>> clients_;
};

// The fake hides container marks because the real server does: pin that.
TEST_F(CleanupIntegrationTest, ContainersLookPersistentToClients) {
  auto keeper = client().keeper();
  const auto created = keeper->create(root_, "", CreateMode::container);
  EXPECT_EQ(created.stat.ephemeral_owner, 0);
  EXPECT_EQ(keeper->children(root_).stat.ephemeral_owner, 0);
  keeper->remove(root_);
}

TEST_F(CleanupIntegrationTest, DistinctKeysLockedOnceLeaveNothingBehind) {
  auto& c = client();
  LockFactory locks(c, root_, LockLayout::hashed(16));
  constexpr int kKeys = 300;
  for (int i = 0; i < kKeys; ++i) {
    auto lock = locks.non_reentrant_mutex("key-" + std::to_string(i));
    ASSERT_TRUE(lock->try_acquire_for(kWait));
    ASSERT_TRUE(lock->release());
  }
  // The lock nodes went with their releases (this session's later reads are
  // ordered after the deletes it sent)...
  std::size_t found = 0;
  scan_locks(c, root_, {}, [&](const LockInfo&) { ++found; });
  EXPECT_EQ(found, 0u);
  // ...and the key directories with their lock objects, in the background.
  // (A bucket the server reaped lists as empty.)
  auto keeper = c.keeper();
  const auto empty = [](const auto& names) { return names.empty(); };
  for (const auto& bucket : keeper->children(root_).names) {
    if (bucket == kLayoutNodeName) continue;
    EXPECT_TRUE(test::wait_children(*keeper, root_ + "/" + bucket, empty, kWait))
        << "key directories left in " << bucket;
  }
  // ...and the server reaps the containers above them (every second here),
  // all but the root, which keeps the factory's layout record (and must: a
  // root that came and went could be given another layout while a process
  // still uses the old one).
  const std::vector<std::string> only_record{std::string(kLayoutNodeName)};
  EXPECT_TRUE(test::wait_children(
      *keeper, root_, [&](const auto& names) { return names == only_record; }, kWait))
      << root_ << " keeps more than its layout record";
  keeper->remove(root_ + "/" + std::string(kLayoutNodeName));
  EXPECT_TRUE(test::wait_gone(*keeper, root_, kWait)) << root_ << " still there";
}

// The read/write lock's directory and the semaphore's (its path, locks/ and
// leases/) go too once released: the lock directories by the library, the
// containers above them by the server's reaper (every second here).
TEST_F(CleanupIntegrationTest, ReadWriteLocksAndSemaphoresLeaveNothingBehind) {
  auto& c = client();
  auto keeper = c.keeper();
  keeper->create(root_);  // persistent: what is left under it is the locks'
  {
    // Each directory is checked while its lock is held: the reaper takes a
    // released one at its next pass, which a slow run can reach before a
    // count taken after all three releases.
    const auto made = [&](const std::string& name) {
      EXPECT_TRUE(keeper->exists(root_ + "/" + name)) << name << " was not made";
    };
    InterProcessReadWriteLock rw(c, root_ + "/rw");
    ASSERT_TRUE(rw.read_lock().try_acquire_for(kWait));
    made("rw");
    ASSERT_TRUE(rw.read_lock().release());
    ASSERT_TRUE(rw.write_lock().try_acquire_for(kWait));
    ASSERT_TRUE(rw.write_lock().release());
    InterProcessSemaphoreV2 semaphore(c, root_ + "/sem", SemaphoreLimit::fixed(2));
    auto leases = semaphore.try_acquire_for(2, kWait);
    ASSERT_EQ(leases.size(), 2u);
    made("sem");
    for (auto& lease : leases) EXPECT_TRUE(lease.release());
    InterProcessSemaphoreMutex mutex(c, root_ + "/csm");
    ASSERT_TRUE(mutex.try_acquire_for(kWait));
    made("csm");
    ASSERT_TRUE(mutex.release());
  }
  const auto empty = [](const auto& names) { return names.empty(); };
  EXPECT_TRUE(test::wait_children(*keeper, root_, empty, kWait))
      << "left under " << root_ << ": " << testing::PrintToString(keeper->children(root_).names);
  keeper->remove(root_);
}

TEST_F(CleanupIntegrationTest, CleanerSweepsItsLeftoversAndNothingElse) {
  auto& c = client();
  auto keeper = c.keeper();
  const std::string mark(kLockDirectoryMark);
  // What locks leave when their last contender's session died: empty marked
  // directories (containers that never had a child are never reaped by the
  // server), under marked buckets.
  // (Buckets persistent here, so that the server's own container reaper
  // does not race the sweep for them.)
  for (int b = 0; b < 4; ++b) {
    keeper->create_parents(root_ + "/b0/x");
    (void)keeper->try_create(root_ + "/b" + std::to_string(b), mark, CreateMode::persistent);
  }
  for (int i = 0; i < 40; ++i)
    keeper->create(root_ + "/b" + std::to_string(i % 4) + "/k" + std::to_string(i), mark,
                   i % 2 ? CreateMode::container : CreateMode::persistent);
  // Another application's tree under the same root, as Kafka keeps it: empty
  // persistent nodes, and one with data. Never ours to remove.
  const std::vector<std::string> foreign = {"/kafka/admin/delete_topics", "/kafka/brokers/ids",
                                            "/kafka/config/changes",
                                            "/kafka/isr_change_notification"};
  for (const auto& path : foreign) keeper->create_parents(root_ + path + "/x");
  keeper->create(root_ + "/kafka/controller_epoch", "7");
  // A lock-named node no session owns: not ours either (reported).
  const auto orphan = keeper
                          ->create(root_ + "/b0/k0/_c_6f0e2b1a-0d8c-4a7e-9b3f-1c2d3e4f5a6b-lock-",
                                   "host=gone", CreateMode::persistent_sequential)
                          .path;
  InterProcessMutex held(client(), root_ + "/b1/held");
  ASSERT_TRUE(held.try_acquire_for(kWait));

  CleanOptions dry;
  dry.dry_run = true;
  std::vector<std::string> would;
  dry.on_remove = [&](const std::string& path, CleanAction) { would.push_back(path); };
  const auto dry_report = clean_lock_root(c, root_, dry);
  EXPECT_EQ(dry_report.foreign_lock_nodes, 1u);
  EXPECT_EQ(dry_report.live_lock_nodes, 1u);
  EXPECT_EQ(keeper->children(root_).names.size(), 5u) << "a dry run removed something";

  std::vector<std::string> removed;
  CleanOptions real;
  real.page_size = 7;
  real.remove_root = true;  // the root is not ours: it stays whatever is asked
  real.on_remove = [&](const std::string& path, CleanAction) { removed.push_back(path); };
  const auto report = clean_lock_root(c, root_, real);
  std::sort(would.begin(), would.end());
  std::sort(removed.begin(), removed.end());
  EXPECT_EQ(removed, would);
  EXPECT_EQ(report.foreign_lock_nodes, 1u);
  EXPECT_EQ(report.empty_directories, 39u + 2u);  // every k but k0, and b2, b3
  EXPECT_TRUE(keeper->exists(orphan));
  for (const auto& path : foreign) EXPECT_TRUE(keeper->exists(root_ + path)) << path;
  EXPECT_EQ(keeper->get(root_ + "/kafka/controller_epoch").data, "7");
  EXPECT_TRUE(keeper->exists(root_));
  EXPECT_EQ(keeper->children(root_).names, (std::vector<std::string>{"b0", "b1", "kafka"}));
  EXPECT_FALSE(held.grant().lost());
  EXPECT_EQ(keeper->children(root_ + "/b1/held").names.size(), 1u);
  EXPECT_TRUE(held.release());
  // The test's own: the orphan and the foreign tree.
  keeper->remove(orphan);
}

// A shared root holds other identities' nodes, guarded against us: the
// sweep goes around them instead of failing.
TEST_F(CleanupIntegrationTest, NodesGuardedAgainstUsAreSweptAround) {
  ClientOptions alice_options;
  alice_options.connect_string = test::connect_string();
  alice_options.auth = DigestAuth{"alice", "secret"};
  Client alice(alice_options);
  ASSERT_TRUE(alice.block_until_connected(kWait));
  const std::string mark(kLockDirectoryMark);
  auto keeper = alice.keeper();
  keeper->create(root_, "", CreateMode::persistent, {.acl = open_acl_unsafe()});  // shared
  keeper->create(root_ + "/alices", mark, CreateMode::persistent, {.acl = creator_all_acl()});
  keeper->create(root_ + "/alices/empty", mark, CreateMode::persistent, {.acl = creator_all_acl()});
  keeper->create(root_ + "/alices/_c_6f0e2b1a-0d8c-4a7e-9b3f-1c2d3e4f5a6b-lock-0000000001", "",
                 CreateMode::persistent, {.acl = creator_all_acl()});
  keeper->create(root_ + "/ours", mark, CreateMode::persistent, {.acl = open_acl_unsafe()});
  auto& stranger = client();
  CleanReport report;
  ASSERT_NO_THROW(report = clean_lock_root(stranger, root_));
  EXPECT_EQ(report.empty_directories, 1u);  // /ours
  EXPECT_TRUE(keeper->exists(root_ + "/alices/empty"));
  EXPECT_FALSE(keeper->exists(root_ + "/ours"));
}

TEST_F(CleanupIntegrationTest, ListingGuardNamesThePathAndTheCount) {
  auto keeper = client().keeper();
  keeper->create(root_);
  std::vector<std::future<Result<Created>>> creates;
  for (int i = 0; i < 50; ++i)
    creates.push_back(
        keeper->async_create(root_ + "/k" + std::to_string(i), "", CreateMode::persistent));
  for (auto& f : creates) ASSERT_TRUE(f.get().ok());
  try {
    (void)list_children(*keeper, root_, 10);
    FAIL() << "listed 50 children with a limit of 10";
  } catch (const ListingTooLarge& e) {
    EXPECT_EQ(e.children(), 50u);
    EXPECT_NE(std::string(e.what()).find(root_), std::string::npos) << e.what();
  }
  EXPECT_EQ(list_children(*keeper, root_, 50).names.size(), 50u);
  for (int i = 0; i < 50; ++i) keeper->remove(root_ + "/k" + std::to_string(i));
  keeper->remove(root_);
}

}  // namespace
}  // namespace zkr
