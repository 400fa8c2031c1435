// The keeper's nudges against the live ensemble (see src/reply_watchdog.hpp):
// a reply slower than the quiet limit earns a nudge on the same session, and
// the reply still arrives; prompt replies earn none.
//
// The server bug itself (ZOOKEEPER-4537) cannot be provoked at will, so a
// slow server is played by the chaos suite's TCP proxy delaying every chunk
// 1.5 s each way: a round trip then takes 3 s, three times the quiet limit of
// a 15 s session. No sleeps: every wait is on a future or a condition
// variable with a deadline.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "c_keeper.hpp"
#include "support/ensemble.hpp"
#include "support/waits.hpp"
#include "tcp_proxy.hpp"
#include "zkr/keeper.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

using test::kWait;
constexpr auto kSessionTimeout = 15s;  // quiet limit 1 s (reply_watchdog.cpp)

// Session states as the keeper reports them; outlives the keeper.
class SessionLog {
 public:
  SessionCallback callback() {
    return [this](SessionState s) {
      std::lock_guard lock(mutex_);
      states_.push_back(s);
      changed_.notify_all();
    };
  }
  bool wait_connected(milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] {
      return !states_.empty() && states_.back() == SessionState::connected;
    });
  }
  std::vector<SessionState> states() const {
    std::lock_guard lock(mutex_);
    return states_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<SessionState> states_;  // guarded by mutex_
};

std::unique_ptr<CKeeper> open_logged(const std::string& hosts, SessionLog& log) {
  KeeperConfig config;
  config.hosts = hosts;
  config.session_timeout = kSessionTimeout;
  auto keeper = std::make_unique<CKeeper>(config, log.callback());
  if (!log.wait_connected(kWait)) throw std::runtime_error("no connection to " + hosts);
  return keeper;
}

TEST(ReplyNudgeTest, ASlowReplyEarnsANudgeOnTheSameSession) {
  ZKR_REQUIRE_ENSEMBLE();
  chaos::TcpProxy proxy(test::first_server_port());
  SessionLog log;
  auto keeper = open_logged("127.0.0.1:" + std::to_string(proxy.port()), log);
  ASSERT_EQ(keeper->session_timeout(), kSessionTimeout);
  const std::string path = test::unique_path("slow-reply");
  keeper->create(path, "payload", CreateMode::ephemeral);
  const auto session = keeper->session_id();
  const auto states_before = log.states().size();
  EXPECT_EQ(keeper->nudges_sent(), 0u);

  proxy.set_mode(chaos::ProxyMode::delay, 1500ms);
  // Pipelined, as the lock recipes send them.
  std::vector<std::future<Result<NodeData>>> replies;
  for (int i = 0; i < 5; ++i) replies.push_back(keeper->async_get(path));
  for (auto& reply : replies) {
    ASSERT_EQ(reply.wait_for(kWait), std::future_status::ready);
    auto got = reply.get();
    ASSERT_TRUE(got.ok()) << errc_name(got.error());
    EXPECT_EQ(got.value().data, "payload");
  }
  // The replies took 3 s or more; a nudge was due after 1 s of silence.
  // Exactly one: at most one is in flight, its answer comes after the
  // replies (one session's replies come in order), and with nothing
  // outstanding none follows.
  EXPECT_EQ(keeper->nudges_sent(), 1u);
  // On the same session, which never left the server: the nudge replaced
  // nothing and suspended nothing.
  EXPECT_EQ(keeper->session_id(), session);
  EXPECT_EQ(log.states().size(), states_before);

  proxy.set_mode(chaos::ProxyMode::forward);
  const auto start = std::chrono::steady_clock::now();
  keeper->close();
  // Stopping the nudging thread costs nothing noticeable; the close protocol
  // itself may wait for the nudge's answer on the wire (3 s at most here).
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_EQ(keeper->session_state(), SessionState::closed);
}

TEST(ReplyNudgeTest, PromptRepliesEarnNone) {
  ZKR_REQUIRE_ENSEMBLE();
  SessionLog log;
  auto keeper = open_logged(test::connect_string(), log);
  const std::string root = test::unique_path("prompt-replies");
  keeper->create(root);
  // One at a time, then pipelined, as the lock recipes do.
  for (int i = 0; i < 100; ++i) keeper->create(root + "/s" + std::to_string(i));
  std::vector<std::future<Result<Empty>>> removals;
  for (int i = 0; i < 100; ++i)
    removals.push_back(keeper->async_remove(root + "/s" + std::to_string(i)));
  for (auto& r : removals) {
    ASSERT_EQ(r.wait_for(kWait), std::future_status::ready);
    EXPECT_TRUE(r.get().ok());
  }
  keeper->remove(root);
  // None is due while replies keep coming within a second. A loaded machine
  // (a sanitizer run) may still hold one reply past a second, once or
  // twice; a nudge per request would be hundreds.
  EXPECT_LE(keeper->nudges_sent(), 2u);
}

}  // namespace
}  // namespace zkr
