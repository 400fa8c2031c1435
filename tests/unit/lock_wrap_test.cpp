// A lock directory whose sequence counter passes 2^31-1: ZooKeeper names the
// next node "-2147483648", which Curator's text order (and the library's, on
// e527dab) put before the holder. Now no contender queues past the wrap:
// it refuses (sequence_wrapped), its node deleted, the holder undisturbed.
#include <gtest/gtest.h>

#include <limits>

#include "lock_fixture.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;

TYPED_TEST_SUITE(LockUnitTest, LockTypes);

// The directory stays until the test removes it: its counter is the subject.
LockOptions kept() {
  LockOptions options;
  options.remove_directory_on_release = false;
  return options;
}

TYPED_TEST(LockUnitTest, NoContenderIsGrantedPastTheCounterWrapWhileTheHolderHolds) {
  auto& first = this->contender();
  auto held = this->lock_for(first, kept());
  // The directory, made by a lock, then its counter set so that the holder
  // gets the last non-negative sequence.
  ASSERT_TRUE(held->try_acquire());
  held->release();
  ASSERT_TRUE(this->ensemble_.wait_idle());
  ASSERT_TRUE(this->ensemble_.set_cversion(kDir, std::numeric_limits<std::int32_t>::max()));
  ASSERT_TRUE(held->try_acquire());
  ASSERT_EQ(this->lock_nodes().size(), 1u);
  ASSERT_TRUE(this->lock_nodes()[0].ends_with("-lock-2147483647")) << this->lock_nodes()[0];

  auto& second = this->contender();
  auto behind = this->lock_for(second, kept());
  bool granted = false;
  try {
    granted = behind->try_acquire_for(200ms);
    if (granted) behind->release();
    FAIL() << "a contender past the wrap was " << (granted ? "granted" : "left waiting");
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::sequence_wrapped) << e.what();
    EXPECT_NE(std::string(e.what()).find("-2147483648"), std::string::npos) << e.what();
  }
  // Its node is gone, the holder's stays and still holds.
  ASSERT_TRUE(this->ensemble_.wait_idle());
  EXPECT_TRUE(this->no_ephemerals_of(second));
  ASSERT_EQ(this->lock_nodes().size(), 1u);
  EXPECT_TRUE(this->lock_nodes()[0].ends_with("-lock-2147483647"));
  EXPECT_TRUE(held->grant().held());
  held->release();
}

// The server's container sweep never takes a container whose cversion is
// negative (it wants cversion > 0, as the fake does): after the wrap only a
// removal by a lock resets the counter, and the refusal leaves the
// directory to it.
TYPED_TEST(LockUnitTest, TheLockRemovesTheWrappedDirectoryAndThePathServesAgain) {
  auto& c = this->contender();
  {
    auto setup = this->lock_for(c, kept());
    ASSERT_TRUE(setup->try_acquire());
    setup->release();
    ASSERT_TRUE(this->ensemble_.wait_idle());
  }
  ASSERT_TRUE(this->ensemble_.set_cversion(kDir, std::numeric_limits<std::int32_t>::min()));
  // The server's sweep would not take it. Asked before the refused acquire
  // below: after it the lock's own removal (no grace) races the sweep, and
  // once it has gone the sweep may take its emptied parent.
  EXPECT_EQ(this->ensemble_.reap_containers(), 0u);
  LockOptions eager;
  eager.directory_grace = 0ms;
  auto lock = this->lock_for(c, eager);
  try {
    (void)lock->try_acquire();
    FAIL() << "queued past the wrap";
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::sequence_wrapped) << e.what();
  }
  ASSERT_TRUE(test::wait_gone(this->raw(), kDir, kWait));
  ASSERT_TRUE(lock->try_acquire_for(kWait));
  ASSERT_EQ(this->lock_nodes().size(), 1u);
  EXPECT_TRUE(this->lock_nodes()[0].ends_with("-lock-0000000000")) << this->lock_nodes()[0];
  lock->release();
}

}  // namespace
}  // namespace zkr
