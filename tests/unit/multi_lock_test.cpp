#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>

#include "support/fake_keeper.hpp"
#include "support/fault_keeper.hpp"
#include "support/waits.hpp"
#include "zkr/multi_lock.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;

class MultiLockTest : public ::testing::Test {
 protected:
  Client& client() {
    ClientOptions options;
    options.connect_string = "127.0.0.1:2181";
    options.keeper_factory = ensemble_.factory();
    clients_.push_back(std::make_unique<Client>(options));
    EXPECT_TRUE(clients_.back()->block_until_connected(5s));
    return *clients_.back();
  }
  std::size_t nodes_under(const std::vector<std::string>& dirs) {
    std::size_t n = 0;
    for (const auto& dir : dirs) n += ensemble_.children_now(dir).size();
    return n;
  }
  test::FakeEnsemble ensemble_;
  std::vector<std::unique_ptr<Client>> clients_;
};

TEST_F(MultiLockTest, TakesPathsInCanonicalOrderOnce) {
  MultiLock both(client(), {"/l/b", "/l/a", "/l/b"});
  EXPECT_EQ(both.paths(), (std::vector<std::string>{"/l/a", "/l/b"}));
  ASSERT_TRUE(both.try_acquire());
  EXPECT_EQ(both.grants().size(), 2u);
  EXPECT_EQ(nodes_under({"/l/a", "/l/b"}), 2u);
  EXPECT_TRUE(both.release());
  EXPECT_EQ(nodes_under({"/l/a", "/l/b"}), 0u);
  EXPECT_FALSE(both.release());
}

TEST_F(MultiLockTest, RollsBackCompletelyWhenOnePathIsTaken) {
  InterProcessMutex b(client(), "/l/b");
  ASSERT_TRUE(b.try_acquire());
  MultiLock both(client(), {"/l/a", "/l/b", "/l/c"});
  EXPECT_FALSE(both.try_acquire_for(100ms));
  EXPECT_FALSE(both.is_acquired_in_this_process());
  EXPECT_EQ(nodes_under({"/l/a", "/l/c"}), 0u);  // /l/a was taken, then given back
  EXPECT_EQ(nodes_under({"/l/b"}), 1u);          // only the other holder's
  b.release();
  EXPECT_TRUE(both.try_acquire_for(5s));
  both.release();
}

// Found by the chaos suite: the session ends after the first lock is taken
// and while the second is awaited; the first lock's node goes with it and
// another client takes that lock. The set must not be granted then.
TEST_F(MultiLockTest, ASessionLostWhileTakingTheSetIsNeverGrantedHalfLost) {
  auto& mine = client();
  InterProcessMutex other_b(client(), "/l/b");
  ASSERT_TRUE(other_b.try_acquire());
  MultiLock both(mine, {"/l/a", "/l/b"});
  std::atomic<bool> granted{false};
  std::thread taking([&] {
    granted = both.try_acquire_for(5s);
    if (granted) {
      EXPECT_TRUE(both.release());
    }
  });
  ASSERT_TRUE(test::wait_children(
      *ensemble_.connect(), "/l/b", [](const auto& n) { return n.size() == 2; }, 5s));
  ensemble_.expire(mine.keeper()->session_id());
  InterProcessMutex other_a(client(), "/l/a");
  ASSERT_TRUE(other_a.try_acquire_for(5s));  // the lock the set had taken first
  other_b.release();                         // the set's wait for b ends, in its new session
  // It must not hold {a, b} while other_a holds a: it starts over and waits
  // for a; when other_a lets go, it gets both.
  EXPECT_TRUE(test::wait_children(
      *ensemble_.connect(), "/l/a", [](const auto& n) { return n.size() == 2; }, 5s));
  EXPECT_FALSE(granted.load());
  other_a.release();
  taking.join();
  EXPECT_TRUE(granted.load());
}

TEST_F(MultiLockTest, OppositeOrdersDoNotDeadlock) {
  MultiLock ab(client(), {"/l/a", "/l/b"});
  MultiLock ba(client(), {"/l/b", "/l/a"});
  std::atomic<int> done{0};
  auto run = [&](MultiLock& lock) {
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(lock.try_acquire_for(10s)) << "deadlock?";
      lock.release();
    }
    ++done;
  };
  std::thread t1(run, std::ref(ab)), t2(run, std::ref(ba));
  t1.join();
  t2.join();
  EXPECT_EQ(done, 2);
  EXPECT_EQ(nodes_under({"/l/a", "/l/b"}), 0u);
}

TEST_F(MultiLockTest, GuardedWriteChecksEveryLease) {
  auto& c = client();
  c.keeper()->create("/resource", "0");
  MultiLock both(c, {"/l/a", "/l/b"});
  ASSERT_TRUE(both.try_acquire());
  const auto grants = both.grants();
  EXPECT_TRUE(guarded_write(*c.keeper(), grants, {op::Set{"/resource", "1"}}).ok());
  // One of the nodes vanishes (an operator, an expired session): writes fail.
  c.keeper()->remove(grants[1].node_path());
  const auto refused = guarded_write(*c.keeper(), grants, {op::Set{"/resource", "2"}});
  EXPECT_EQ(refused.error, Errc::no_node);
  EXPECT_EQ(refused.failed_index(), 1u);
  EXPECT_EQ(*ensemble_.data_now("/resource"), "1");
  both.release();
}

// The outcome says what became of the write, so that callers need not decode
// the multi: applied; refused at one of the caller's ops (conflict, which
// op); refused by a grant's check or a released grant (lock lost, nothing
// sent for the latter); or no reply (unknown: here it was applied, and here
// not, and the caller cannot tell which).
TEST_F(MultiLockTest, GuardedWriteSaysWhatBecameOfTheWrite) {
  using Outcome = GuardedWriteResult::Outcome;
  auto& c = client();
  c.keeper()->create("/resource", "0");
  MultiLock both(c, {"/l/a", "/l/b"});
  ASSERT_TRUE(both.try_acquire());
  const auto grants = both.grants();

  const auto applied = guarded_write(*c.keeper(), grants, {op::Set{"/resource", "1"}});
  EXPECT_EQ(applied.outcome, Outcome::applied);
  EXPECT_TRUE(applied.applied());

  const auto conflict = guarded_write(*c.keeper(), grants,
                                      {op::Set{"/resource", "2"}, op::Set{"/resource", "3", 99}});
  EXPECT_EQ(conflict.outcome, Outcome::conflict) << to_string(conflict.outcome);
  EXPECT_EQ(conflict.failed_op, 1u);  // the caller's second op, not the multi's fourth
  EXPECT_EQ(conflict.error, Errc::bad_version);
  EXPECT_EQ(*ensemble_.data_now("/resource"), "1");

  auto faults = std::make_shared<test::Faults>();
  test::FaultKeeper flaky(ensemble_.connect(), faults);
  faults->on(test::OpKind::multi).lose_reply_after_apply();
  const auto lost_reply = guarded_write(flaky, grants, {op::Set{"/resource", "4"}});
  EXPECT_EQ(lost_reply.outcome, Outcome::unknown) << to_string(lost_reply.outcome);
  EXPECT_EQ(*ensemble_.data_now("/resource"), "4");  // applied after all
  faults->on(test::OpKind::multi).fail(Errc::connection_loss);
  const auto never_sent = guarded_write(flaky, grants, {op::Set{"/resource", "5"}});
  EXPECT_EQ(never_sent.outcome, Outcome::unknown) << to_string(never_sent.outcome);
  EXPECT_EQ(*ensemble_.data_now("/resource"), "4");

  c.keeper()->remove(grants[1].node_path());
  const auto node_gone = guarded_write(*c.keeper(), grants, {op::Set{"/resource", "6"}});
  EXPECT_EQ(node_gone.outcome, Outcome::lock_lost) << to_string(node_gone.outcome);
  EXPECT_EQ(*ensemble_.data_now("/resource"), "4");

  EXPECT_TRUE(both.release());
  const auto zxid = ensemble_.last_zxid();
  const auto released = guarded_write(*c.keeper(), grants, {op::Set{"/resource", "7"}});
  EXPECT_EQ(released.outcome, Outcome::lock_lost) << to_string(released.outcome);
  EXPECT_EQ(ensemble_.last_zxid(), zxid);  // nothing sent
  EXPECT_EQ(*ensemble_.data_now("/resource"), "4");
}

// Ops that would undo the guard or block a queue are refused before anything
// is sent: the message names the op and its path, and the tree is unchanged.
TEST_F(MultiLockTest, GuardedWriteRefusesOpsOnTheLocksOwnNodes) {
  auto& c = client();
  c.keeper()->create("/resource", "0");
  c.keeper()->create("/elsewhere");
  MultiLock both(c, {"/l/a", "/l/b"});
  ASSERT_TRUE(both.try_acquire());
  const auto grants = both.grants();
  const std::string node = grants[1].node_path();  // under /l/b
  const std::string sequential_lock_name = "/elsewhere/x-lock-";
  const std::vector<std::pair<Op, std::string>> refused = {
      {op::Remove{node}, "remove of " + node},
      {op::Set{node, "mine"}, "set of " + node},
      {op::Check{node}, "check of " + node},
      {op::Remove{"/l/b"}, "remove of /l/b"},
      {op::Set{"/l/a", "x"}, "set of /l/a"},
      {op::Check{"/l/a"}, "check of /l/a"},
      {op::Create{"/l/a/mine"}, "create of /l/a/mine"},
      {op::Create{"/l/b"}, "create of /l/b"},
      // Lock-named anywhere: as it is, or once the server appends a sequence.
      {op::Create{"/elsewhere/_c_x-lock-0000000001"}, "create of /elsewhere/_c_x-lock-0000000001"},
      {op::Create{sequential_lock_name, "", CreateMode::ephemeral_sequential},
       "create of " + sequential_lock_name},
      // A read/write lock's nodes and a semaphore's lease join a queue or a bound too.
      {op::Create{"/elsewhere/_c_x-__WRIT__0000000001"},
       "create of /elsewhere/_c_x-__WRIT__0000000001"},
      {op::Create{"/elsewhere/x-__READ__", "", CreateMode::ephemeral_sequential},
       "create of /elsewhere/x-__READ__"},
      {op::Create{"/elsewhere/leases/_c_x-lease-", "", CreateMode::ephemeral_sequential},
       "create of /elsewhere/leases/_c_x-lease-"},
  };
  const auto zxid = ensemble_.last_zxid();
  for (const auto& [o, named] : refused) {
    try {
      (void)guarded_write(*c.keeper(), grants, {op::Set{"/resource", "1"}, o});
      ADD_FAILURE() << "accepted the " << named;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  }
  // The single-grant form refuses the same way.
  EXPECT_THROW((void)guarded_write(*c.keeper(), grants[0], {op::Remove{grants[0].node_path()}}),
               std::invalid_argument);
  EXPECT_THROW((void)guarded_write(*c.keeper(), grants[0], {op::Create{"/l/a/x"}}),
               std::invalid_argument);
  EXPECT_EQ(ensemble_.last_zxid(), zxid);  // nothing was sent
  EXPECT_EQ(*ensemble_.data_now("/resource"), "0");
  EXPECT_TRUE(ensemble_.exists_now(node));
  // Ordinary writes next to the locks still go through, sequential ones included.
  EXPECT_TRUE(guarded_write(*c.keeper(), grants,
                            {op::Set{"/resource", "1"}, op::Create{"/l/c"},
                             op::Create{"/elsewhere/job-", "", CreateMode::persistent_sequential}})
                  .ok());
  both.release();
}

// Rounds were capped at 16: a set whose session ended 16 times threw
// session_expired although its deadline allowed more.
TEST_F(MultiLockTest, RoundsLostToSessionEndsGoOnUntilTheDeadline) {
  auto faults = std::make_shared<test::Faults>();
  ClientOptions options;
  options.connect_string = "127.0.0.1:2181";
  options.keeper_factory = test::with_faults(ensemble_.factory(), faults);
  options.retry_policy = std::make_shared<RetryNTimes>(100, 1ms);  // past the old cap of 16
  std::mutex log_mutex;  // the log counts the rounds the set lost
  std::string log;
  options.logging.level = LogLevel::info;
  options.logging.handler = [&](LogLevel, std::string_view line) {
    const std::lock_guard lock(log_mutex);
    log.append(line).append("\n");
  };
  Client mine(options);
  ASSERT_TRUE(mine.block_until_connected(5s));
  constexpr int kSessionsLost = 20;
  // Each round, the set's first create for /l/b finds its session ended (and
  // it is: the hook ends it), so /l/b is granted in the next session while
  // /l/a's node went with the old one: the round is lost. The create after
  // that goes through.
  std::vector<test::FaultRule*> ends;
  for (int i = 0; i < kSessionsLost; ++i) {
    ends.push_back(
        &faults->on(test::OpKind::create, "/l/b/").fail(Errc::session_expired).after([&](auto&) {
          ensemble_.expire(mine.keeper()->session_id());
        }));
    faults->on(test::OpKind::create, "/l/b/").after([](auto&) {});
  }
  MultiLock both(mine, {"/l/a", "/l/b"});
  ASSERT_TRUE(both.try_acquire_for(10s));
  for (auto* end : ends) EXPECT_EQ(end->fired(), 1);
  const std::string text = [&] {
    const std::lock_guard lock(log_mutex);
    return log;
  }();
  int lost_rounds = 0;
  for (auto at = text.find("starting over"); at != std::string::npos;
       at = text.find("starting over", at + 1))
    ++lost_rounds;
  EXPECT_GT(lost_rounds, 16) << "the old cap was not reached";
  for (const auto& grant : both.grants()) EXPECT_TRUE(grant.held());
  both.release();
  EXPECT_TRUE(test::wait_children(
      *ensemble_.connect(), "/l/a", [](const auto& n) { return n.empty(); }, 5s));
}

TEST_F(MultiLockTest, RefusesAnEmptyList) {
  EXPECT_THROW(MultiLock(client(), {}), std::invalid_argument);
}

}  // namespace
}  // namespace zkr
