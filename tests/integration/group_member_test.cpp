// GroupMember on the live three-server ensemble: members on sessions of
// their own join, change their data and leave, and every member's view
// converges to the servers' tree (read afresh: getChildren, then getData of
// each); one member's session expires, the others are told it was removed
// (by czxid, however soon it comes back), and it registers again.
#include <gtest/gtest.h>

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "support/ensemble.hpp"
#include "support/waits.hpp"
#include "zkr/group_member.hpp"
#include "zkr/path.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;

using test::kWait;
using Members = std::map<std::string, std::string>;

// The events every member was told, and a wait on them.
class Told {
 public:
  void operator()(std::size_t member, const ChildEvent& e) {
    {
      std::lock_guard lock(mutex_);
      events_[member].push_back(e);
    }
    changed_.notify_all();
  }
  bool wait(const std::function<bool()>& pred) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kWait, [&] { return pred(); });
  }
  // Whether `member` was told of `type` for `id`, with a node of that czxid
  // (0: any). Only inside wait()'s predicate: mutex_ held.
  bool was_told(std::size_t member, ChildEventType type, const std::string& id,
                std::int64_t czxid) const {
    const auto found = events_.find(member);
    if (found == events_.end()) return false;
    for (const auto& e : found->second)
      if (e.type == type && e.name == id && (czxid == 0 || e.node.stat.czxid == czxid)) return true;
    return false;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::size_t, std::vector<ChildEvent>> events_;
};

class GroupMemberIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (test::connect_string().empty()) GTEST_SKIP() << "no ensemble: run scripts/test";
    group_ = test::unique_path("group") + "/members";
    reader_ = make_client();
  }

  void TearDown() override {
    members_.clear();
    if (reader_) {
      auto& keeper = *reader_->keeper();
      EXPECT_TRUE(test::wait_children(
          keeper, group_, [](const auto& names) { return names.empty(); }, kWait))
          << "members left behind in " << group_;
      (void)keeper.try_remove(group_);
      (void)keeper.try_remove(std::string(parent_path(group_)));
    }
    members_.clear();
    clients_.clear();
  }

  std::unique_ptr<Client> make_client() {
    ClientOptions options;
    options.connect_string = test::connect_string();
    options.session_timeout = 6s;
    options.retry_policy = std::make_shared<ExponentialBackoffRetry>(50ms, 10, 1s);
    auto c = std::make_unique<Client>(options);
    EXPECT_TRUE(c->block_until_connected(kWait));
    return c;
  }

  GroupMember& join(const std::string& id, const std::string& data) {
    clients_.push_back(make_client());
    const std::size_t index = members_.size();
    GroupMemberOptions options;
    options.on_change = [told = told_, index](const ChildEvent& e) { (*told)(index, e); };
    members_.push_back(std::make_unique<GroupMember>(*clients_.back(), group_, id, data, options));
    members_.back()->start();
    return *members_.back();
  }

  // The group as the servers hold it, read afresh on a session that watches nothing.
  Members servers_tree() {
    Members tree;
    auto& keeper = *reader_->keeper();
    keeper.sync(group_);
    auto listed = keeper.try_children(group_);
    if (listed.error() == Errc::no_node) return tree;
    for (const auto& id : listed.value().names) {
      auto got = keeper.try_get(join_path(group_, id));
      if (got.ok()) tree.emplace(id, got.value().data);
    }
    return tree;
  }

  // Every member still in the group sees exactly the servers' tree.
  ::testing::AssertionResult all_converge() {
    const auto tree = servers_tree();
    for (std::size_t i = 0; i < members_.size(); ++i) {
      if (!members_[i] || members_[i]->state() == PersistentNodeState::closed) continue;
      if (!told_->wait([&] { return members_[i]->current_members() == tree; }))
        return ::testing::AssertionFailure() << "member " << members_[i]->id() << " sees "
                                             << describe(members_[i]->current_members())
                                             << ", the servers hold " << describe(tree);
    }
    return ::testing::AssertionSuccess();
  }

  static std::string describe(const Members& m) {
    std::string out = "{";
    for (const auto& [id, data] : m) out += " " + id + "=" + data;
    return out + " }";
  }

  std::string group_;
  std::unique_ptr<Client> reader_;
  std::shared_ptr<Told> told_ = std::make_shared<Told>();
  std::vector<std::unique_ptr<Client>> clients_;
  std::vector<std::unique_ptr<GroupMember>> members_;  // before clients_ in destruction
};

TEST_F(GroupMemberIntegrationTest, MembersJoinChangeAndLeaveAndEveryViewConverges) {
  constexpr int kMembers = 5;
  for (int i = 0; i < kMembers; ++i)
    join("host-" + std::to_string(i), "10.0.0." + std::to_string(i));
  for (auto& m : members_) ASSERT_TRUE(m->wait_until_registered(kWait)) << m->id();
  ASSERT_EQ(servers_tree().size(), static_cast<std::size_t>(kMembers));
  ASSERT_TRUE(all_converge());

  members_[1]->set_this_data("moved");
  members_[3]->close();
  join("host-late", "late");
  ASSERT_TRUE(members_.back()->wait_until_registered(kWait));
  ASSERT_TRUE(test::wait_node(
      *reader_->keeper(), join_path(group_, "host-1"),
      [](const std::optional<NodeData>& n) { return n && n->data == "moved"; }, kWait));
  const auto tree = servers_tree();
  EXPECT_EQ(tree.count("host-3"), 0u);
  EXPECT_EQ(tree.at("host-1"), "moved");
  EXPECT_EQ(tree.at("host-late"), "late");
  ASSERT_TRUE(all_converge());
  for (auto& m : members_) m->close();
}

TEST_F(GroupMemberIntegrationTest, AnExpiredMemberIsRemovedFromTheOthersViewsAndRegistersAgain) {
  auto& a = join("host-a", "a");
  auto& b = join("host-b", "b");
  auto& c = join("host-c", "c");
  for (auto* m : {&a, &b, &c}) ASSERT_TRUE(m->wait_until_registered(kWait));
  ASSERT_TRUE(all_converge());
  const auto node = join_path(group_, "host-a");
  const auto old = reader_->keeper()->exists(node);
  ASSERT_TRUE(old);
  test::expire_session(*clients_[0]->keeper());
  // a's next session makes it again: a new node, a new czxid.
  ASSERT_TRUE(test::wait_node(
      *reader_->keeper(), node,
      [&](const std::optional<NodeData>& n) {
        return n && n->stat.czxid != old->czxid && n->stat.ephemeral_owner != old->ephemeral_owner;
      },
      kWait));
  const auto made_again = reader_->keeper()->exists(node);
  ASSERT_TRUE(made_again);
  // b and c were told the old node went, and the new one came.
  for (std::size_t watcher : {1u, 2u}) {
    EXPECT_TRUE(told_->wait([&] {
      return told_->was_told(watcher, ChildEventType::removed, "host-a", old->czxid) &&
             told_->was_told(watcher, ChildEventType::added, "host-a", made_again->czxid);
    })) << "member "
        << watcher;
  }
  ASSERT_TRUE(a.wait_until_registered(kWait));
  ASSERT_TRUE(all_converge());
  for (auto& m : members_) m->close();
}

}  // namespace
}  // namespace zkr
