// The listing guard, scan_locks and clean_lock_root on the in-memory ensemble:
// what is removed, what is kept, and what is never sent.
#include "zkr/cleanup.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <thread>

#include "lock_directory.hpp"
#include "support/fake_keeper.hpp"
#include "support/fault_keeper.hpp"
#include "support/waits.hpp"
#include "zkr/distributed_atomic_long.hpp"
#include "zkr/lock.hpp"
#include "zkr/lock_factory.hpp"
#include "zkr/persistent_node.hpp"
#include "zkr/semaphore.hpp"
#include "zkr/shared_count.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using test::FakeEnsemble;
using test::Faults;
using test::OpKind;

constexpr auto kWait = 10s;
const std::string kRoot = "/locks";

class CleanupTest : public ::testing::Test {
 protected:
  static CleanOptions dry_run() {
    CleanOptions options;
    options.dry_run = true;
    return options;
  }

  CleanupTest() {
    ClientOptions options;
    options.connect_string = "127.0.0.1:2181";  // not dialled: the factory is the fake's
    options.keeper_factory = test::with_faults(ensemble_.factory(), faults_);
    options.retry_policy = std::make_shared<RetryNTimes>(3, 1ms);
    client_ = std::make_unique<Client>(options);
    EXPECT_TRUE(client_->block_until_connected(kWait));
    raw_ = ensemble_.connect();
    raw_->create(kRoot);
  }

  // A leftover as locks leave them when their last contender's session died:
  // an empty directory holding the library's mark, as its missing parents do.
  void leftover_dir(const std::string& path) {
    for (auto slash = path.find('/', kRoot.size() + 1);; slash = path.find('/', slash + 1)) {
      const auto ancestor = path.substr(0, slash);
      if (!ensemble_.exists_now(ancestor))
        raw_->create(ancestor, std::string(kLockDirectoryMark), CreateMode::container);
      if (slash == std::string::npos) return;
    }
  }
  // Another application's empty nodes, as Kafka keeps them.
  void foreign_tree() {
    for (const char* path :
         {"/admin/delete_topics", "/brokers/ids", "/config/changes", "/isr_change_notification"})
      raw_->create_parents(kRoot + path + "/x");
  }
  // A node named like a lock node that no session owns.
  std::string orphan_node(const std::string& dir) {
    raw_->create_parents(dir + "/x");
    return raw_
        ->create(dir + "/_c_0b7c1a62-6f4a-4d1e-9a6c-2a8d1c0e4f55-lock-", "host=gone",
                 CreateMode::persistent_sequential)
        .path;
  }

  std::vector<std::string> removed_by(const CleanOptions& base, CleanReport* report = nullptr) {
    std::vector<std::string> removed;
    CleanOptions options = base;
    options.on_remove = [&](const std::string& path, CleanAction) { removed.push_back(path); };
    auto r = clean_lock_root(*client_, kRoot, options);
    if (report) *report = r;
    std::sort(removed.begin(), removed.end());
    return removed;
  }

  std::vector<std::string> removed_by_root(const std::string& root, CleanOptions options) {
    std::vector<std::string> removed;
    options.on_remove = [&](const std::string& path, CleanAction) { removed.push_back(path); };
    (void)clean_lock_root(*client_, root, options);
    return removed;
  }

  std::size_t children_requests() const { return children_rule_->fired(); }

  FakeEnsemble ensemble_;
  std::shared_ptr<Faults> faults_ = std::make_shared<Faults>();
  // Counts listings: a hook that does nothing, for as many as a test makes.
  test::FaultRule* children_rule_ =
      &faults_->on(OpKind::children).after([](auto&) {}).times(1'000'000);
  std::unique_ptr<Client> client_;
  std::shared_ptr<Keeper> raw_;
};

TEST_F(CleanupTest, ListingGuardRefusesABigDirectoryWithoutListingIt) {
  for (int i = 0; i < 5; ++i) raw_->create(kRoot + "/k" + std::to_string(i));
  auto keeper = client_->keeper();
  try {
    (void)list_children(*keeper, kRoot, 4);
    FAIL() << "listed 5 children with a limit of 4";
  } catch (const ListingTooLarge& e) {
    EXPECT_EQ(e.path(), kRoot);
    EXPECT_EQ(e.children(), 5u);
    EXPECT_EQ(e.limit(), 4u);
    const std::string what = e.what();
    EXPECT_NE(what.find("/locks"), std::string::npos) << what;
    EXPECT_NE(what.find("5 children"), std::string::npos) << what;
  }
  EXPECT_EQ(children_requests(), 0u);
  EXPECT_EQ(list_children(*keeper, kRoot, 5).names.size(), 5u);
  EXPECT_EQ(children_requests(), 1u);
}

TEST_F(CleanupTest, ListingAMissingDirectoryNamesIt) {
  auto keeper = client_->keeper();
  try {
    (void)list_children(*keeper, "/nowhere");
    FAIL();
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::no_node);
    EXPECT_EQ(e.path(), "/nowhere");
  }
}

// What the library made and nobody uses goes; nothing else does: another
// application's empty nodes, a node with data, a lock-named node no session
// owns (no lock of ours makes one), a live lock.
TEST_F(CleanupTest, RemovesOnlyItsOwnEmptyDirectoriesAndNoLiveLock) {
  LockFactory locks(*client_, kRoot, LockLayout::hashed(4));
  leftover_dir(locks.path_for("left-1"));
  leftover_dir(locks.path_for("left-2"));
  leftover_dir(kRoot + "/plain");
  foreign_tree();
  const auto orphan = orphan_node(locks.path_for("orphaned"));
  raw_->create(kRoot + "/settings", "someone's data");  // not a lock directory: kept
  raw_->create(kRoot + "/unmarked");                    // empty, but not ours: kept

  auto held = locks.non_reentrant_mutex("held");
  ASSERT_TRUE(held->try_acquire());
  auto waiter = locks.non_reentrant_mutex("held");
  std::thread waiting([&] { EXPECT_TRUE(waiter->try_acquire_for(kWait)); });
  ASSERT_TRUE(test::wait_children(
      *raw_, locks.path_for("held"), [](const auto& names) { return names.size() == 2; }, kWait));

  CleanReport report;
  const auto removed = removed_by({}, &report);
  EXPECT_EQ(report.foreign_lock_nodes, 1u);
  EXPECT_EQ(report.live_lock_nodes, 2u);
  EXPECT_EQ(report.not_ours, 6u);  // the four foreign leaves, /settings and /unmarked
  EXPECT_FALSE(std::binary_search(removed.begin(), removed.end(), orphan));
  EXPECT_TRUE(std::binary_search(removed.begin(), removed.end(), locks.path_for("left-1")));
  EXPECT_TRUE(std::binary_search(removed.begin(), removed.end(), kRoot + "/plain"));
  EXPECT_FALSE(ensemble_.exists_now(locks.path_for("left-1")));
  EXPECT_TRUE(ensemble_.exists_now(orphan));
  EXPECT_TRUE(ensemble_.exists_now(kRoot + "/settings"));
  EXPECT_EQ(ensemble_.data_now(kRoot + "/settings"), "someone's data");
  EXPECT_TRUE(ensemble_.exists_now(kRoot + "/unmarked"));
  for (const char* path :
       {"/admin/delete_topics", "/brokers/ids", "/config/changes", "/isr_change_notification"})
    EXPECT_TRUE(ensemble_.exists_now(kRoot + path)) << path;
  EXPECT_TRUE(ensemble_.exists_now(kRoot));  // the root is the caller's
  ASSERT_EQ(ensemble_.children_now(locks.path_for("held")).size(), 2u);

  // The queue still works: the waiter gets the lock when the holder lets go.
  EXPECT_TRUE(held->release());
  waiting.join();
  EXPECT_TRUE(waiter->is_acquired_in_this_process());
  EXPECT_TRUE(waiter->release());
}

// A semaphore keeps two containers under its path (locks/ for its internal
// mutex, leases/ for the leases): left behind by sessions that died, ours are
// swept like lock directories, bottom up; Curator's (no mark) are not, nor a
// live semaphore's leases. Its idle internal mutex directory is a lock
// directory between uses, swept as those are: the next acquire makes it
// again, and the semaphore goes on counting.
TEST_F(CleanupTest, SweepsASemaphoresLeftoverContainersAndKeepsOthers) {
  const std::string dead = kRoot + "/dead";
  leftover_dir(dead + "/locks");
  leftover_dir(dead + "/leases");
  const std::string curator = kRoot + "/curator";
  for (const auto& path : {curator, curator + "/locks", curator + "/leases"}) raw_->create(path);
  const std::string live = kRoot + "/live";
  InterProcessSemaphoreV2 semaphore(*client_, live, SemaphoreLimit::fixed(2));
  auto held = semaphore.try_acquire_for(1, kWait);
  ASSERT_EQ(held.size(), 1u);

  CleanReport report;
  const auto removed = removed_by({}, &report);
  EXPECT_EQ(removed,
            (std::vector<std::string>{dead, dead + "/leases", dead + "/locks", live + "/locks"}));
  EXPECT_FALSE(ensemble_.exists_now(dead));
  for (const auto& path : {curator, curator + "/locks", curator + "/leases"})
    EXPECT_TRUE(ensemble_.exists_now(path)) << path;
  EXPECT_EQ(report.live_lock_nodes, 1u);  // our lease
  EXPECT_TRUE(ensemble_.exists_now(live + "/leases"));
  EXPECT_TRUE(ensemble_.exists_now(held.front().grant().node_path()));
  EXPECT_FALSE(held.front().grant().lost());

  // The live semaphore still counts: one lease out, one more to take, then none.
  auto second = semaphore.try_acquire_for(1, kWait);
  EXPECT_EQ(second.size(), 1u);
  EXPECT_TRUE(semaphore.try_acquire_for(1, 50ms).empty());
  EXPECT_TRUE(held.front().release());
  EXPECT_EQ(semaphore.try_acquire_for(1, kWait).size(), 1u);
}

// The parents the other recipes make (counters, a kept node, a group's
// directory) are the library's too: marked, so that once their nodes are gone a
// sweep removes them at once, as the servers would reap them in their time,
// rather than leave the root looking like someone else's.
TEST_F(CleanupTest, SweepsTheParentsEveryRecipeMadeOnceTheirNodesAreGone) {
  const std::string along = kRoot + "/counters/a/value";
  const std::string count = kRoot + "/counters/b/count";
  const std::string kept = kRoot + "/nodes/n/node";
  EXPECT_TRUE(DistributedAtomicLong(*client_, along).initialize(7));
  {
    SharedCount shared(*client_, count, 3);
    shared.start();
  }
  {
    PersistentNode node(*client_, kept, "data");
    node.start();
    ASSERT_TRUE(node.wait_until_present(kWait));
  }  // close() deletes our node
  for (const auto& parent : {kRoot + "/counters", kRoot + "/counters/a", kRoot + "/nodes/n"})
    EXPECT_EQ(raw_->get(parent).data, kLockDirectoryMark) << parent;
  // The counters' nodes are shared data, which no sweep touches: gone, as
  // their users delete them.
  raw_->remove(along);
  raw_->remove(count);
  EXPECT_FALSE(ensemble_.exists_now(kept));

  EXPECT_EQ(removed_by({}), (std::vector<std::string>{kRoot + "/counters", kRoot + "/counters/a",
                                                      kRoot + "/counters/b", kRoot + "/nodes",
                                                      kRoot + "/nodes/n"}));
  EXPECT_TRUE(raw_->children(kRoot).names.empty());
}

TEST_F(CleanupTest, DryRunReportsTheSamePathsAndRemovesNothing) {
  for (int i = 0; i < 7; ++i) leftover_dir(kRoot + "/a/k" + std::to_string(i));
  leftover_dir(kRoot + "/b");
  foreign_tree();
  (void)orphan_node(kRoot + "/c");
  const auto before = ensemble_.node_count();

  CleanReport dry;
  const auto would = removed_by(dry_run(), &dry);
  EXPECT_EQ(ensemble_.node_count(), before);
  // Post-order: a directory the sweep empties goes too.
  EXPECT_TRUE(std::binary_search(would.begin(), would.end(), kRoot + "/a"));
  EXPECT_TRUE(std::binary_search(would.begin(), would.end(), kRoot + "/b"));

  CleanReport real;
  const auto removed = removed_by({}, &real);
  EXPECT_EQ(removed, would);
  EXPECT_EQ(real.empty_directories, dry.empty_directories);
  EXPECT_EQ(real.empty_directories, 9u);
  EXPECT_EQ(real.foreign_lock_nodes, 1u);
  EXPECT_EQ(
      ensemble_.children_now(kRoot),
      (std::vector<std::string>{"admin", "brokers", "c", "config", "isr_change_notification"}));
}

TEST_F(CleanupTest, WorksPageByPageOnABigDirectory) {
  for (int i = 0; i < 25; ++i) leftover_dir(kRoot + "/k" + std::to_string(i));
  std::vector<std::uint64_t> progress;
  CleanOptions options;
  options.page_size = 10;
  options.on_progress = [&](const WalkProgress& p) { progress.push_back(p.nodes); };
  CleanReport report;
  const auto removed = removed_by(options, &report);
  EXPECT_EQ(removed.size(), 25u);
  EXPECT_EQ(progress, (std::vector<std::uint64_t>{10, 20, 25}));
  EXPECT_TRUE(ensemble_.children_now(kRoot).empty());
}

TEST_F(CleanupTest, RefusesARootAboveItsListingLimit) {
  for (int i = 0; i < 6; ++i) leftover_dir(kRoot + "/k" + std::to_string(i));
  CleanOptions options;
  options.max_children = 5;
  EXPECT_THROW((void)clean_lock_root(*client_, kRoot, options), ListingTooLarge);
  EXPECT_EQ(ensemble_.children_now(kRoot).size(), 6u);
}

TEST_F(CleanupTest, RemovesTheRootOnlyWhenAskedAndOnlyIfOurs) {
  leftover_dir(kRoot + "/k/made-by-a-lock");
  (void)clean_lock_root(*client_, kRoot + "/k");
  EXPECT_TRUE(ensemble_.exists_now(kRoot + "/k"));
  CleanOptions options;
  options.remove_root = true;
  (void)clean_lock_root(*client_, kRoot + "/k", options);
  EXPECT_FALSE(ensemble_.exists_now(kRoot + "/k"));
  // kRoot was made by someone else: emptied, but kept.
  CleanReport report;
  report = clean_lock_root(*client_, kRoot, options);
  EXPECT_TRUE(ensemble_.exists_now(kRoot));
  EXPECT_EQ(report.not_ours, 1u);
  // And never anything under /zookeeper, whatever is asked.
  EXPECT_THROW((void)clean_lock_root(*client_, "/zookeeper", options), std::invalid_argument);
  CleanOptions everything = dry_run();
  everything.remove_root = true;
  for (const auto& path : removed_by_root("/", everything))
    EXPECT_FALSE(path.starts_with("/zookeeper")) << path;
}

TEST_F(CleanupTest, ADirectoryInUseAgainIsLeftAlone) {
  leftover_dir(kRoot + "/k");
  // Between the sweep's look at the directory and its remove, a contender queues in it.
  auto contender = ensemble_.connect();
  faults_->on(OpKind::get, kRoot + "/k").after([&](auto&) {
    contender->create(kRoot + "/k/_c_0b7c1a62-6f4a-4d1e-9a6c-2a8d1c0e4f55-lock-", "",
                      CreateMode::ephemeral_sequential);
  });
  CleanReport report;
  const auto removed = removed_by({}, &report);
  EXPECT_TRUE(removed.empty());
  EXPECT_EQ(report.raced, 1u);
  EXPECT_EQ(ensemble_.children_now(kRoot + "/k").size(), 1u);
}

// Between the sweep's read of a directory of ours and its delete, someone
// deletes it and puts a node of their own, with data, at the same path. A
// delete by version alone would take it (a new node has version 0 too); the
// probe pins the directory, so the node is read again and kept.
TEST_F(CleanupTest, ANodePutInPlaceOfADirectoryOfOursIsKept) {
  leftover_dir(kRoot + "/k");
  auto other = ensemble_.connect();
  faults_->on(OpKind::get, kRoot + "/k").after([&](auto&) {
    other->remove(kRoot + "/k");
    other->create(kRoot + "/k", "precious");
  });
  CleanReport report;
  const auto removed = removed_by({}, &report);
  EXPECT_TRUE(removed.empty());
  EXPECT_EQ(ensemble_.data_now(kRoot + "/k"), "precious");
  EXPECT_TRUE(ensemble_.children_now(kRoot + "/k").empty()) << "the probe was left behind";
}

TEST_F(CleanupTest, ScanShowsHolderWaitersAndKey) {
  LockOptions named;
  named.holder_id = "host=h1;pid=1";
  LockFactory locks(*client_, kRoot, LockLayout::hashed(8), named);
  auto held = locks.non_reentrant_mutex("sha256:9f86");
  ASSERT_TRUE(held->try_acquire());
  std::vector<std::unique_ptr<NonReentrantMutex>> waiters;
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    waiters.push_back(locks.non_reentrant_mutex("sha256:9f86"));
    threads.emplace_back([&, i] {
      EXPECT_TRUE(waiters[i]->try_acquire_for(kWait));
      EXPECT_TRUE(waiters[i]->release());
    });
    ASSERT_TRUE(test::wait_children(
        *raw_, locks.path_for("sha256:9f86"),
        [i](const auto& names) { return names.size() == 2u + i; }, kWait));
  }
  auto other = locks.mutex("plain");
  ASSERT_TRUE(other->try_acquire());

  std::vector<LockInfo> found;
  scan_locks(*client_, kRoot, {}, [&](const LockInfo& info) { found.push_back(info); });
  std::sort(found.begin(), found.end(), [](auto& a, auto& b) { return a.path < b.path; });
  ASSERT_EQ(found.size(), 2u);
  const auto& busy = found[0].key == "sha256:9f86" ? found[0] : found[1];
  EXPECT_EQ(busy.path, locks.path_for("sha256:9f86"));
  EXPECT_EQ(busy.waiters(), 2u);
  EXPECT_EQ(busy.queue.front().holder_id, "host=h1;pid=1");
  EXPECT_EQ(busy.path + "/" + busy.queue.front().name, held->grant().node_path());
  EXPECT_EQ(busy.queue.front().czxid, held->grant().fencing_token());

  EXPECT_TRUE(held->release());
  for (auto& t : threads) t.join();
  EXPECT_TRUE(other->release());
}

// Keys named like every protocol's nodes make key directories named so: kept
// by a flat factory that does not remove them on release, they are our marked
// directories, not lock nodes. The scan shows no lock in them until one is
// held, and the sweep removes them as the empty directories of ours they are,
// reporting no lock-named node.
TEST_F(CleanupTest, KeyDirectoriesNamedLikeLockNodesAreDirectories) {
  const std::vector<std::string> keys{"job-lock-0000000042",
                                      "job__READ__0000000042",
                                      "job__WRIT__0000000042",
                                      "job-lease-0000000042",
                                      "job-latch-0000000042",
                                      "job__lock__0000000042",
                                      "_c_0b7c1a62-6f4a-4d1e-9a6c-2a8d1c0e4f55-lock-0000000007"};
  LockOptions keep;
  keep.remove_directory_on_release = false;
  keep.holder_id = "holder-A";
  LockFactory locks(*client_, kRoot, LockLayout::flat(), keep);
  for (const auto& key : keys) {
    auto mutex = locks.mutex(key);
    ASSERT_TRUE(mutex->try_acquire()) << key;
    EXPECT_TRUE(mutex->release());
    ASSERT_TRUE(test::wait_children(
        *raw_, locks.path_for(key), [](const auto& names) { return names.empty(); }, kWait))
        << key;
  }
  // One key held: its directory is shown with its holder, named as it is.
  auto held = locks.mutex(keys[0]);
  ASSERT_TRUE(held->try_acquire());

  std::vector<LockInfo> found;
  scan_locks(*client_, kRoot, {}, [&](const LockInfo& info) { found.push_back(info); });
  ASSERT_EQ(found.size(), 1u) << "a key directory was taken for a lock node of " << kRoot
                              << (found.empty() ? "" : ": " + found[0].path);
  EXPECT_EQ(found[0].path, locks.path_for(keys[0]));
  EXPECT_EQ(found[0].key, keys[0]);
  EXPECT_EQ(found[0].queue.front().holder_id, "holder-A");
  EXPECT_NE(found[0].queue.front().ephemeral_owner, 0);
  EXPECT_TRUE(held->release());
  ASSERT_TRUE(test::wait_children(
      *raw_, locks.path_for(keys[0]), [](const auto& names) { return names.empty(); }, kWait));

  found.clear();
  scan_locks(*client_, kRoot, {}, [&](const LockInfo& info) { found.push_back(info); });
  EXPECT_TRUE(found.empty()) << found.front().path << " shown as a lock";

  // A real orphan beside them, persistent and unmarked, is still reported.
  const auto orphan = orphan_node(kRoot + "/stale");
  CleanReport report;
  const auto listed = removed_by(dry_run(), &report);
  EXPECT_EQ(report.foreign_lock_nodes, 1u);
  for (const auto& key : keys)
    EXPECT_TRUE(std::binary_search(listed.begin(), listed.end(), locks.path_for(key))) << key;
  const auto removed = removed_by({}, &report);
  EXPECT_EQ(removed, listed);
  EXPECT_EQ(report.foreign_lock_nodes, 1u);
  for (const auto& key : keys) EXPECT_FALSE(ensemble_.exists_now(locks.path_for(key))) << key;
  EXPECT_TRUE(ensemble_.exists_now(orphan));
}

// The mark alone is not enough: a lock node is ephemeral, whatever its holder
// wrote into it, and stays a lock node.
TEST_F(CleanupTest, ALockNodeHoldingTheMarkIsStillALockNode) {
  LockOptions odd;
  odd.holder_id = std::string(kLockDirectoryMark);
  LockFactory locks(*client_, kRoot, LockLayout::flat(), odd);
  auto held = locks.mutex("k");
  ASSERT_TRUE(held->try_acquire());
  std::vector<LockInfo> found;
  scan_locks(*client_, kRoot, {}, [&](const LockInfo& info) { found.push_back(info); });
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].path, locks.path_for("k"));
  CleanReport report;
  (void)removed_by({}, &report);
  EXPECT_EQ(report.live_lock_nodes, 1u);
  EXPECT_TRUE(held->release());
}

}  // namespace
}  // namespace zkr
