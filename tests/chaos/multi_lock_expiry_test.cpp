// Regression test for the first bug the chaos run found (seed 7, fixed in
// 99ead5f): MultiLock granted a set of locks while one of them was held by
// someone else.
//
// MultiLock takes its locks one by one. Its session expires after it took
// the first (a) and while it waits for the second (b): a's node goes with the
// session and another client (d) takes a. The wait for b requeues in the new
// session; when b is released, MultiLock used to return true, the lease of a
// saying lost (or not yet), while d held a. It must not grant {a, b} while d
// holds a.
//
// Runs on the live ensemble of scripts/test (ZK_CONNECT); skips without one.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "support/ensemble.hpp"
#include "support/waits.hpp"
#include "zkr/client.hpp"
#include "zkr/lock.hpp"
#include "zkr/multi_lock.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<Client> connect() {
  ClientOptions options;
  options.connect_string = test::connect_string();
  options.session_timeout = 4s;
  auto client = std::make_unique<Client>(options);
  EXPECT_TRUE(client->block_until_connected(30s));
  return client;
}

TEST(MultiLockSessionExpiry, NeverGrantsALockHeldElsewhere) {
  ZKR_REQUIRE_ENSEMBLE();
  auto a = connect();  // the MultiLock
  auto c = connect();  // holds b while a waits
  auto d = connect();  // takes a once a's first session is gone
  const auto root = test::unique_path("multi-expiry");
  const auto path_a = root + "/a";
  const auto path_b = root + "/b";

  InterProcessMutex c_holds_b(*c, path_b);
  ASSERT_TRUE(c_holds_b.try_acquire_for(10s));

  struct Outcome {
    bool granted = false;
    bool a_lost = false;
  };
  // Long enough to see b released and a grant happen; d holds a throughout,
  // so the only right answer is "not granted" at this deadline.
  constexpr auto kMultiTimeout = 8s;
  std::promise<Outcome> done;
  std::thread waiter([&] {
    MultiLock both(*a, {path_a, path_b});
    Outcome out;
    try {
      out.granted = both.try_acquire_for(kMultiTimeout);
    } catch (const KeeperError&) {
      out.granted = false;  // giving up is fine too; granting is not
    }
    if (out.granted) {
      out.a_lost = both.leases()[0].lost();
      both.release();
    }
    done.set_value(out);
  });

  // a holds its node in a and waits in b behind c.
  auto keeper = c->keeper();
  ASSERT_TRUE(test::wait_children(*keeper, path_b, [](const auto& n) { return n.size() == 2; }, 20s));
  ASSERT_TRUE(test::wait_children(*keeper, path_a, [](const auto& n) { return n.size() == 1; }, 20s));
  test::expire_session(*a->keeper());
  // a's node in a is gone with its session.
  ASSERT_TRUE(test::wait_children(*keeper, path_a, [](const auto& n) { return n.empty(); }, 20s));

  InterProcessMutex d_holds_a(*d, path_a);
  ASSERT_TRUE(d_holds_a.try_acquire_for(10s));
  c_holds_b.release();

  auto future = done.get_future();
  ASSERT_EQ(future.wait_for(kMultiTimeout + 30s), std::future_status::ready);
  const auto outcome = future.get();
  waiter.join();
  EXPECT_FALSE(outcome.granted) << "MultiLock granted {a, b} while another client holds a"
                                << (outcome.a_lost ? " (its lease of a said lost)" : "");
  d_holds_a.release();
}

}  // namespace
}  // namespace zkr
