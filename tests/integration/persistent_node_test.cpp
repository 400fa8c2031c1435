// PersistentNode on the live three-server ensemble: made again in the next
// session after ours expires, another session's node refused and ours made
// once it goes, and close() deleting ours.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "support/ensemble.hpp"
#include "support/waits.hpp"
#include "zkr/persistent_node.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;

using test::kWait;

class PersistentNodeIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (test::connect_string().empty()) GTEST_SKIP() << "no ensemble: run scripts/test";
    dir_ = test::unique_path("persistent");
    path_ = dir_ + "/member";
  }

  void TearDown() override {
    if (!clients_.empty()) {
      auto& keeper = *clients_.front()->keeper();
      EXPECT_TRUE(test::wait_gone(keeper, path_, kWait)) << "left behind: " << path_;
      (void)keeper.try_remove(dir_);
    }
    clients_.clear();
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

  // Waits until the servers hold a node at path_ owned by `owner`.
  bool wait_owned_by(Keeper& keeper, std::int64_t owner) {
    return test::wait_node(
        keeper, path_,
        [owner](const std::optional<NodeData>& n) { return n && n->stat.ephemeral_owner == owner; },
        kWait);
  }

  std::string dir_, path_;
  std::vector<std::unique_ptr<Client>> clients_;
};

TEST_F(PersistentNodeIntegrationTest, MadeAgainInTheNextSessionAfterOursExpires) {
  auto& watcher = client();
  auto& a = client();
  PersistentNode member(a, path_, "10.0.0.7:8080");
  member.start();
  ASSERT_TRUE(member.wait_until_present(kWait));
  const auto old_session = a.keeper()->session_id();
  ASSERT_TRUE(wait_owned_by(*watcher.keeper(), old_session));
  test::expire_session(*a.keeper());
  // Made again by a's next session (a hears of the expiry in its own time).
  ASSERT_TRUE(test::wait_node(
      *watcher.keeper(), path_,
      [old_session](const std::optional<NodeData>& n) {
        return n && n->stat.ephemeral_owner != 0 && n->stat.ephemeral_owner != old_session;
      },
      kWait));
  EXPECT_EQ(watcher.keeper()->exists(path_)->ephemeral_owner, a.keeper()->session_id());
  EXPECT_EQ(watcher.keeper()->get(path_).data, "10.0.0.7:8080");
  member.close();
  // Ours: deleted before close() returned (through a's server: the watcher's
  // may not have applied it yet, hence the sync).
  watcher.keeper()->sync(path_);
  EXPECT_FALSE(watcher.keeper()->exists(path_));
}

TEST_F(PersistentNodeIntegrationTest, AnotherSessionsNodeIsRefusedAndOursComesWhenItGoes) {
  auto& other = client();
  other.keeper()->create_parents(path_);
  other.keeper()->create(path_, "theirs", CreateMode::ephemeral);
  auto& a = client();
  test::Latch refused;
  PersistentNodeOptions options;
  options.on_state = [&refused](PersistentNodeState s) {
    if (s == PersistentNodeState::refused) refused.open();
  };
  PersistentNode member(a, path_, "ours", options);
  member.start();
  ASSERT_TRUE(refused.wait(kWait));  // no overwrite, no delete
  EXPECT_EQ(member.state(), PersistentNodeState::refused);
  EXPECT_EQ(other.keeper()->get(path_).data, "theirs");
  other.keeper()->remove(path_);
  ASSERT_TRUE(member.wait_until_present(kWait));
  ASSERT_TRUE(wait_owned_by(*other.keeper(), a.keeper()->session_id()));
  EXPECT_EQ(other.keeper()->get(path_).data, "ours");
  member.close();
}

}  // namespace
}  // namespace zkr
