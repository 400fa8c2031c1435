// PersistentNode on the in-memory ensemble: created with its data and parents,
// made again after a delete and after a session's end, never someone else's
// node taken over, kept across a reconnect without a write, new data set,
// and close() deleting only what is provably ours.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "lock_fixture.hpp"
#include "zkr/persistent_node.hpp"

namespace zkr {
namespace {

const std::string kNode = "/services/search/host-7";

// The states a node reported through on_state, to wait on.
class StateLog {
 public:
  void operator()(PersistentNodeState s) {
    std::lock_guard lock(mutex_);
    states_.push_back(s);
    changed_.notify_all();
  }
  bool wait_for(PersistentNodeState s) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(
        lock, kWait, [&] { return std::find(states_.begin(), states_.end(), s) != states_.end(); });
  }
  std::vector<PersistentNodeState> states() {
    std::lock_guard lock(mutex_);
    return states_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<PersistentNodeState> states_;
};

class PersistentNodeTest : public LockUnitTest<InterProcessMutex> {
 protected:
  std::unique_ptr<PersistentNode> node(Contender& c, std::string data,
                                       PersistentNodeOptions options = {}) {
    auto log = std::make_shared<StateLog>();
    logs_.push_back(log);
    options.on_state = [log](PersistentNodeState s) { (*log)(s); };
    return std::make_unique<PersistentNode>(*c.client, kNode, std::move(data), options);
  }
  // The state log of the node made last.
  StateLog& log() { return *logs_.back(); }
  // Waits until the servers hold a node at kNode for which `pred(stat, data)`.
  template <class Pred>
  bool wait_node(Pred pred) {
    return test::wait_node(
        raw(), kNode, [&](const std::optional<NodeData>& n) { return n && pred(n->stat, n->data); },
        kWait);
  }
  bool wait_gone() { return test::wait_gone(raw(), kNode, kWait); }

  std::vector<std::shared_ptr<StateLog>> logs_;
};

TEST_F(PersistentNodeTest, CreatesItsNodeWithItsDataAndMakesItAgainWhenDeleted) {
  auto& a = contender();
  auto alive = node(a, "10.0.0.7:8080");
  EXPECT_EQ(alive->state(), PersistentNodeState::absent);
  alive->start();
  ASSERT_TRUE(alive->wait_until_present(kWait));
  const auto first = ensemble_.exists_now(kNode);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->ephemeral_owner, session_of(a));
  EXPECT_EQ(ensemble_.data_now(kNode), "10.0.0.7:8080");

  raw().remove(kNode);  // someone deletes it: it comes back, with its data
  ASSERT_TRUE(wait_node([&](const Stat& s, const std::string& data) {
    return s.czxid != first->czxid && data == "10.0.0.7:8080";
  }));
  EXPECT_EQ(ensemble_.exists_now(kNode)->ephemeral_owner, session_of(a));

  alive->set_data("10.0.0.7:9090");
  ASSERT_TRUE(
      wait_node([](const Stat&, const std::string& data) { return data == "10.0.0.7:9090"; }));
  alive->close();
  EXPECT_EQ(alive->state(), PersistentNodeState::closed);
  EXPECT_FALSE(ensemble_.exists_now(kNode));  // ours: deleted, before close() returned
  EXPECT_TRUE(no_ephemerals_of(a));
  ASSERT_TRUE(log().wait_for(PersistentNodeState::closed));
  EXPECT_EQ(log().states().front(), PersistentNodeState::present);
}

TEST_F(PersistentNodeTest, MadeAgainInTheNextSessionWhenOursEnds) {
  auto& a = contender();
  auto alive = node(a, "x");
  alive->start();
  ASSERT_TRUE(alive->wait_until_present(kWait));
  const auto old_session = session_of(a);
  ensemble_.expire(old_session);
  ASSERT_TRUE(wait_node([&](const Stat& s, const std::string& data) {
    return s.ephemeral_owner != old_session && data == "x";
  }));
  EXPECT_EQ(ensemble_.exists_now(kNode)->ephemeral_owner, session_of(a));
  EXPECT_TRUE(alive->wait_until_present(kWait));
}

TEST_F(PersistentNodeTest, AReconnectKeepsTheNodeWithoutAWrite) {
  auto& a = contender();
  auto alive = node(a, "x");
  alive->start();
  ASSERT_TRUE(alive->wait_until_present(kWait));
  const auto zxid = ensemble_.last_zxid();
  const auto czxid = ensemble_.exists_now(kNode)->czxid;
  ensemble_.disconnect(session_of(a));
  ensemble_.reconnect(session_of(a));
  ASSERT_TRUE(a.client->block_until_connected(kWait));
  ASSERT_TRUE(alive->wait_until_present(kWait));
  EXPECT_EQ(ensemble_.exists_now(kNode)->czxid, czxid);
  EXPECT_EQ(ensemble_.last_zxid(), zxid);
}

TEST_F(PersistentNodeTest, AnotherSessionsNodeIsRefusedNotTakenAndOursComesWhenItGoes) {
  auto& other = contender();
  other.client->keeper()->create_parents(kNode, CreateMode::persistent);
  other.client->keeper()->create(kNode, "theirs", CreateMode::ephemeral);
  auto& a = contender();
  auto alive = node(a, "ours");
  alive->start();
  ASSERT_TRUE(log().wait_for(PersistentNodeState::refused));
  const auto why = alive->refusal().value_or("");
  EXPECT_NE(why.find(kNode), std::string::npos) << why;
  EXPECT_NE(why.find("held by session"), std::string::npos) << why;
  EXPECT_EQ(ensemble_.data_now(kNode), "theirs");
  EXPECT_EQ(ensemble_.exists_now(kNode)->ephemeral_owner, session_of(other));

  alive->close();  // not ours: left alone
  EXPECT_EQ(ensemble_.data_now(kNode), "theirs");

  auto waiting = node(a, "ours");
  waiting->start();
  ASSERT_TRUE(log().wait_for(PersistentNodeState::refused));
  other.client->keeper()->remove(kNode);  // theirs goes: ours comes
  ASSERT_TRUE(waiting->wait_until_present(kWait));
  EXPECT_EQ(ensemble_.exists_now(kNode)->ephemeral_owner, session_of(a));
  EXPECT_FALSE(waiting->refusal());
}

TEST_F(PersistentNodeTest, APersistentNodeIsAdoptedWithOurDataButDeletedOnlyIfWeMadeIt) {
  auto& a = contender();
  raw().create_parents(kNode, CreateMode::persistent);
  raw().create(kNode, "before", CreateMode::persistent);
  PersistentNodeOptions persistent;
  persistent.mode = CreateMode::persistent;
  {
    // An ephemeral PersistentNode cannot take a persistent node's place.
    auto ephemeral = node(a, "e");
    ephemeral->start();
    ASSERT_TRUE(log().wait_for(PersistentNodeState::refused));
    EXPECT_NE(ephemeral->refusal().value_or("").find("persistent node we did not make"),
              std::string::npos);
  }
  auto adopted = node(a, "after", persistent);
  adopted->start();
  ASSERT_TRUE(adopted->wait_until_present(kWait));
  EXPECT_EQ(ensemble_.data_now(kNode), "after");
  adopted->close();
  EXPECT_EQ(ensemble_.data_now(kNode), "after");  // not made by us: kept

  raw().remove(kNode);
  auto made = node(a, "made", persistent);
  made->start();
  ASSERT_TRUE(made->wait_until_present(kWait));
  EXPECT_EQ(ensemble_.exists_now(kNode)->ephemeral_owner, 0);
  made->close();
  EXPECT_FALSE(ensemble_.exists_now(kNode));  // made by us: deleted
}

TEST_F(PersistentNodeTest, MisuseIsRefused) {
  auto& a = contender();
  EXPECT_THROW(PersistentNode(*a.client, "no-slash", "x"), std::invalid_argument);
  EXPECT_THROW(PersistentNode(*a.client, "/", "x"), std::invalid_argument);
  PersistentNodeOptions sequential;
  sequential.mode = CreateMode::ephemeral_sequential;
  EXPECT_THROW(PersistentNode(*a.client, kNode, "x", sequential), std::invalid_argument);
  PersistentNode twice(*a.client, kNode, "x");
  twice.start();
  EXPECT_THROW(twice.start(), std::logic_error);
  twice.close();
  EXPECT_THROW(twice.start(), std::logic_error);
  EXPECT_TRUE(wait_gone());
}

}  // namespace
}  // namespace zkr
