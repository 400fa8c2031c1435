// The own-node watch after a lost reply: read again on the reconnect, and
// judged by its owner, not only by its existence.
#include <gtest/gtest.h>

#include <atomic>

#include "lock_fixture.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using test::Latch;
using test::OpKind;

TYPED_TEST_SUITE(LockUnitTest, LockTypes);

// The read sent with an immediate grant loses its reply to the link (so it
// set no watch); while the link is down, another client deletes our node and
// creates a persistent node of the same name. The read after the reconnect
// finds the node there, but not ours: the grant is lost. Before, nothing read
// it again, and had it, the name alone would have passed.
TYPED_TEST(LockUnitTest, ANodeOfOurNameOwnedByAnotherSessionIsNotOurs) {
  auto& a = this->contender();
  LockOptions options;
  options.suspended_policy = SuspendedPolicy::ignore;  // the link alone loses nothing
  auto lock = this->lock_for(a, options);
  std::atomic<int> suspended{0};
  Latch down;
  a.client->add_listener([&](ConnectionState s) {
    if (s == ConnectionState::suspended && ++suspended == 1) down.open();
  });
  auto& read = a.faults->on(OpKind::get, kDir + "/")
                   .lose_reply_after_apply()
                   .after([&](const test::FaultCall& call) {
                     const auto session = a.client->keeper()->session_id();
                     this->ensemble_.disconnect(session);
                     ASSERT_TRUE(down.wait(kWait));
                     this->raw().remove(call.path);
                     this->raw().create(call.path, "not yours");  // persistent, another owner
                     this->ensemble_.reconnect(session);
                   });
  ASSERT_TRUE(lock->try_acquire_for(kWait));
  const Grant grant = lock->grant();
  Latch lost;
  std::atomic<LostReason> why{LostReason::none};
  grant.on_lost([&](LostReason r) {
    why = r;
    lost.open();
  });
  ASSERT_TRUE(lost.wait(kWait)) << "the replaced node was taken for ours";
  EXPECT_EQ(read.fired(), 1);
  EXPECT_EQ(why, LostReason::node_deleted);
  lock->release();
  ASSERT_TRUE(this->ensemble_.wait_idle());
  // Not ours: the release leaves it alone.
  EXPECT_EQ(this->ensemble_.data_now(grant.node_path()), "not yours");
}

}  // namespace
}  // namespace zkr
