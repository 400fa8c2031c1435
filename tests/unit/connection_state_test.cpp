// The mapping from a session's events to the connection states listeners see.
#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include "connection_state_machine.hpp"

namespace zkr::detail {
namespace {

using S = SessionState;
using C = ConnectionState;

// Feeds events and collects what is announced.
struct Driver {
  explicit Driver(bool rule = true) : machine(rule) {}
  std::vector<C> announced;
  int new_sessions = 0;
  void apply(const Transition& t) {
    if (t.announce) announced.push_back(*t.announce);
    if (t.open_new_session) ++new_sessions;
  }
  Driver& operator<<(S s) {
    apply(machine.on_session(s));
    return *this;
  }
  void timer() { apply(machine.on_suspended_too_long()); }
  ConnectionStateMachine machine;
};

TEST(ConnectionStateMachine, NothingBeforeTheFirstConnection) {
  Driver d;
  d << S::connecting << S::connecting;
  EXPECT_TRUE(d.announced.empty());
  EXPECT_EQ(d.machine.current(), std::nullopt);
  EXPECT_FALSE(d.machine.is_connected());
  EXPECT_FALSE(d.machine.timer_wanted());
}

TEST(ConnectionStateMachine, FirstConnectionIsConnected) {
  Driver d;
  d << S::connecting << S::connected;
  EXPECT_EQ(d.announced, (std::vector<C>{C::connected}));
  EXPECT_TRUE(d.machine.is_connected());
  EXPECT_EQ(d.new_sessions, 0);
}

TEST(ConnectionStateMachine, LinkLostThenBackIsSuspendedThenReconnected) {
  Driver d;
  d << S::connected << S::connecting << S::connected;
  EXPECT_EQ(d.announced, (std::vector<C>{C::connected, C::suspended, C::reconnected}));
  EXPECT_EQ(d.new_sessions, 0);
}

TEST(ConnectionStateMachine, NoDuplicateAnnouncements) {
  Driver d;
  d << S::connected << S::connected << S::connecting << S::connecting << S::connecting
    << S::connected << S::connected << S::connecting << S::connected;
  EXPECT_EQ(d.announced, (std::vector<C>{C::connected, C::suspended, C::reconnected, C::suspended,
                                         C::reconnected}));
}

TEST(ConnectionStateMachine, ExpiredIsLostAndAsksForANewSession) {
  Driver d;
  d << S::connected << S::connecting << S::expired;
  EXPECT_EQ(d.announced, (std::vector<C>{C::connected, C::suspended, C::lost}));
  EXPECT_EQ(d.new_sessions, 1);
  EXPECT_FALSE(d.machine.is_connected());
  // The new session: connecting says nothing (still lost), connected is reconnected.
  d << S::connecting << S::connected;
  EXPECT_EQ(d.announced, (std::vector<C>{C::connected, C::suspended, C::lost, C::reconnected}));
  EXPECT_EQ(d.new_sessions, 1);
}

TEST(ConnectionStateMachine, ExpiredWhileConnectedIsLost) {
  // The C client may report expiry without a connecting event first.
  Driver d;
  d << S::connected << S::expired;
  EXPECT_EQ(d.announced, (std::vector<C>{C::connected, C::lost}));
  EXPECT_EQ(d.new_sessions, 1);
}

TEST(ConnectionStateMachine, ExpiredTwiceAnnouncesOnceButAlwaysAsksForANewSession) {
  Driver d;
  d << S::connected << S::expired << S::expired;
  EXPECT_EQ(d.announced, (std::vector<C>{C::connected, C::lost}));
  EXPECT_EQ(d.new_sessions, 2);
}

TEST(ConnectionStateMachine, SuspendedTooLongIsLostAndAsksForANewSession) {
  Driver d;
  d << S::connected << S::connecting;
  EXPECT_TRUE(d.machine.timer_wanted());
  d.timer();
  EXPECT_EQ(d.announced, (std::vector<C>{C::connected, C::suspended, C::lost}));
  EXPECT_EQ(d.new_sessions, 1);
  EXPECT_FALSE(d.machine.timer_wanted());
  d << S::connecting << S::connected;
  EXPECT_EQ(d.announced.back(), C::reconnected);
}

TEST(ConnectionStateMachine, TimerWantedOnlyWhileSuspended) {
  Driver d;
  EXPECT_FALSE(d.machine.timer_wanted());
  d << S::connected;
  EXPECT_FALSE(d.machine.timer_wanted());
  d << S::connecting;
  EXPECT_TRUE(d.machine.timer_wanted());
  d << S::connected;
  EXPECT_FALSE(d.machine.timer_wanted());
  d << S::connecting << S::expired;
  EXPECT_FALSE(d.machine.timer_wanted());
}

TEST(ConnectionStateMachine, StaleTimerIsIgnored) {
  Driver d;
  d.timer();  // before any connection
  d << S::connected;
  d.timer();  // connected: the link came back before the timer was cancelled
  d << S::connecting << S::expired;
  d.timer();  // already lost
  EXPECT_EQ(d.announced, (std::vector<C>{C::connected, C::suspended, C::lost}));
  EXPECT_EQ(d.new_sessions, 1);
}

TEST(ConnectionStateMachine, RuleDisabledKeepsSuspended) {
  Driver d(/*rule=*/false);
  d << S::connected << S::connecting;
  EXPECT_FALSE(d.machine.timer_wanted());
  d.timer();
  EXPECT_EQ(d.announced, (std::vector<C>{C::connected, C::suspended}));
  EXPECT_EQ(d.new_sessions, 0);
  d << S::expired;  // expiry still counts
  EXPECT_EQ(d.announced.back(), C::lost);
  EXPECT_EQ(d.new_sessions, 1);
}

TEST(ConnectionStateMachine, ReadOnly) {
  Driver d;
  d << S::connected_read_only;
  EXPECT_EQ(d.announced, (std::vector<C>{C::read_only}));
  EXPECT_TRUE(d.machine.is_connected());
  // The first read-write connection is still "connected"...
  d << S::connected;
  EXPECT_EQ(d.announced, (std::vector<C>{C::read_only, C::connected}));
  // ...and later ones "reconnected", from read_only or suspended alike.
  d << S::connected_read_only << S::connected << S::connecting << S::connected_read_only;
  EXPECT_EQ(d.announced, (std::vector<C>{C::read_only, C::connected, C::read_only, C::reconnected,
                                         C::suspended, C::read_only}));
  d << S::connected_read_only;
  EXPECT_EQ(d.announced.size(), 6u);
}

TEST(ConnectionStateMachine, ReadOnlyLinkLostIsSuspended) {
  Driver d;
  d << S::connected << S::connected_read_only << S::connecting;
  EXPECT_EQ(d.announced.back(), C::suspended);
  EXPECT_TRUE(d.machine.timer_wanted());
}

TEST(ConnectionStateMachine, AuthFailedIsLostWithoutANewSession) {
  Driver d;
  d << S::connected << S::auth_failed;
  EXPECT_EQ(d.announced, (std::vector<C>{C::connected, C::lost}));
  EXPECT_EQ(d.new_sessions, 0);
  EXPECT_TRUE(d.machine.auth_failed());
}

TEST(ConnectionStateMachine, ClosedSaysNothing) {
  Driver d;
  d << S::connected << S::closed;
  EXPECT_EQ(d.announced, (std::vector<C>{C::connected}));
  EXPECT_EQ(d.new_sessions, 0);
}

TEST(ConnectionStateMachine, ExpiredBeforeAnyConnectionStillGetsANewSession) {
  Driver d;
  d << S::connecting << S::expired;
  EXPECT_EQ(d.announced, (std::vector<C>{C::lost}));
  EXPECT_EQ(d.new_sessions, 1);
  d << S::connected;  // the first connection of this Client
  EXPECT_EQ(d.announced, (std::vector<C>{C::lost, C::connected}));
}

}  // namespace
}  // namespace zkr::detail
