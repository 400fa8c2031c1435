// The Client against a live ensemble with faults: a server killed or frozen
// under it, its session expired, no ensemble at all, a bad connect string.
//
// Every test that breaks a server repairs it on the way out, pass or fail
// (see Repair). Waits are condition-variable waits with deadlines.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "support/ensemble.hpp"
#include "support/waits.hpp"
#include "zkr/client.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using C = ConnectionState;
using test::unused_port;

constexpr milliseconds kSessionTimeout = 4s;
constexpr auto kStateDeadline = 20s;  // generous: the ensemble may be slow on a busy host

// What a listener heard, and waits for a given state.
class Heard {
 public:
  Client::Listener listener() {
    return [this](C s) {
      std::lock_guard lock(mutex_);
      states_.push_back(s);
      cv_.notify_all();
    };
  }
  // Waits until `target` is heard at position `from` or later; returns the
  // position after it (for the next wait), or nullopt at the deadline.
  std::optional<std::size_t> wait_for(C target, std::size_t from,
                                      std::chrono::seconds timeout = kStateDeadline) {
    std::unique_lock lock(mutex_);
    std::optional<std::size_t> found;
    cv_.wait_for(lock, timeout, [&] {
      for (std::size_t i = from; i < states_.size(); ++i)
        if (states_[i] == target) return (found = i + 1).has_value();
      return false;
    });
    return found;
  }
  std::size_t size() {
    std::lock_guard lock(mutex_);
    return states_.size();
  }
  std::string describe() {
    std::lock_guard lock(mutex_);
    std::ostringstream out;
    for (auto s : states_) out << to_string(s) << ' ';
    return out.str();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<C> states_;
};

ClientOptions client_options(std::string hosts) {
  ClientOptions o;
  o.connect_string = std::move(hosts);
  o.session_timeout = kSessionTimeout;
  o.connection_timeout = 10s;
  return o;
}

// "127.0.0.1:p,..." of every server but the leader. Faults are injected into
// the server the client uses; keeping that one a follower means the fault
// never waits on a leader election, whose length is not what these tests are
// about (the timer would turn a slow one into lost).
// The leader first has every follower in sync: a follower still catching up
// (just restarted, or dropped by the leader for lagging on a busy machine)
// cannot take the client over.
std::string followers_connect_string() {
  test::ensemble("synced");
  const int leader = std::stoi(test::ensemble("leader"));
  std::string hosts;
  for (int i = 1;; ++i) {
    std::string port;
    try {
      port = test::ensemble("port " + std::to_string(i));
    } catch (const std::runtime_error&) {
      break;  // past the last server
    }
    if (i == leader) continue;
    hosts += (hosts.empty() ? "" : ",") + std::string("127.0.0.1:") + port;
  }
  return hosts;
}

// A server fault under a connected client leaves the session alive: suspended,
// then reconnected through another server, same session, ephemeral node kept.
void expect_survives(const std::string& fault, const std::string& repair) {
  Heard heard;
  Client client(client_options(followers_connect_string()));
  client.add_listener(heard.listener());
  ASSERT_TRUE(client.block_until_connected(kStateDeadline));
  auto keeper = client.keeper();
  const auto session = keeper->session_id();
  const auto path = test::unique_path("ephemeral");
  keeper->create(path, "", CreateMode::ephemeral);
  const int server = test::server_index_of(keeper->connected_host());
  ASSERT_GT(server, 0) << "connected to " << keeper->connected_host();

  const auto mark = heard.size();
  test::Repair repair_it(repair + " " + std::to_string(server));
  test::ensemble(fault + " " + std::to_string(server));
  const auto after_suspended = heard.wait_for(C::suspended, mark);
  ASSERT_TRUE(after_suspended) << "heard: " << heard.describe();
  ASSERT_TRUE(heard.wait_for(C::reconnected, *after_suspended)) << "heard: " << heard.describe();
  EXPECT_EQ(heard.wait_for(C::lost, mark, 0s), std::nullopt) << "heard: " << heard.describe();

  EXPECT_EQ(client.session_epoch(), 1u);
  EXPECT_EQ(client.keeper(), keeper);
  EXPECT_EQ(keeper->session_id(), session);
  EXPECT_NE(test::server_index_of(keeper->connected_host()), server);
  const auto stat = client.with_retry([&](Keeper& k) { return k.exists(path); });
  ASSERT_TRUE(stat) << path << " is gone";
  EXPECT_EQ(stat->ephemeral_owner, session);
  repair_it.now();
  client.with_retry([&](Keeper& k) { return k.try_remove(path).ok(); });
}

TEST(ClientFaults, KilledServerIsSuspendedThenReconnectedWithTheSameSession) {
  ZKR_REQUIRE_ENSEMBLE();
  ZKR_REQUIRE_SERVER_FAULTS();
  expect_survives("kill", "restart");
}

TEST(ClientFaults, FrozenServerIsSuspendedThenReconnectedWithTheSameSession) {
  ZKR_REQUIRE_ENSEMBLE();
  ZKR_REQUIRE_SERVER_FAULTS();
  // The C client declares the link dead after 2/3 of the session timeout
  // without a reply, and moves to another server before the session expires.
  expect_survives("freeze", "thaw");
}

TEST(ClientFaults, SuspendedPastTheSessionTimeoutIsLostThenANewSession) {
  ZKR_REQUIRE_ENSEMBLE();
  ZKR_REQUIRE_SERVER_FAULTS();
  // One server in the connect string, so that killing it leaves the client
  // nowhere to go: suspended lasts until the Client's timer calls it lost.
  const auto hosts = followers_connect_string();
  const auto only = hosts.substr(0, hosts.find(','));
  Heard heard;
  Client client(client_options(only));
  client.add_listener(heard.listener());
  ASSERT_TRUE(client.block_until_connected(kStateDeadline));
  auto old_keeper = client.keeper();
  const auto old_session = old_keeper->session_id();
  const auto path = test::unique_path("ephemeral");
  old_keeper->create(path, "", CreateMode::ephemeral);
  const int server = test::server_index_of(only);
  ASSERT_GT(server, 0);
  const auto mark = heard.size();

  test::Repair restart("restart " + std::to_string(server));
  test::ensemble("kill " + std::to_string(server));
  const auto after_suspended = heard.wait_for(C::suspended, mark);
  ASSERT_TRUE(after_suspended) << "heard: " << heard.describe();
  const auto suspended_at = std::chrono::steady_clock::now();
  const auto after_lost = heard.wait_for(C::lost, *after_suspended);
  ASSERT_TRUE(after_lost) << "heard: " << heard.describe();
  EXPECT_GE(std::chrono::steady_clock::now() - suspended_at, kSessionTimeout - 500ms);
  EXPECT_EQ(client.session_epoch(), 2u);  // the new session is being opened

  restart.now();
  ASSERT_TRUE(heard.wait_for(C::reconnected, *after_lost)) << "heard: " << heard.describe();
  auto new_keeper = client.keeper_when_connected();
  EXPECT_NE(new_keeper, old_keeper);
  EXPECT_NE(new_keeper->session_id(), old_session);
  // The ensemble expires the old session a session timeout after its last
  // ping (up to a third of one before the kill), rounded up to its expiry
  // tick: its node goes by then, however soon the Client called it lost.
  EXPECT_TRUE(test::wait_gone(*new_keeper, path, kSessionTimeout))
      << "the old session's ephemeral node outlived it by a session timeout";
}

TEST(ClientFaults, ExpiredSessionIsLostThenReconnectedOnANewEpoch) {
  ZKR_REQUIRE_ENSEMBLE();
  Heard heard;
  Client client(client_options(test::connect_string()));
  client.add_listener(heard.listener());
  ASSERT_TRUE(client.block_until_connected(kStateDeadline));
  auto old_keeper = client.keeper();
  const auto old_session = old_keeper->session_id();
  const auto path = test::unique_path("ephemeral");
  old_keeper->create(path, "", CreateMode::ephemeral);
  const auto mark = heard.size();

  // Join the session from a second handle, then close it: the server ends
  // the session, and the Client's handle hears that it expired.
  test::expire_session(*old_keeper);

  const auto after_lost = heard.wait_for(C::lost, mark);
  ASSERT_TRUE(after_lost) << "heard: " << heard.describe();
  ASSERT_TRUE(heard.wait_for(C::reconnected, *after_lost)) << "heard: " << heard.describe();
  EXPECT_EQ(client.session_epoch(), 2u);
  auto new_keeper = client.keeper_when_connected();
  EXPECT_NE(new_keeper, old_keeper);
  EXPECT_NE(new_keeper->session_id(), old_session);
  EXPECT_NE(new_keeper->session_id(), 0);
  EXPECT_FALSE(client.with_retry([&](Keeper& k) { return k.exists(path); }))
      << "the old session's ephemeral node survived";
  // The old handle is dead for good: it answers with an error, at once.
  EXPECT_FALSE(old_keeper->try_get("/", {}, 5s).ok());
}

TEST(ClientFaults, NoEnsembleTimesOutClearlyAndRetriesExactlyAsThePolicySays) {
  // Needs no ensemble: nothing listens on this port.
  const std::string hosts = "127.0.0.1:" + std::to_string(unused_port());
  auto options = client_options(hosts);
  options.connection_timeout = 300ms;
  options.retry_policy = std::make_shared<RetryNTimes>(3, 50ms);
  auto sleeper = std::make_shared<RecordingSleeper>();
  options.sleeper = sleeper;
  Client client(options);

  const auto start = std::chrono::steady_clock::now();
  try {
    (void)client.keeper_when_connected();
    ADD_FAILURE() << "connected to " << hosts << "?";
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::connection_loss);
    EXPECT_NE(std::string(e.what()).find("not connected to " + hosts + " within 300 ms"),
              std::string::npos)
        << e.what();
  }
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, 300ms);
  // Ignoring the option would wait client_options's 10 s (or the default 5 s).
  EXPECT_LT(waited, 300ms + 2s) << "the connection_timeout was 300 ms";

  int calls = 0;
  try {
    client.with_retry([&](Keeper& k) {
      ++calls;
      return k.exists("/");
    });
    ADD_FAILURE() << "with_retry succeeded without an ensemble";
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::connection_loss);
  }
  EXPECT_EQ(calls, 0);  // never connected, so the operation never ran
  EXPECT_EQ(sleeper->delays(), std::vector<milliseconds>(3, 50ms));
  EXPECT_FALSE(client.is_connected());
}

TEST(ClientFaults, BadConnectStringFailsTheConstructor) {
  for (const char* hosts : {"", "127.0.0.1", "127.0.0.1:99999", "127.0.0.1:2181/app",
                            "127.0.0.1:2181,,127.0.0.1:2182"}) {
    EXPECT_THROW(Client client(client_options(hosts)), std::invalid_argument) << hosts;
  }
}

TEST(ClientFaults, NamespaceIsCreatedAndPathsAreRelativeToIt) {
  ZKR_REQUIRE_ENSEMBLE();
  const auto root = test::unique_path("ns");
  auto options = client_options(test::connect_string());
  options.namespace_path = root.substr(1) + "/app";
  {
    Client client(options);
    ASSERT_TRUE(client.block_until_connected(kStateDeadline));
    auto created = client.keeper()->create("/x", "hello");
    EXPECT_EQ(created.path, "/x");
  }
  Client plain(client_options(test::connect_string()));
  ASSERT_TRUE(plain.block_until_connected(kStateDeadline));
  auto k = plain.keeper();
  EXPECT_EQ(k->get(root + "/app/x").data, "hello");
  k->remove(root + "/app/x");
  k->remove(root + "/app");
  k->remove(root);
}

}  // namespace
}  // namespace zkr
