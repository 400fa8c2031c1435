// A release, and the background remover after it, delete a lock node only
// once a read shows it ours: owned by our session and created by our create
// (its czxid). On e527dab both deleted by path: a foreign client that
// deleted our node and made a persistent one of its name lost it to us.
#include <gtest/gtest.h>

#include <memory>

#include "lock_fixture.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using test::Latch;
using test::OpKind;

TYPED_TEST_SUITE(LockUnitTest, LockTypes);

// Opens a latch when c reads or deletes `node` (the first of either), so
// the test knows the delete was due without sleeping.
std::shared_ptr<Latch> on_read_or_delete(Contender& c, const std::string& node) {
  auto latch = std::make_shared<Latch>();
  c.faults->on(OpKind::exists, node).after([latch](const test::FaultCall&) { latch->open(); });
  c.faults->on(OpKind::remove, node).after([latch](const test::FaultCall&) { latch->open(); });
  return latch;
}

// A foreign client deletes our node and makes a persistent one of its name.
void replace_with_foreign_node(Keeper& foreign, const std::string& node) {
  foreign.remove(node);
  (void)foreign.create(node, "foreign");
}

TYPED_TEST(LockUnitTest, AReleaseLeavesANodeOfItsNameThatIsNotOurs) {
  auto& holder = this->contender();
  // The grant's own-node watch is lost (its reply lost, its events held), so
  // nothing tells the grant that its node was replaced.
  holder.faults->on(OpKind::get, kDir + "/").lose_reply_after_apply().hold_watch();
  auto lock = this->lock_for(holder);
  ASSERT_TRUE(lock->try_acquire());
  ASSERT_TRUE(this->ensemble_.wait_idle());
  // The grant has heard its read's reply (the lost one) before the release:
  // the case is a release that knows its node is unwatched. (One sent before
  // that reply comes, on the create's word, is the window no read closes:
  // owned_delete.hpp.)
  const auto keeper = std::dynamic_pointer_cast<test::FaultKeeper>(holder.client->keeper());
  ASSERT_TRUE(keeper);
  keeper->flush();
  ASSERT_EQ(this->lock_nodes().size(), 1u);
  const std::string node = kDir + "/" + this->lock_nodes()[0];
  replace_with_foreign_node(this->raw(), node);
  const auto looked = on_read_or_delete(holder, node);
  lock->release();
  ASSERT_TRUE(looked->wait(kWait));
  ASSERT_TRUE(this->ensemble_.wait_idle());
  const auto stat = this->ensemble_.exists_now(node);
  ASSERT_TRUE(stat) << "the release deleted a node that was not ours";
  EXPECT_EQ(stat->ephemeral_owner, 0);
  EXPECT_EQ(this->ensemble_.data_now(node), "foreign");
}

TYPED_TEST(LockUnitTest, TheBackgroundRemoverLeavesANodeOfItsNameThatIsNotOurs) {
  auto& holder = this->contender();
  auto suspended = std::make_shared<Latch>();  // the listener may outlive the test body
  holder.client->add_listener([suspended](ConnectionState s) {
    if (s == ConnectionState::suspended) suspended->open();
  });
  auto lock = this->lock_for(holder);
  ASSERT_TRUE(lock->try_acquire());
  ASSERT_TRUE(this->ensemble_.wait_idle());
  ASSERT_EQ(this->lock_nodes().size(), 1u);
  const std::string node = kDir + "/" + this->lock_nodes()[0];
  const auto id = this->session_of(holder);
  this->ensemble_.disconnect(id);
  ASSERT_TRUE(suspended->wait(kWait));
  lock->release();  // no link: the delete goes to the background remover
  replace_with_foreign_node(this->raw(), node);
  const auto looked = on_read_or_delete(holder, node);
  this->ensemble_.reconnect(id);
  ASSERT_TRUE(looked->wait(kWait));
  ASSERT_TRUE(this->ensemble_.wait_idle());
  const auto stat = this->ensemble_.exists_now(node);
  ASSERT_TRUE(stat) << "the background remover deleted a node that was not ours";
  EXPECT_EQ(stat->ephemeral_owner, 0);
  EXPECT_EQ(this->ensemble_.data_now(node), "foreign");
}

// Ours, though written into by someone (a Curator revoker, say): the release
// deletes it, with the version it read.
TYPED_TEST(LockUnitTest, AReleaseDeletesItsOwnNodeWrittenIntoBySomeone) {
  auto& holder = this->contender();
  auto lock = this->lock_for(holder);
  ASSERT_TRUE(lock->try_acquire());
  ASSERT_TRUE(this->ensemble_.wait_idle());
  const std::string node = kDir + "/" + this->lock_nodes().at(0);
  (void)this->raw().set(node, "__REVOKE__");
  (void)this->raw().set(node, "again");
  lock->release();
  EXPECT_TRUE(test::wait_gone(this->raw(), node, kWait));
  EXPECT_TRUE(this->next_is_granted_at_once());
}

}  // namespace
}  // namespace zkr
