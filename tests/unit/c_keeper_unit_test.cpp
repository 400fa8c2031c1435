// What the C client keeper checks before it talks to any server: the host
// list, the rest of KeeperConfig, and closing a handle that never connected.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <random>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "log.hpp"
#include "zkr/keeper.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;

TEST(ValidateHostsTest, AcceptsHostPortLists) {
  for (const char* hosts : {"127.0.0.1:2181", "localhost:2181", "zk-1.example.com:1",
                            "127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:65535", "[::1]:2181",
                            "[fe80::1]:2181,a:2", "[::ffff:127.0.0.1]:2181", "A-B.c:10"}) {
    EXPECT_NO_THROW(validate_hosts(hosts)) << hosts;
  }
}

// The message names the piece that is wrong.
void expect_refused(const std::string& hosts, const std::string& piece) {
  try {
    validate_hosts(hosts);
    ADD_FAILURE() << "accepted \"" << hosts << "\"";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("\"" + piece + "\""), std::string::npos)
        << "for \"" << hosts << "\": " << e.what();
  }
}

TEST(ValidateHostsTest, RefusesEachBadPieceByName) {
  expect_refused("127.0.0.1", "127.0.0.1");    // no port
  expect_refused("127.0.0.1:", "127.0.0.1:");  // empty port
  expect_refused(":2181", ":2181");            // no host
  expect_refused("a:0", "a:0");                // port 0
  expect_refused("a:65536", "a:65536");        // port too big
  expect_refused("a:123456", "a:123456");      // port too long
  expect_refused("a:02181", "a:02181");        // octal to the C client
  expect_refused("a:0x10", "a:0x10");          // hex to the C client
  expect_refused("a:-1", "a:-1");
  expect_refused("a:+1", "a:+1");
  expect_refused("a:1,,b:2", "");  // empty entry
  expect_refused("a:1,", "");      // trailing comma
  expect_refused(",a:1", "");
  expect_refused("a:1,b:2/app", "b:2/app");  // chroot suffix
  expect_refused("a :1", "a :1");            // space
  expect_refused(" a:1", " a:1");
  expect_refused("a:1\n", "a:1\\x0a");       // control, shown escaped
  expect_refused("a_b:1", "a_b:1");          // outside [A-Za-z0-9.-]
  expect_refused("::1:2181", "::1:2181");    // IPv6 without brackets
  expect_refused("[::1:2181", "[::1:2181");  // unclosed
  expect_refused("[]:2181", "[]:2181");
  expect_refused("[::1]", "[::1]");  // no port
  expect_refused("[::1]2181", "[::1]2181");
  expect_refused("[::g]:1", "[::g]:1");
  expect_refused("[127.0.0.1]:1", "[127.0.0.1]:1");  // not IPv6
  expect_refused("a:1:2", "a:1:2");
  EXPECT_THROW(validate_hosts(""), std::invalid_argument);
  EXPECT_THROW(validate_hosts(std::string(300, 'a') + ":1"), std::invalid_argument);
}

// The grammar validate_hosts() enforces, written again independently as one
// regular expression: entries joined by ',', each a name of [A-Za-z0-9.-]
// (at most 253) or a bracketed IPv6 address with a ':', then ':' and a
// decimal port in 1..65535 without a leading 0.
bool is_host_list(const std::string& hosts) {
  static const std::regex kHostList([] {
    const std::string port =
        "([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])";
    const std::string host = "([A-Za-z0-9.-]{1,253}|\\[[0-9A-Fa-f.:]*:[0-9A-Fa-f.:]*\\])";
    const std::string entry = host + ":" + port;
    return entry + "(," + entry + ")*";
  }());
  return std::regex_match(hosts, kHostList);
}

// Random bytes, random strings of the characters that matter, and random
// lists of near-miss entries: validate_hosts() accepts exactly what the
// grammar above accepts, refuses the rest with std::invalid_argument (any
// other exception fails the test), and never crashes.
TEST(ValidateHostsTest, AcceptsExactlyTheGrammarOnRandomInput) {
  std::mt19937 rng(20240601);
  const std::string alphabet = std::string("ab1:,[]/ .-0") + "\x01" + "\xff";
  const std::vector<std::string> hosts_part = {"a",     "ab",   "1.0",   "a-b",   "A.b",
                                               "[::1]", "[:]",  "[a:b]", "[1.2]", "",
                                               "a_b",   "[::1", "[]",    "::1"};
  const std::vector<std::string> ports = {"1", "0",  "65535", "65536", "01", "2181",  "99999",
                                          "",  "1a", "6553",  "-1",    "+1", "655350"};
  int accepted = 0;
  int refused = 0;
  for (int i = 0; i < 30000; ++i) {
    std::string hosts;
    if (i % 3 == 2) {
      for (int n = 1 + static_cast<int>(rng() % 3); n > 0; --n) {
        if (!hosts.empty()) hosts += ',';
        hosts += hosts_part[rng() % hosts_part.size()];
        if (rng() % 8 != 0) hosts += ':';
        hosts += ports[rng() % ports.size()];
      }
    } else {
      hosts.assign(rng() % 24, '\0');
      for (char& c : hosts)
        c = (i % 3 == 1) ? static_cast<char>(rng() % 256) : alphabet[rng() % alphabet.size()];
    }
    bool ok = true;
    try {
      validate_hosts(hosts);
    } catch (const std::invalid_argument&) {
      ok = false;
    }
    ASSERT_EQ(ok, is_host_list(hosts)) << (ok ? "accepted" : "refused") << " \"" << hosts << "\"";
    ++(ok ? accepted : refused);
  }
  // Both answers were exercised, many times (580 and 29420 with this seed).
  EXPECT_GT(accepted, 400);
  EXPECT_GT(refused, 1000);
}

KeeperConfig config_for(std::string hosts) {
  KeeperConfig config;
  config.hosts = std::move(hosts);
  return config;
}

TEST(ConnectKeeperTest, RefusesBadConfigurationBeforeConnecting) {
  auto config = config_for("127.0.0.1:2181");
  config.chroot = "app";
  EXPECT_THROW((void)connect_keeper(config, nullptr), std::invalid_argument);
  config.chroot = "/app/";
  EXPECT_THROW((void)connect_keeper(config, nullptr), std::invalid_argument);
  config.chroot = "/zookeeper";
  EXPECT_THROW((void)connect_keeper(config, nullptr), std::invalid_argument);

  config = config_for("127.0.0.1:2181");
  config.session_timeout = 0ms;
  EXPECT_THROW((void)connect_keeper(config, nullptr), std::invalid_argument);

  config = config_for("127.0.0.1:2181");
  config.default_acl = {};
  EXPECT_THROW((void)connect_keeper(config, nullptr), std::invalid_argument);

  config = config_for("127.0.0.1:2181");
  config.auth = DigestAuth{"", "pw"};
  EXPECT_THROW((void)connect_keeper(config, nullptr), std::invalid_argument);
  config.auth = DigestAuth{"a:b", "pw"};
  EXPECT_THROW((void)connect_keeper(config, nullptr), std::invalid_argument);

  config = config_for("127.0.0.1:2181");
  config.session_id = 42;
  config.session_password = "short";
  EXPECT_THROW((void)connect_keeper(config, nullptr), std::invalid_argument);
  config.session_id = 0;
  config.session_password = std::string(16, 'x');
  EXPECT_THROW((void)connect_keeper(config, nullptr), std::invalid_argument);
}

// Port 1 on loopback: nothing listens, so the handle stays connecting and
// every request waits in the C client's queue (or fails with connection_loss
// after an attempt). Closing must answer them all and end the watch.
TEST(ConnectKeeperTest, ClosingANeverConnectedKeeperAnswersEverything) {
  // The C client logs every refused connection at ERROR; keep the test quiet.
  auto logger = detail::default_logger();
  const auto level = logger->level();
  logger->set_level(spdlog::level::off);

  std::vector<SessionState> states;
  auto keeper =
      connect_keeper(config_for("127.0.0.1:1"), [&states](SessionState s) { states.push_back(s); });
  EXPECT_EQ(keeper->session_id(), 0);
  EXPECT_EQ(keeper->connected_host(), "");
  EXPECT_EQ(keeper->session_timeout(), 15000ms);  // nothing negotiated yet

  std::promise<WatchEvent> fired;
  auto watched = keeper->async_exists("/a", [&fired](const WatchEvent& e) { fired.set_value(e); });
  std::vector<std::future<Result<Created>>> creates;
  for (int i = 0; i < 50; ++i)
    creates.push_back(keeper->async_create("/a", "", CreateMode::persistent));
  auto multi = keeper->async_multi({op::Check{"/a", 1}});
  keeper.reset();
  logger->set_level(level);

  for (auto& f : creates) {
    ASSERT_EQ(f.wait_for(0s), std::future_status::ready);
    const auto error = f.get().error();
    EXPECT_TRUE(error == Errc::closing || error == Errc::connection_loss) << errc_name(error);
  }
  ASSERT_EQ(multi.wait_for(0s), std::future_status::ready);
  const auto multi_result = multi.get();
  EXPECT_TRUE(multi_result.error == Errc::closing || multi_result.error == Errc::connection_loss);
  EXPECT_TRUE(multi_result.results.empty());
  // The exists failed without reaching a server, so no watch was ever set.
  ASSERT_EQ(watched.wait_for(0s), std::future_status::ready);
  EXPECT_FALSE(watched.get().ok());
  EXPECT_EQ(fired.get_future().wait_for(0s), std::future_status::timeout);
  ASSERT_FALSE(states.empty());
  EXPECT_EQ(states.back(), SessionState::closed);
}

// zoo_amulti corrupts memory if the handshake of a reconnection finds the
// session over while it builds the request, so a multi is never handed to the
// C client while connecting: it fails at once, not sent, and the handle is
// none the worse for it.
TEST(ConnectKeeperTest, AMultiWhileConnectingFailsAtOnceAsNotSent) {
  auto logger = detail::default_logger();
  const auto level = logger->level();
  logger->set_level(spdlog::level::off);
  auto keeper = connect_keeper(config_for("127.0.0.1:1"), nullptr);
  for (int i = 0; i < 100; ++i) {
    auto multi = keeper->async_multi({op::Check{"/a", 1}, op::Set{"/b", "x"}, op::Remove{"/c"}});
    ASSERT_EQ(multi.wait_for(0s), std::future_status::ready) << i;
    const auto result = multi.get();
    EXPECT_EQ(result.error, Errc::connection_loss) << errc_name(result.error);
    EXPECT_TRUE(result.results.empty());
  }
  keeper.reset();
  logger->set_level(level);
}

}  // namespace
}  // namespace zkr
