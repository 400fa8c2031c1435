// The own-node watch on a real ensemble: a waiter whose read of its own node
// loses its reply with the connection (a TCP proxy drops that reply and
// resets the link) still hears a later delete of its node once granted.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "support/ensemble.hpp"
#include "support/waits.hpp"
#include "tcp_proxy.hpp"
#include "zkr/client.hpp"
#include "zkr/lock.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using test::Latch;

using test::kWait;
constexpr int kGetData = 4;  // ZooKeeper's opcode for getData

// Before the fix the read's reply was simply lost: no watch, nothing read
// again, and the delete below went unheard.
TEST(OwnNodeWatchLive, AWaiterWhoseOwnNodeReadLostItsLinkHearsALaterDelete) {
  ZKR_REQUIRE_ENSEMBLE();
  chaos::TcpProxy proxy(test::first_server_port());
  const auto holder_client = test::connected_client(test::connect_string(), 10s);
  const auto waiter_client =
      test::connected_client("127.0.0.1:" + std::to_string(proxy.port()), 10s);
  const auto foreign = test::connected_client(test::connect_string(), 10s);
  const std::string path = test::unique_path("own-node-watch");

  InterProcessMutex holder(*holder_client, path);
  ASSERT_TRUE(holder.try_acquire_for(kWait));
  Latch reconnected;
  std::atomic<int> suspensions{0};
  waiter_client->add_listener([&](ConnectionState s) {
    if (s == ConnectionState::suspended) ++suspensions;
    if (s == ConnectionState::reconnected) reconnected.open();
  });
  // The waiter's first getData is the read of its own node (the one before
  // it is read next): its reply is dropped and the link reset.
  proxy.arm_drop_reply({kGetData});

  InterProcessMutex waiter(*waiter_client, path);
  std::promise<Grant> granted;
  Latch done;
  std::thread waiting([&] {
    if (waiter.try_acquire_for(kWait)) {
      granted.set_value(waiter.grant());
      (void)done.wait(kWait * 2);
      waiter.release();
    } else {
      granted.set_exception(std::make_exception_ptr(std::runtime_error("not granted")));
    }
  });
  ASSERT_TRUE(reconnected.wait(kWait)) << "the link was not reset";
  EXPECT_FALSE(proxy.dropped().empty());
  EXPECT_EQ(proxy.dropped().rfind("opcode 4 ", 0), 0u) << proxy.dropped();
  holder.release();
  auto hand_off = granted.get_future();
  ASSERT_EQ(hand_off.wait_for(kWait), std::future_status::ready);
  const Grant grant = hand_off.get();
  EXPECT_FALSE(grant.lost()) << to_string(grant.lost_reason());
  Latch lost;
  std::atomic<LostReason> why{LostReason::none};
  grant.on_lost([&](LostReason r) {
    why = r;
    lost.open();
  });
  foreign->keeper()->remove(grant.node_path());  // an operator, a foreign client
  EXPECT_TRUE(lost.wait(kWait)) << "the delete of the waiter's node went unheard";
  EXPECT_EQ(why, LostReason::node_deleted);
  EXPECT_GE(suspensions.load(), 1);
  done.open();
  waiting.join();
}

}  // namespace
}  // namespace zkr
