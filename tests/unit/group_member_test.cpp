// GroupMember on the in-memory ensemble: Curator's layout (ephemeral
// <group>/<id>, data = payload), members seeing one another join, change and
// leave, an id held by another live session refused and never adopted, a
// member made again after its session ends, and ids checked.
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "lock_fixture.hpp"
#include "zkr/group_member.hpp"

namespace zkr {
namespace {

const std::string kGroup = "/services/search";
using Members = std::map<std::string, std::string>;

// Wakes whoever waits on a member's view at each of its changes.
class Changes {
 public:
  void operator()() {
    { std::lock_guard lock(mutex_); }
    changed_.notify_all();
  }
  bool wait(const std::function<bool()>& pred) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kWait, [&] { return pred(); });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
};

class GroupMemberTest : public LockUnitTest<InterProcessMutex> {
 protected:
  std::unique_ptr<GroupMember> member(Contender& c, std::string id, std::string data) {
    GroupMemberOptions options;
    options.on_change = [ch = changes_](const ChildEvent&) { (*ch)(); };
    options.on_state = [ch = changes_](PersistentNodeState) { (*ch)(); };
    return std::make_unique<GroupMember>(*c.client, kGroup, std::move(id), std::move(data),
                                         options);
  }
  bool sees(const GroupMember& m, const Members& expected) {
    return changes_->wait([&] { return m.current_members() == expected; });
  }

  std::shared_ptr<Changes> changes_ = std::make_shared<Changes>();
};

TEST_F(GroupMemberTest, MembersSeeEachOtherJoinChangeAndLeaveOnCuratorsLayout) {
  auto& a = contender();
  auto& b = contender();
  auto first = member(a, "host-1", "10.0.0.1:80");
  auto second = member(b, "host-2", "10.0.0.2:80");
  first->start();
  second->start();
  ASSERT_TRUE(first->wait_until_registered(kWait));
  ASSERT_TRUE(second->wait_until_registered(kWait));
  // The layout: an ephemeral node per member, named by its id, its payload as data.
  const auto node = ensemble_.exists_now(kGroup + "/host-1");
  ASSERT_TRUE(node);
  EXPECT_EQ(node->ephemeral_owner, session_of(a));
  EXPECT_EQ(ensemble_.data_now(kGroup + "/host-1"), "10.0.0.1:80");
  EXPECT_EQ(ensemble_.children_now(kGroup), (std::vector<std::string>{"host-1", "host-2"}));

  const Members both{{"host-1", "10.0.0.1:80"}, {"host-2", "10.0.0.2:80"}};
  EXPECT_TRUE(sees(*first, both));
  EXPECT_TRUE(sees(*second, both));

  second->set_this_data("10.0.0.2:90");
  const Members moved{{"host-1", "10.0.0.1:80"}, {"host-2", "10.0.0.2:90"}};
  EXPECT_EQ(second->current_members().at("host-2"), "10.0.0.2:90");  // ours at once
  EXPECT_TRUE(sees(*first, moved));
  EXPECT_EQ(ensemble_.data_now(kGroup + "/host-2"), "10.0.0.2:90");

  second->close();
  EXPECT_EQ(second->state(), PersistentNodeState::closed);
  EXPECT_FALSE(ensemble_.exists_now(kGroup + "/host-2"));
  EXPECT_TRUE(sees(*first, {{"host-1", "10.0.0.1:80"}}));
}

TEST_F(GroupMemberTest, AnIdHeldByAnotherLiveSessionIsRefusedNeverAdopted) {
  auto& other = contender();
  other.client->keeper()->create_parents(kGroup + "/host-1", CreateMode::persistent);
  other.client->keeper()->create(kGroup + "/host-1", "theirs", CreateMode::ephemeral);
  auto& a = contender();
  auto twin = member(a, "host-1", "ours");
  twin->start();
  ASSERT_TRUE(changes_->wait([&] { return twin->state() == PersistentNodeState::refused; }));
  const auto why = twin->refusal().value_or("");
  EXPECT_NE(why.find("held by session"), std::string::npos) << why;
  EXPECT_EQ(ensemble_.data_now(kGroup + "/host-1"), "theirs");
  EXPECT_EQ(ensemble_.exists_now(kGroup + "/host-1")->ephemeral_owner, session_of(other));
  // The list shows the holder's data, not ours: we are not that member.
  EXPECT_TRUE(sees(*twin, {{"host-1", "theirs"}}));

  other.client->keeper()->remove(kGroup + "/host-1");  // theirs goes: ours comes
  ASSERT_TRUE(twin->wait_until_registered(kWait));
  EXPECT_EQ(ensemble_.exists_now(kGroup + "/host-1")->ephemeral_owner, session_of(a));
  EXPECT_EQ(ensemble_.data_now(kGroup + "/host-1"), "ours");
  EXPECT_TRUE(sees(*twin, {{"host-1", "ours"}}));
}

TEST_F(GroupMemberTest, AMemberWhoseSessionEndsComesBackAndOthersSeeIt) {
  auto& a = contender();
  auto& b = contender();
  auto leaving = member(a, "host-1", "x");
  auto watching = member(b, "host-2", "y");
  leaving->start();
  watching->start();
  ASSERT_TRUE(leaving->wait_until_registered(kWait));
  const Members both{{"host-1", "x"}, {"host-2", "y"}};
  ASSERT_TRUE(sees(*watching, both));
  const auto old_session = session_of(a);
  const auto old_czxid = ensemble_.exists_now(kGroup + "/host-1")->czxid;
  ensemble_.expire(old_session);
  ASSERT_TRUE(test::wait_node(
      raw(), kGroup + "/host-1",
      [&](const std::optional<NodeData>& n) {
        return n && n->stat.ephemeral_owner != old_session && n->stat.czxid != old_czxid;
      },
      kWait));
  EXPECT_TRUE(sees(*watching, both));
  EXPECT_TRUE(sees(*leaving, both));
}

TEST_F(GroupMemberTest, ARegistrationIsLostWhenItsNodeGoesAndTheNextIsANewOne) {
  auto& a = contender();
  auto m = member(a, "host-1", "x");
  EXPECT_FALSE(m->registration());  // not started: not registered
  m->start();
  ASSERT_TRUE(m->wait_until_registered(kWait));
  const auto first = m->registration();
  ASSERT_TRUE(first);
  const auto node = kGroup + "/host-1";
  EXPECT_EQ(first->node_path(), node);
  EXPECT_EQ(first->fencing_token(), ensemble_.exists_now(node)->czxid);
  EXPECT_TRUE(first->held());
  test::Latch lost;
  first->on_lost([&lost](LostReason) { lost.open(); });

  raw().remove(node);  // someone deletes it: this registration is over
  ASSERT_TRUE(lost.wait(kWait));
  EXPECT_EQ(first->lost_reason(), LostReason::node_deleted);
  ASSERT_TRUE(test::wait_node(
      raw(), node,
      [&](const std::optional<NodeData>& n) {
        return n && n->stat.czxid != first->fencing_token();
      },
      kWait));
  ASSERT_TRUE(m->wait_until_registered(kWait));
  const auto second = m->registration();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->fencing_token(), ensemble_.exists_now(node)->czxid);
  EXPECT_TRUE(second->held());
  m->close();  // leaving is no loss
  EXPECT_TRUE(second->released());
  EXPECT_FALSE(second->lost());
  EXPECT_FALSE(ensemble_.exists_now(node));
}

TEST_F(GroupMemberTest, IdsAreChecked) {
  auto& a = contender();
  const std::vector<std::string> bad_ids{"", "a/b", ".", "..", "a\nb", std::string("a\0b", 3)};
  for (const auto& bad : bad_ids) {
    EXPECT_THROW(GroupMember::validate_member_id(bad), std::invalid_argument) << bad;
    EXPECT_THROW(GroupMember(*a.client, kGroup, bad, "x"), std::invalid_argument) << bad;
  }
  EXPECT_NO_THROW(GroupMember::validate_member_id("host-7.example.com:8080"));
  EXPECT_THROW(GroupMember(*a.client, "/", "a", "x"), std::invalid_argument);
  EXPECT_THROW(GroupMember(*a.client, "relative", "a", "x"), std::invalid_argument);
  GroupMember twice(*a.client, kGroup, "a", "x");
  twice.start();
  EXPECT_THROW(twice.start(), std::logic_error);
  twice.close();
  EXPECT_THROW(twice.start(), std::logic_error);
}

}  // namespace
}  // namespace zkr
