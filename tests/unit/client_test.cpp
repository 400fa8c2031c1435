// The Client over scripted keepers: the test plays the ZooKeeper C client and
// reports each session's events itself, then checks what listeners hear, which
// sessions the Client opens and closes, and what its calls return.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <spdlog/logger.h>

#include "background_remover.hpp"
#include "client_internals.hpp"
#include "support/fake_keeper.hpp"
#include "support/waits.hpp"
#include "zkr/client.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using S = SessionState;
using C = ConnectionState;

constexpr auto kWait = 5s;  // deadline for things that should happen at once

// Znodes shared by every keeper of one test: only what namespace creation and
// background deletes need, with scripted failures for removes.
struct Nodes {
  std::mutex mutex;
  std::condition_variable changed;
  std::set<std::string> paths{"/"};     // guarded by mutex
  std::deque<Errc> remove_failures;     // guarded by mutex: next removes fail so
  std::map<std::string, Errc> refused;  // guarded by mutex: creates of these fail so
  int removes = 0;                      // guarded by mutex: remove requests seen

  bool contains(const std::string& p) {
    std::lock_guard lock(mutex);
    return paths.count(p) > 0;
  }
  void add(std::initializer_list<std::string> ps) {
    std::lock_guard lock(mutex);
    paths.insert(ps);
  }
  void fail_next_removes(std::initializer_list<Errc> errors) {
    std::lock_guard lock(mutex);
    remove_failures.insert(remove_failures.end(), errors);
  }
  bool wait_gone(const std::string& p, milliseconds timeout = kWait) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, timeout, [&] { return paths.count(p) == 0; });
  }
  bool wait_removes(int n, milliseconds timeout = kWait) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, timeout, [&] { return removes >= n; });
  }
};

// One session whose events the test reports. Only exists and create do
// anything (on Nodes, under the chroot); the rest answer unimplemented.
class ScriptedKeeper : public Keeper {
 public:
  ScriptedKeeper(KeeperConfig keeper_config, SessionCallback on_state, std::int64_t id,
                 std::shared_ptr<Nodes> nodes)
      : config(std::move(keeper_config)),
        on_state_(std::move(on_state)),
        id_(id),
        nodes_(std::move(nodes)) {}
  // Runs what a real keeper's end waits for: the C client joins its
  // completion thread, whose callbacks may be calling the Client.
  ~ScriptedKeeper() override {
    if (on_destroy) on_destroy();
  }
  std::function<void()> on_destroy;

  // What the C client's event thread would do.
  void report(SessionState s) {
    state_ = s;
    on_state_(s);
  }
  // What the C client knows before its event thread reports it.
  void know(SessionState s) { state_ = s; }

  void send_create(std::string path, std::string, CreateMode, CreateOptions,
                   ReplyHandler<Result<Created>> on_reply) override {
    const auto full = real(path);
    std::lock_guard lock(nodes_->mutex);
    if (nodes_->paths.count(full)) return on_reply(Result<Created>(Errc::node_exists, path));
    if (const auto it = nodes_->refused.find(full); it != nodes_->refused.end())
      return on_reply(Result<Created>(it->second, path));
    const auto slash = full.rfind('/');
    const auto parent = slash == 0 ? "/" : full.substr(0, slash);
    if (!nodes_->paths.count(parent)) return on_reply(Result<Created>(Errc::no_node, path));
    nodes_->paths.insert(full);
    return on_reply(Result<Created>(Created{path, {}}));
  }
  void send_exists(std::string path, Watcher, ReplyHandler<Result<Stat>> on_reply) override {
    // Every node here stands for one of this session's own.
    if (nodes_->contains(real(path))) return on_reply(Result<Stat>(Stat{.ephemeral_owner = id_}));
    return on_reply(Result<Stat>(Errc::no_node, path));
  }
  void send_remove(std::string path, Version, ReplyHandler<Result<Empty>> on_reply) override {
    const auto full = real(path);
    std::lock_guard lock(nodes_->mutex);
    ++nodes_->removes;
    nodes_->changed.notify_all();
    if (!nodes_->remove_failures.empty()) {
      const auto error = nodes_->remove_failures.front();
      nodes_->remove_failures.pop_front();
      return on_reply(Result<Empty>(error, path));
    }
    if (!nodes_->paths.erase(full)) return on_reply(Result<Empty>(Errc::no_node, path));
    return on_reply(Result<Empty>(Empty{}));
  }
  void send_get(std::string path, Watcher, ReplyHandler<Result<NodeData>> on_reply) override {
    return on_reply(Result<NodeData>(Errc::unimplemented, path));
  }
  void send_set(std::string path, std::string, Version,
                ReplyHandler<Result<Stat>> on_reply) override {
    return on_reply(Result<Stat>(Errc::unimplemented, path));
  }
  void send_children(std::string path, Watcher, ReplyHandler<Result<Children>> on_reply) override {
    const auto full = real(path);
    std::lock_guard lock(nodes_->mutex);
    if (!nodes_->paths.count(full)) return on_reply(Result<Children>(Errc::no_node, path));
    Children children;
    const auto prefix = full == "/" ? full : full + "/";
    for (const auto& p : nodes_->paths)
      if (p.size() > prefix.size() && p.compare(0, prefix.size(), prefix) == 0 &&
          p.find('/', prefix.size()) == std::string::npos)
        children.names.push_back(p.substr(prefix.size()));
    return on_reply(Result<Children>(std::move(children)));
  }
  void send_multi(std::vector<Op>, ReplyHandler<MultiResult> on_reply) override {
    return on_reply(MultiResult{Errc::unimplemented, {}});
  }
  void send_sync(std::string path, ReplyHandler<Result<Empty>> on_reply) override {
    return on_reply(Result<Empty>(Errc::unimplemented, path));
  }

  void close() noexcept override { closed = true; }
  std::int64_t session_id() const override { return id_; }
  std::string session_password() const override { return "secret"; }
  SessionState session_state() const override { return state_; }
  milliseconds session_timeout() const override { return config.session_timeout; }
  std::string connected_host() const override { return ""; }

  const KeeperConfig config;
  std::atomic<bool> closed{false};

 private:
  std::string real(const std::string& path) const {
    if (config.chroot.empty()) return path;
    return path == "/" ? config.chroot : config.chroot + path;
  }

  SessionCallback on_state_;
  std::int64_t id_;
  std::shared_ptr<Nodes> nodes_;
  std::atomic<SessionState> state_{SessionState::connecting};
};

// Builds ScriptedKeepers for a Client and lets the test wait for each.
class Factory {
 public:
  KeeperFactory make() {
    return [this](const KeeperConfig& config, SessionCallback on_state) {
      std::lock_guard lock(mutex_);
      auto k = std::make_shared<ScriptedKeeper>(
          config, std::move(on_state), 0x100 + static_cast<std::int64_t>(built_.size()), nodes);
      built_.push_back(k);
      cv_.notify_all();
      return k;
    };
  }

  // The i-th keeper built (0-based), waiting for it if need be. Only a weak
  // reference is kept here, so that the test can see the Client close keepers.
  std::shared_ptr<ScriptedKeeper> keeper(std::size_t i) {
    std::unique_lock lock(mutex_);
    if (!cv_.wait_for(lock, kWait, [&] { return built_.size() > i; })) return nullptr;
    return built_[i].lock();
  }
  std::weak_ptr<ScriptedKeeper> weak(std::size_t i) {
    std::lock_guard lock(mutex_);
    return i < built_.size() ? built_[i] : std::weak_ptr<ScriptedKeeper>();
  }
  std::size_t count() {
    std::lock_guard lock(mutex_);
    return built_.size();
  }

  const std::shared_ptr<Nodes> nodes = std::make_shared<Nodes>();

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::weak_ptr<ScriptedKeeper>> built_;  // guarded by mutex_
};

// What a listener heard, with waits on it.
class Heard {
 public:
  void operator()(C s) {
    std::lock_guard lock(mutex_);
    states_.push_back(s);
    cv_.notify_all();
  }
  Client::Listener listener() {
    return [this](C s) { (*this)(s); };
  }
  // True once `n` states were heard; false at the deadline.
  bool wait_for(std::size_t n, milliseconds timeout = kWait) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] { return states_.size() >= n; });
  }
  std::vector<C> states() {
    std::lock_guard lock(mutex_);
    return states_;
  }
  // True once at least `n` states were heard, the last of them `last`.
  bool wait_for(std::size_t n, C last, milliseconds timeout = kWait) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout,
                        [&] { return states_.size() >= n && states_.back() == last; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<C> states_;
};

ClientOptions options_for(Factory& factory) {
  ClientOptions o;
  o.connect_string = "127.0.0.1:2181";
  o.session_timeout = 10s;
  o.connection_timeout = 2s;
  o.keeper_factory = factory.make();
  o.sleeper = std::make_shared<RecordingSleeper>();
  return o;
}

TEST(Client, FirstKeeperIsBuiltAtConstructionWithTheOptions) {
  Factory factory;
  auto options = options_for(factory);
  options.session_timeout = 4321ms;
  Client client(options);
  auto k = factory.keeper(0);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->config.hosts, "127.0.0.1:2181");
  EXPECT_EQ(k->config.chroot, "");
  EXPECT_EQ(k->config.session_timeout, 4321ms);
  EXPECT_EQ(k->config.default_acl, open_acl_unsafe());
  EXPECT_EQ(client.keeper(), k);
  EXPECT_EQ(client.session_epoch(), 1u);
  EXPECT_FALSE(client.is_connected());
  EXPECT_EQ(client.state(), C::suspended);
}

TEST(Client, ListenersHearStatesInOrderWithoutDuplicates) {
  Factory factory;
  Heard heard;
  Client client(options_for(factory));
  client.add_listener(heard.listener());
  auto k = factory.keeper(0);
  k->report(S::connecting);
  k->report(S::connected);
  k->report(S::connected);
  k->report(S::connecting);
  k->report(S::connecting);
  k->report(S::connected);
  ASSERT_TRUE(heard.wait_for(3));
  EXPECT_EQ(heard.states(), (std::vector<C>{C::connected, C::suspended, C::reconnected}));
  EXPECT_TRUE(client.is_connected());
  EXPECT_EQ(client.state(), C::reconnected);
  EXPECT_EQ(client.session_epoch(), 1u);
  EXPECT_EQ(factory.count(), 1u);
}

TEST(Client, BlockUntilConnected) {
  Factory factory;
  Client client(options_for(factory));
  EXPECT_FALSE(client.block_until_connected(20ms));
  auto k = factory.keeper(0);
  std::thread reporter([k] { k->report(S::connected); });
  EXPECT_TRUE(client.block_until_connected(kWait));
  reporter.join();
  EXPECT_TRUE(client.is_connected());
  EXPECT_EQ(client.keeper_when_connected(), k);
}

TEST(Client, ExpiryAnnouncesLostAndOpensANewSessionOnTheNextEpoch) {
  Factory factory;
  auto options = options_for(factory);
  options.auth = DigestAuth{"alice", "pw"};
  Heard heard;
  std::atomic<std::uint64_t> epoch_seen_on_lost{0};
  Client client(options);
  client.add_listener([&](C s) {
    if (s == C::lost) epoch_seen_on_lost = client.session_epoch();
  });
  client.add_listener(heard.listener());
  auto first = factory.keeper(0);
  first->report(S::connected);
  first->report(S::connecting);
  first->report(S::expired);
  ASSERT_TRUE(heard.wait_for(3));
  EXPECT_EQ(heard.states(), (std::vector<C>{C::connected, C::suspended, C::lost}));

  // Listeners of lost already see the new session's epoch.
  EXPECT_EQ(epoch_seen_on_lost.load(), 2u);
  auto second = factory.keeper(1);
  ASSERT_TRUE(second);
  // The new session carries the same credentials and ACL.
  ASSERT_TRUE(second->config.auth);
  EXPECT_EQ(second->config.auth->user, "alice");
  EXPECT_EQ(second->config.default_acl, creator_all_acl());
  second->report(S::connecting);
  second->report(S::connected);
  ASSERT_TRUE(heard.wait_for(4));
  EXPECT_EQ(heard.states().back(), C::reconnected);
  EXPECT_EQ(client.session_epoch(), 2u);
  EXPECT_EQ(client.keeper(), second);
  EXPECT_NE(second->session_id(), first->session_id());

  // The Client let go of the expired handle, and ignores anything it still says.
  std::weak_ptr<ScriptedKeeper> old = first;
  first->report(S::connecting);  // taken for the current session, this would suspend
  first.reset();
  EXPECT_TRUE(old.expired());
  EXPECT_FALSE(heard.wait_for(5, 100ms));
  EXPECT_TRUE(client.is_connected());
}

// Ending a keeper waits for its callbacks (zookeeper_close joins the
// completion thread), and a callback may be asking the Client for its epoch:
// a lock attempt does. The Client must not hold its own lock while the
// replaced handle goes.
TEST(Client, ReplacedKeeperIsDroppedWhileItsCallbacksCanStillCallTheClient) {
  std::promise<std::uint64_t> epoch_promise;
  const auto epoch_read = epoch_promise.get_future().share();
  std::promise<bool> answered_in_time;  // by the keeper's end, set as it returns
  auto answered = answered_in_time.get_future();
  Factory factory;
  Client client(options_for(factory));
  auto first = factory.keeper(0);
  ASSERT_TRUE(first);
  first->on_destroy = [&] {
    // A callback on another thread, which the end of the keeper waits for.
    std::thread callback([&] { epoch_promise.set_value(client.session_epoch()); });
    const bool in_time = epoch_read.wait_for(kWait) == std::future_status::ready;
    // Stuck behind the Client's lock, it could not be joined here.
    if (in_time) callback.join();
    else callback.detach();
    answered_in_time.set_value(in_time);
  };
  first->report(S::connected);
  // Only the Client holds the first keeper now: it is dropped where the
  // Client replaces it.
  ScriptedKeeper* raw = first.get();
  first.reset();
  raw->report(S::expired);
  ASSERT_TRUE(factory.keeper(1));
  ASSERT_EQ(answered.wait_for(2 * kWait), std::future_status::ready) << "the keeper never ended";
  EXPECT_TRUE(answered.get()) << "the epoch could not be read while the old keeper ended";
  ASSERT_EQ(epoch_read.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(epoch_read.get(), 2u);
}

// The C client marks its handle expired, then queues the event; meanwhile the
// handle fails every request at once. keeper_when_connected() must not hand
// it out then, or a caller retrying on it spins (the train yard's chaos run
// once burnt its 200 attempts at a message in a few milliseconds so).
TEST(Client, KeeperWhenConnectedNeverHandsOutAHandleThatKnowsItsSessionEnded) {
  Factory factory;
  Client client(options_for(factory));
  auto first = factory.keeper(0);
  first->report(S::connected);
  ASSERT_EQ(client.keeper_when_connected(), first);

  first->know(S::expired);  // the Client has not heard
  EXPECT_TRUE(client.is_connected());
  try {
    (void)client.session_when_connected(std::chrono::steady_clock::now() + 200ms);
    FAIL() << "handed out a handle whose session had ended";
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::connection_loss);
  }
  auto waiting = std::async(std::launch::async, [&] { return client.keeper_when_connected(); });
  EXPECT_EQ(waiting.wait_for(100ms), std::future_status::timeout);
  first->report(S::expired);
  auto second = factory.keeper(1);
  ASSERT_TRUE(second);
  second->report(S::connected);
  ASSERT_EQ(waiting.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(waiting.get(), second);
  EXPECT_EQ(client.session_when_connected().epoch, 2u);
}

// Counts the calls of a session_now() callback, with a wait on them.
struct ChangeCount {
  std::mutex mutex;
  std::condition_variable cv;
  int calls = 0;  // guarded by mutex
  std::shared_ptr<std::function<void()>> callback = std::make_shared<std::function<void()>>([this] {
    std::lock_guard lock(mutex);
    ++calls;
    cv.notify_all();
  });
  bool wait_for(int n, milliseconds timeout = kWait) {
    std::unique_lock lock(mutex);
    return cv.wait_for(lock, timeout, [&] { return calls >= n; });
  }
  int count() {
    std::lock_guard lock(mutex);
    return calls;
  }
};

// session_now(): the session at once, or nullopt and one call at the next
// change; never a handle that already knows its session ended.
TEST(Client, SessionNowAnswersAtOnceAndCallsBackOnTheNextChange) {
  Factory factory;
  Heard heard;  // outlives the Client, which tells its listeners it closed
  ChangeCount change;
  Client client(options_for(factory));
  client.add_listener(heard.listener());
  auto first = factory.keeper(0);
  EXPECT_FALSE(detail::ClientInternals::session_now(client, change.callback));
  EXPECT_EQ(change.count(), 0);
  first->report(S::connected);
  ASSERT_TRUE(change.wait_for(1));
  auto now = detail::ClientInternals::session_now(client, change.callback);
  ASSERT_TRUE(now);
  EXPECT_EQ(now->keeper, first);
  EXPECT_EQ(now->epoch, 1u);

  // The handle knows its session ended before the Client hears of it.
  first->know(S::expired);
  EXPECT_FALSE(detail::ClientInternals::session_now(client, change.callback));
  first->report(S::expired);  // lost, and a new session
  ASSERT_TRUE(change.wait_for(2));
  auto second = factory.keeper(1);
  ASSERT_TRUE(second);
  // Not connected yet: a callback again, for the connection.
  EXPECT_FALSE(detail::ClientInternals::session_now(client, change.callback));
  second->report(S::connected);
  ASSERT_TRUE(change.wait_for(3));
  now = detail::ClientInternals::session_now(client, nullptr);
  ASSERT_TRUE(now);
  EXPECT_EQ(now->keeper, second);
  EXPECT_EQ(now->epoch, 2u);
  // A callback is called once per registration, not at every change.
  const int settled = change.count();
  ASSERT_TRUE(heard.wait_for(1, C::reconnected));  // the listeners are level with us
  const auto heard_before = heard.states().size();
  second->report(S::connecting);
  second->report(S::connected);
  ASSERT_TRUE(heard.wait_for(heard_before + 2, C::reconnected));  // both changes made
  ASSERT_TRUE(detail::ClientInternals::session_now(client, nullptr));
  EXPECT_EQ(change.count(), settled);
}

TEST(Client, SessionNowCallbackDroppedIsNeverCalled) {
  Factory factory;
  ChangeCount dropped, kept;  // outlive the Client, which calls kept again as it closes
  Client client(options_for(factory));
  auto first = factory.keeper(0);
  EXPECT_FALSE(detail::ClientInternals::session_now(client, dropped.callback));
  EXPECT_FALSE(detail::ClientInternals::session_now(client, kept.callback));
  std::weak_ptr<std::function<void()>> gone = dropped.callback;
  dropped.callback.reset();
  EXPECT_TRUE(gone.expired()) << "the Client kept the callback alive";
  first->report(S::connected);
  ASSERT_TRUE(kept.wait_for(1));
  EXPECT_EQ(dropped.count(), 0);
}

TEST(Client, SessionNowWaiterHearsTheClientCloseAndAuthFailureThrows) {
  Factory factory;
  ChangeCount change;
  {
    Client client(options_for(factory));
    EXPECT_FALSE(detail::ClientInternals::session_now(client, change.callback));
  }
  EXPECT_EQ(change.count(), 1) << "a waiter must hear that no session will come";

  Factory refusing;
  ChangeCount failed;
  Client client(options_for(refusing));
  auto first = refusing.keeper(0);
  EXPECT_FALSE(detail::ClientInternals::session_now(client, failed.callback));
  first->report(S::auth_failed);
  ASSERT_TRUE(failed.wait_for(1));
  try {
    (void)detail::ClientInternals::session_now(client, failed.callback);
    FAIL() << "no session will come, and session_now() did not say so";
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::auth_failed);
  }
}

TEST(Client, SuspendedForASessionTimeoutIsLostAndANewSession) {
  Factory factory;
  auto options = options_for(factory);
  options.session_timeout = 200ms;
  Heard heard;
  Client client(options);
  client.add_listener(heard.listener());
  auto first = factory.keeper(0);
  first->report(S::connected);
  ASSERT_TRUE(heard.wait_for(1));
  const auto suspended_at = std::chrono::steady_clock::now();
  first->report(S::connecting);
  ASSERT_TRUE(heard.wait_for(3));
  EXPECT_GE(std::chrono::steady_clock::now() - suspended_at, 200ms);
  EXPECT_EQ(heard.states(), (std::vector<C>{C::connected, C::suspended, C::lost}));

  // A new session is opened, and the suspended handle closed, even though the
  // test still holds it: left open it could reconnect and keep its nodes.
  auto second = factory.keeper(1);
  ASSERT_TRUE(second);
  EXPECT_TRUE(first->closed);
  EXPECT_FALSE(second->closed);
  second->report(S::connected);
  ASSERT_TRUE(heard.wait_for(4));
  std::weak_ptr<ScriptedKeeper> old = first;
  first.reset();
  EXPECT_TRUE(old.expired());
  EXPECT_EQ(heard.states().back(), C::reconnected);
  EXPECT_EQ(client.session_epoch(), 2u);
  EXPECT_EQ(client.keeper(), second);
}

TEST(Client, TimerIsCancelledWhenTheLinkComesBack) {
  Factory factory;
  auto options = options_for(factory);
  options.session_timeout = 150ms;
  Heard heard;
  Client client(options);
  client.add_listener(heard.listener());
  auto k = factory.keeper(0);
  k->report(S::connected);
  k->report(S::connecting);
  k->report(S::connected);
  ASSERT_TRUE(heard.wait_for(3));
  EXPECT_FALSE(heard.wait_for(4, 400ms));  // no lost: the timer is gone
  EXPECT_EQ(factory.count(), 1u);
}

TEST(Client, SuspendedTooLongRuleCanBeTurnedOff) {
  Factory factory;
  auto options = options_for(factory);
  options.session_timeout = 100ms;
  options.lost_when_suspended_too_long = false;
  Heard heard;
  Client client(options);
  client.add_listener(heard.listener());
  auto k = factory.keeper(0);
  k->report(S::connected);
  k->report(S::connecting);
  ASSERT_TRUE(heard.wait_for(2));
  EXPECT_FALSE(heard.wait_for(3, 400ms));
  EXPECT_EQ(client.state(), C::suspended);
  EXPECT_EQ(factory.count(), 1u);
}

TEST(Client, AuthFailedIsLostAndFinal) {
  Factory factory;
  Heard heard;
  Client client(options_for(factory));
  client.add_listener(heard.listener());
  auto k = factory.keeper(0);
  k->report(S::connected);
  k->report(S::auth_failed);
  ASSERT_TRUE(heard.wait_for(2));
  EXPECT_EQ(heard.states().back(), C::lost);
  try {
    (void)client.keeper_when_connected();
    ADD_FAILURE() << "no exception";
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::auth_failed);
  }
  EXPECT_FALSE(client.block_until_connected(1s));  // returns at once, not after 1 s
  EXPECT_EQ(factory.count(), 1u);
}

TEST(Client, KeeperWhenConnectedTimesOutWithAClearMessage) {
  Factory factory;
  auto options = options_for(factory);
  options.connection_timeout = 50ms;
  Client client(options);
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)client.keeper_when_connected();
    ADD_FAILURE() << "no exception";
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::connection_loss);
    EXPECT_EQ(e.path(), "");
    EXPECT_NE(std::string(e.what()).find("not connected to 127.0.0.1:2181 within 50 ms"),
              std::string::npos)
        << e.what();
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
}

TEST(Client, WithRetryMakesThePolicysRetriesWhileDisconnected) {
  Factory factory;
  auto options = options_for(factory);
  options.connection_timeout = 10ms;
  options.retry_policy = std::make_shared<RetryNTimes>(3, 7ms);
  auto sleeper = std::make_shared<RecordingSleeper>();
  options.sleeper = sleeper;
  Client client(options);
  int calls = 0;
  EXPECT_THROW(client.with_retry([&](Keeper&) { return ++calls; }), KeeperError);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(sleeper->delays(), std::vector<milliseconds>(3, 7ms));
}

TEST(Client, WithRetryRunsOnTheConnectedKeeper) {
  Factory factory;
  Client client(options_for(factory));
  auto k = factory.keeper(0);
  k->report(S::connected);
  Keeper* seen = nullptr;
  EXPECT_EQ(client.with_retry([&](Keeper& keeper) {
    seen = &keeper;
    return 7;
  }),
            7);
  EXPECT_EQ(seen, k.get());
}

TEST(Client, ListenersMayCallTheClientAndWaitForANewSession) {
  Factory factory;
  std::promise<std::pair<std::shared_ptr<Keeper>, std::uint64_t>> after_lost;
  Client client(options_for(factory));
  client.add_listener([&](C s) {
    (void)client.state();
    (void)client.is_connected();
    if (s != C::lost) return;
    // Blocks this listener until the new session connects: the Client's
    // session thread must keep going meanwhile.
    auto k = client.keeper_when_connected();
    after_lost.set_value({k, client.session_epoch()});
  });
  auto first = factory.keeper(0);
  first->report(S::connected);
  first->report(S::expired);
  auto second = factory.keeper(1);
  ASSERT_TRUE(second);
  second->report(S::connected);
  auto future = after_lost.get_future();
  ASSERT_EQ(future.wait_for(kWait), std::future_status::ready);
  const auto [k, epoch] = future.get();
  EXPECT_EQ(k, second);
  EXPECT_EQ(epoch, 2u);
}

TEST(Client, RemovedListenerIsNotCalledAgain) {
  Factory factory;
  Heard removed, kept;
  Client client(options_for(factory));
  const auto id = client.add_listener(removed.listener());
  client.add_listener(kept.listener());
  auto k = factory.keeper(0);
  k->report(S::connected);
  ASSERT_TRUE(kept.wait_for(1));
  client.remove_listener(id);
  k->report(S::connecting);
  ASSERT_TRUE(kept.wait_for(2));
  EXPECT_EQ(removed.states(), (std::vector<C>{C::connected}));
  client.remove_listener(id);  // twice: harmless
  client.remove_listener(9999);
}

TEST(Client, ListenerMayRemoveItself) {
  Factory factory;
  Heard kept;
  std::atomic<int> calls{0};
  Client::ListenerId id = 0;
  std::mutex id_mutex;
  Client client(options_for(factory));
  {
    std::lock_guard lock(id_mutex);
    id = client.add_listener([&](C) {
      ++calls;
      std::lock_guard id_lock(id_mutex);
      client.remove_listener(id);  // must not wait for itself
    });
  }
  client.add_listener(kept.listener());
  auto k = factory.keeper(0);
  k->report(S::connected);
  k->report(S::connecting);
  k->report(S::connected);
  ASSERT_TRUE(kept.wait_for(3));
  EXPECT_EQ(calls.load(), 1);
}

TEST(Client, RemoveListenerWaitsForARunningCall) {
  Factory factory;
  std::promise<void> entered, release;
  auto release_future = release.get_future().share();
  std::atomic<bool> returned_from_listener{false};
  Client client(options_for(factory));
  const auto id = client.add_listener([&, release_future](C) {
    entered.set_value();
    release_future.wait_for(kWait);
    returned_from_listener = true;
  });
  factory.keeper(0)->report(S::connected);
  ASSERT_EQ(entered.get_future().wait_for(kWait), std::future_status::ready);

  auto removal = std::async(std::launch::async, [&] {
    client.remove_listener(id);
    return returned_from_listener.load();
  });
  EXPECT_EQ(removal.wait_for(100ms), std::future_status::timeout);  // still blocked
  release.set_value();
  ASSERT_EQ(removal.wait_for(kWait), std::future_status::ready);
  EXPECT_TRUE(removal.get());
}

TEST(Client, ThrowingListenerDoesNotStopTheOthers) {
  Factory factory;
  auto options = options_for(factory);
  Heard heard;
  Client client(options);
  client.add_listener([](C) { throw std::runtime_error("listener bug"); });
  client.add_listener(heard.listener());
  auto k = factory.keeper(0);
  k->report(S::connected);
  k->report(S::connecting);
  ASSERT_TRUE(heard.wait_for(2));
}

TEST(Client, NamespaceIsCreatedBeforeConnectedIsAnnounced) {
  Factory factory;
  auto options = options_for(factory);
  options.namespace_path = "app/locks";
  Heard heard;
  Client client(options);
  client.add_listener(heard.listener());
  auto session = factory.keeper(0);
  EXPECT_EQ(session->config.chroot, "/app/locks");
  session->report(S::connected);

  // A handle without chroot creates the namespace, then goes.
  auto bootstrap = factory.keeper(1);
  ASSERT_TRUE(bootstrap);
  EXPECT_EQ(bootstrap->config.chroot, "");
  EXPECT_FALSE(heard.wait_for(1, 50ms));  // not before the namespace exists
  bootstrap->report(S::connected);
  ASSERT_TRUE(heard.wait_for(1));
  EXPECT_EQ(heard.states(), (std::vector<C>{C::connected}));
  EXPECT_TRUE(factory.nodes->contains("/app"));
  EXPECT_TRUE(factory.nodes->contains("/app/locks"));
  std::weak_ptr<ScriptedKeeper> gone = bootstrap;
  bootstrap.reset();
  EXPECT_TRUE(gone.expired());
  EXPECT_EQ(client.keeper(), session);
  // Paths through the session's keeper are relative to the namespace.
  EXPECT_TRUE(client.keeper_when_connected()->exists("/"));
}

TEST(Client, NamespaceWithALeadingSlashMeansTheSame) {
  Factory factory;
  auto options = options_for(factory);
  options.namespace_path = "/app";
  Client client(options);
  EXPECT_EQ(client.options().namespace_path, "app");
  EXPECT_EQ(factory.keeper(0)->config.chroot, "/app");
}

TEST(Client, ExistingNamespaceIsLeftAlone) {
  Factory factory;
  factory.nodes->paths.insert("/app");
  auto options = options_for(factory);
  options.namespace_path = "app";
  Client client(options);
  factory.keeper(0)->report(S::connected);
  EXPECT_TRUE(client.block_until_connected(kWait));
  // The session's own handle saw it: no second session was opened.
  EXPECT_EQ(factory.count(), 1u);
}

// A namespace that cannot be made is an error callers see at once, naming the
// namespace and the server's reason, not a connection on which every call
// fails with no_node. The Client tries again, and connects once it can.
TEST(Client, NamespaceThatCannotBeMadeIsANamedErrorAtOnce) {
  Factory factory;
  factory.nodes->refused["/shared"] = Errc::no_auth;
  auto options = options_for(factory);
  options.namespace_path = "shared/app-b";
  Heard heard;
  Client client(options);
  client.add_listener(heard.listener());
  factory.keeper(0)->report(S::connected);
  auto bootstrap = factory.keeper(1);
  ASSERT_TRUE(bootstrap);
  bootstrap->report(S::connected);
  bootstrap.reset();

  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(client.block_until_connected(kWait));
  EXPECT_LT(std::chrono::steady_clock::now() - start, options.connection_timeout)
      << "waited for a connection that cannot serve anything";
  try {
    (void)client.keeper_when_connected();
    ADD_FAILURE() << "handed out a keeper whose namespace does not exist";
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::no_auth);
    EXPECT_EQ(e.path(), "/shared/app-b");
    const std::string what = e.what();
    EXPECT_NE(what.find("namespace /shared/app-b"), std::string::npos) << what;
    EXPECT_NE(what.find("no_auth at /shared"), std::string::npos) << what;
  }
  EXPECT_THROW(client.with_retry([](Keeper& k) { return k.exists("/x"); }), KeeperError);
  EXPECT_TRUE(heard.states().empty()) << "connected was announced";
  EXPECT_FALSE(client.is_connected());

  // Fixed (an operator changed the ACL): the next attempt, a second later,
  // makes it, and only then is connected announced.
  {
    std::lock_guard lock(factory.nodes->mutex);
    factory.nodes->refused.clear();
  }
  auto again = factory.keeper(2);
  ASSERT_TRUE(again) << "no second attempt";
  EXPECT_EQ(again->config.chroot, "");
  again->report(S::connected);
  ASSERT_TRUE(heard.wait_for(1));
  EXPECT_EQ(heard.states(), (std::vector<C>{C::connected}));
  EXPECT_TRUE(factory.nodes->contains("/shared/app-b"));
  EXPECT_NO_THROW((void)client.keeper_when_connected());
}

// The namespace and the parents made for it get namespace_acl, by default
// open even when the Client has auth (whose default ACL is creator-only):
// another identity must be able to make its own namespace beside ours. Nodes
// inside the namespace still get default_acl.
TEST(Client, NamespaceAndItsParentsGetTheOpenAclEvenWithAuth) {
  test::FakeEnsemble ensemble;
  ClientOptions options;
  options.connect_string = "127.0.0.1:2181";
  options.keeper_factory = ensemble.factory();
  options.auth = DigestAuth{"alice", "secret"};
  options.namespace_path = "shared/app-a";
  {
    Client client(options);
    ASSERT_TRUE(client.block_until_connected(kWait));
    EXPECT_EQ(ensemble.acl_now("/shared"), open_acl_unsafe());
    EXPECT_EQ(ensemble.acl_now("/shared/app-a"), open_acl_unsafe());
    client.keeper()->create("/inside");
    EXPECT_EQ(ensemble.acl_now("/shared/app-a/inside"), creator_all_acl());
  }
  options.namespace_path = "private/app";
  options.namespace_acl = creator_all_acl();
  Client told(options);
  ASSERT_TRUE(told.block_until_connected(kWait));
  EXPECT_EQ(ensemble.acl_now("/private"), creator_all_acl());
  EXPECT_EQ(ensemble.acl_now("/private/app"), creator_all_acl());
}

// A namespace deleted under a connected Client (an operator, a cleanup) is
// created again at once: later calls work rather than failing with no_node
// until a restart.
TEST(Client, DeletedNamespaceIsCreatedAgain) {
  test::FakeEnsemble ensemble;
  ClientOptions options;
  options.connect_string = "127.0.0.1:2181";
  options.keeper_factory = ensemble.factory();
  options.namespace_path = "app";
  Client client(options);
  // Listening from the start: a listener added later may still hear the
  // first `connected`, queued before it came.
  Heard heard;
  client.add_listener(heard.listener());
  ASSERT_TRUE(client.block_until_connected(kWait));
  ASSERT_TRUE(heard.wait_for(1));
  auto raw = ensemble.connect();
  const auto created_before = ensemble.exists_now("/app")->czxid;
  auto back = std::make_shared<test::Latch>();
  raw->remove("/app");
  if (raw->exists("/app", [back](const WatchEvent& e) {
        if (e.type == EventType::created) back->open();
      }))
    back->open();
  ASSERT_TRUE(back->wait(kWait)) << "the namespace was not created again";
  EXPECT_GT(ensemble.exists_now("/app")->czxid, created_before);
  EXPECT_TRUE(client.with_retry([](Keeper& k) { return k.create("/x"); }).path == "/x");
  EXPECT_TRUE(ensemble.exists_now("/app/x"));

  // Deleted while the link is down: made again before reconnected is announced.
  const auto id = client.keeper()->session_id();
  ensemble.disconnect(id);
  ASSERT_TRUE(heard.wait_for(2));
  raw->remove("/app/x");
  raw->remove("/app");
  ensemble.reconnect(id);
  ASSERT_TRUE(heard.wait_for(3));
  EXPECT_EQ(heard.states(), (std::vector<C>{C::connected, C::suspended, C::reconnected}));
  EXPECT_TRUE(ensemble.exists_now("/app"));
}

TEST(Client, DestructorClosesTheSessionAndDeliversQueuedStates) {
  Factory factory;
  Heard heard;
  {
    Client client(options_for(factory));
    client.add_listener(heard.listener());
    auto k = factory.keeper(0);
    k->report(S::connected);
    ASSERT_TRUE(client.block_until_connected(kWait));
  }
  EXPECT_TRUE(factory.weak(0).expired());
  EXPECT_EQ(heard.states(), (std::vector<C>{C::connected}));
}

// A caller may keep a keeper (and its event thread) after the Client is gone:
// its events must go nowhere. The Client closed the session on the way out,
// a listener hears nothing more, and an expiry opens no new session (with the
// Client alive it would). The Client's threads are joined by then, so what
// was not delivered during report() never will be.
TEST(Client, EventsAfterTheClientIsGoneAreHarmless) {
  Factory factory;
  Heard heard;
  std::shared_ptr<ScriptedKeeper> kept;
  {
    Client client(options_for(factory));
    client.add_listener(heard.listener());
    kept = factory.keeper(0);
    ASSERT_TRUE(kept);
    kept->report(S::connected);
    ASSERT_TRUE(heard.wait_for(1));
  }
  EXPECT_TRUE(kept->closed) << "the Client did not close its session";
  kept->report(S::connecting);  // the inbox is closed: dropped
  kept->report(S::expired);
  kept->report(S::connected);
  EXPECT_EQ(heard.states(), std::vector<C>{C::connected});
  EXPECT_EQ(factory.count(), 1u) << "an event after the Client was gone opened a session";
}

TEST(Client, EffectiveOptionsHaveDefaults) {
  Factory factory;
  auto options = options_for(factory);
  options.sleeper.reset();
  Client client(options);
  EXPECT_TRUE(client.options().retry_policy);
  EXPECT_TRUE(client.options().sleeper);
  EXPECT_EQ(client.options().default_acl, open_acl_unsafe());
  EXPECT_EQ(client.options().namespace_acl, open_acl_unsafe());
  EXPECT_EQ(&client.retry_policy(), client.options().retry_policy.get());
  (void)client.sleeper();
}

// ---- Logging

// A handler's lines, in order, from any thread.
class Lines {
 public:
  LogHandler handler() {
    return [this](LogLevel level, std::string_view line) {
      std::lock_guard lock(mutex_);
      lines_.emplace_back(level, std::string(line));
    };
  }
  std::vector<std::pair<LogLevel, std::string>> lines() const {
    std::lock_guard lock(mutex_);
    return lines_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::pair<LogLevel, std::string>> lines_;
};

TEST(Client, LogLinesGoToTheHandlerFromItsLevelUp) {
  Factory factory;
  Lines lines;
  auto options = options_for(factory);
  options.logging.handler = lines.handler();
  options.logging.level = LogLevel::info;
  {
    Client client(options);
    // Each Keeper is told the same, for its own lines.
    EXPECT_EQ(factory.keeper(0)->config.logging.level, LogLevel::info);
    EXPECT_TRUE(factory.keeper(0)->config.logging.handler);
    factory.keeper(0)->report(S::expired);
    ASSERT_TRUE(factory.keeper(1)) << "no new session after the expiry";
  }
  const auto seen = lines.lines();
  const auto opening = std::find_if(seen.begin(), seen.end(), [](const auto& l) {
    return l.second.starts_with("opening session epoch ");
  });
  ASSERT_NE(opening, seen.end()) << "the Client's info line did not reach the handler";
  EXPECT_EQ(opening->first, LogLevel::info);
  for (const auto& [level, line] : seen) EXPECT_GE(level, LogLevel::info) << line;
}

TEST(Client, LogLinesBelowTheLevelAreNotPassedOn) {
  Factory factory;
  Lines lines;
  auto options = options_for(factory);
  options.logging.handler = lines.handler();
  options.logging.level = LogLevel::warn;
  {
    Client client(options);
    factory.keeper(0)->report(S::expired);  // "opening session epoch ..." at info
    ASSERT_TRUE(factory.keeper(1));
  }
  const auto at_warn = lines.lines();
  for (const auto& [level, line] : at_warn) EXPECT_GE(level, LogLevel::warn) << line;
  options.logging.level = LogLevel::off;
  { Client client(options); }
  EXPECT_EQ(lines.lines().size(), at_warn.size()) << "a line passed a level of off";
}

// ---- Option validation

void expect_invalid(ClientOptions options, const std::string& mention) {
  try {
    Client client(std::move(options));
    ADD_FAILURE() << "no exception; expected one mentioning " << mention;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(mention), std::string::npos) << e.what();
  }
}

TEST(ClientOptions, BadConnectStrings) {
  Factory factory;
  for (const char* hosts : {"", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:70000",
                            "127.0.0.1:2181/chroot", "127.0.0.1:2181,", ":2181"}) {
    auto options = options_for(factory);
    options.connect_string = hosts;
    expect_invalid(options, "connect_string");
  }
  EXPECT_EQ(factory.count(), 0u);  // nothing was opened
}

TEST(ClientOptions, BadTimeouts) {
  Factory factory;
  auto o = options_for(factory);
  o.session_timeout = 0ms;
  expect_invalid(o, "session_timeout");
  o = options_for(factory);
  o.session_timeout = -1ms;
  expect_invalid(o, "session_timeout");
  o = options_for(factory);
  o.connection_timeout = 0ms;
  expect_invalid(o, "connection_timeout");
}

TEST(ClientOptions, BadNamespaces) {
  Factory factory;
  for (const char* ns : {"app/", "a//b", "a/./b", "a/../b", "zookeeper", "//a"}) {
    auto o = options_for(factory);
    o.namespace_path = ns;
    expect_invalid(o, "namespace_path");
  }
}

TEST(ClientOptions, EmptyNamespaceAcl) {
  Factory factory;
  auto o = options_for(factory);
  o.namespace_path = "app";
  o.namespace_acl = AclList{};
  expect_invalid(o, "namespace_acl");
}

TEST(ClientOptions, BadAuth) {
  Factory factory;
  auto o = options_for(factory);
  o.auth = DigestAuth{"", "pw"};
  expect_invalid(o, "auth");
  o.auth = DigestAuth{"a:b", "pw"};
  expect_invalid(o, "auth");
}

TEST(ClientOptions, FactoryReturningNothingFailsTheConstructor) {
  ClientOptions o;
  o.connect_string = "127.0.0.1:2181";
  o.keeper_factory = [](const KeeperConfig&, SessionCallback) { return nullptr; };
  EXPECT_THROW(Client client(o), std::runtime_error);
}

// ---- Deletes in the background, through the Client

TEST(RemoveInBackground, DeletesAtOnceWhenConnected) {
  Factory factory;
  factory.nodes->add({"/a", "/a/n1", "/a/n2"});
  Client client(options_for(factory));
  factory.keeper(0)->report(S::connected);
  ASSERT_TRUE(client.block_until_connected(kWait));
  detail::ClientInternals::remove_in_background(client, "/a/n1", client.session_epoch());
  EXPECT_TRUE(factory.nodes->wait_gone("/a/n1"));
  EXPECT_TRUE(factory.nodes->contains("/a/n2"));
}

TEST(RemoveInBackground, WaitsForTheConnectionThenDeletes) {
  Factory factory;
  factory.nodes->add({"/a", "/a/n1"});
  Heard heard;
  Client client(options_for(factory));
  client.add_listener(heard.listener());
  auto k = factory.keeper(0);
  k->report(S::connected);
  k->report(S::connecting);
  ASSERT_TRUE(heard.wait_for(2));  // suspended
  detail::ClientInternals::remove_in_background(client, "/a/n1", 1);
  EXPECT_FALSE(factory.nodes->wait_removes(1, 100ms));  // nothing sent while suspended
  k->report(S::connected);
  EXPECT_TRUE(factory.nodes->wait_gone("/a/n1"));
}

TEST(RemoveInBackground, TriesAgainAfterEachReconnection) {
  Factory factory;
  factory.nodes->add({"/a", "/a/n1"});
  factory.nodes->fail_next_removes({Errc::connection_loss, Errc::connection_loss});
  Client client(options_for(factory));
  auto k = factory.keeper(0);
  k->report(S::connected);
  ASSERT_TRUE(client.block_until_connected(kWait));
  detail::ClientInternals::remove_in_background(client, "/a/n1", 1);
  ASSERT_TRUE(factory.nodes->wait_removes(1));
  k->report(S::connecting);
  k->report(S::connected);
  ASSERT_TRUE(factory.nodes->wait_removes(2));
  k->report(S::connecting);
  k->report(S::connected);
  EXPECT_TRUE(factory.nodes->wait_gone("/a/n1"));
}

TEST(RemoveInBackground, ByNamePrefixDeletesTheProtectedNode) {
  Factory factory;
  factory.nodes->add({"/a", "/a/_c_1234-lock-0000000003", "/a/_c_9999-lock-0000000004"});
  Client client(options_for(factory));
  factory.keeper(0)->report(S::connected);
  ASSERT_TRUE(client.block_until_connected(kWait));
  detail::ClientInternals::remove_in_background(client, "/a/_c_1234-lock-", 1,
                                                /*by_name_prefix=*/true);
  EXPECT_TRUE(factory.nodes->wait_gone("/a/_c_1234-lock-0000000003"));
  EXPECT_TRUE(factory.nodes->contains("/a/_c_9999-lock-0000000004"));
}

TEST(RemoveInBackground, NothingToDoForAnEndedSession) {
  Factory factory;
  factory.nodes->add({"/a", "/a/n1"});
  Client client(options_for(factory));
  auto first = factory.keeper(0);
  first->report(S::connected);
  first->report(S::expired);
  auto second = factory.keeper(1);
  ASSERT_TRUE(second);
  second->report(S::connected);
  ASSERT_TRUE(client.block_until_connected(kWait));
  ASSERT_EQ(client.session_epoch(), 2u);
  detail::ClientInternals::remove_in_background(client, "/a/n1",
                                                1);  // epoch 1 is over: its ephemerals went with it
  EXPECT_FALSE(factory.nodes->wait_removes(1, 100ms));
  EXPECT_TRUE(factory.nodes->contains("/a/n1"));
}

// ---- The remover alone, with a session the test sets

class BackgroundRemoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    factory.nodes->add({"/a", "/a/n1"});
    auto keeper = factory.make()(KeeperConfig{}, [](SessionState) {});
    set_session({keeper, 1, true});
  }
  void set_session(detail::BackgroundRemover::Session s) {
    std::lock_guard lock(mutex_);
    session_ = std::move(s);
  }
  detail::BackgroundRemover::SessionSource source() {
    return [this] {
      std::lock_guard lock(mutex_);
      return session_;
    };
  }

  Factory factory;
  std::shared_ptr<spdlog::logger> log = spdlog_test_logger();

 private:
  static std::shared_ptr<spdlog::logger> spdlog_test_logger() {
    return std::make_shared<spdlog::logger>("remover-test");  // no sinks: silent
  }
  std::mutex mutex_;
  detail::BackgroundRemover::Session session_;  // guarded by mutex_
};

TEST_F(BackgroundRemoverTest, TimeoutOnALiveLinkIsTriedAgainAfterAPause) {
  factory.nodes->fail_next_removes({Errc::operation_timeout});
  detail::BackgroundRemover remover(source(), 100ms, log, /*retry_pause=*/20ms);
  remover.add("/a/n1", 1, false);
  EXPECT_TRUE(factory.nodes->wait_gone("/a/n1"));  // no on_connected() needed
  EXPECT_TRUE(remover.wait_until_empty(kWait));
}

TEST_F(BackgroundRemoverTest, GivesUpOnErrorsThatRetryingCannotFix) {
  factory.nodes->fail_next_removes({Errc::no_auth});
  detail::BackgroundRemover remover(source(), 100ms, log, 1ms);
  remover.add("/a/n1", 1, false);
  EXPECT_TRUE(remover.wait_until_empty(kWait));
  EXPECT_TRUE(factory.nodes->contains("/a/n1"));
  EXPECT_FALSE(factory.nodes->wait_removes(2, 50ms));
}

TEST_F(BackgroundRemoverTest, AlreadyGoneIsDone) {
  detail::BackgroundRemover remover(source(), 100ms, log);
  remover.add("/a/never", 1, false);
  remover.add("/a/none-", 1, /*by_name_prefix=*/true);
  remover.add("/missing/parent-", 1, /*by_name_prefix=*/true);
  EXPECT_TRUE(remover.wait_until_empty(kWait));
}

TEST_F(BackgroundRemoverTest, KeepsWhatWaitsForAConnection) {
  set_session({factory.keeper(0), 1, false});
  detail::BackgroundRemover remover(source(), 100ms, log);
  remover.add("/a/n1", 1, false);
  EXPECT_FALSE(remover.wait_until_empty(100ms));
  EXPECT_EQ(remover.pending(), 1u);
  set_session({factory.keeper(0), 1, true});
  remover.on_connected();
  EXPECT_TRUE(factory.nodes->wait_gone("/a/n1"));
  remover.stop();
  remover.stop();  // idempotent
}

TEST_F(BackgroundRemoverTest, DropsDeletesOfAnotherSession) {
  set_session({factory.keeper(0), 2, true});
  detail::BackgroundRemover remover(source(), 100ms, log);
  remover.add("/a/n1", 1, false);
  EXPECT_TRUE(remover.wait_until_empty(kWait));
  EXPECT_TRUE(factory.nodes->contains("/a/n1"));
}

TEST_F(BackgroundRemoverTest, InvalidPathIsGivenUpNotThrown) {
  detail::BackgroundRemover remover(source(), 100ms, log);
  remover.add("not/absolute", 1, false);
  EXPECT_TRUE(remover.wait_until_empty(kWait));
}

TEST(ConnectionState, Names) {
  EXPECT_EQ(to_string(C::connected), "connected");
  EXPECT_EQ(to_string(C::suspended), "suspended");
  EXPECT_EQ(to_string(C::reconnected), "reconnected");
  EXPECT_EQ(to_string(C::lost), "lost");
  EXPECT_EQ(to_string(C::read_only), "read_only");
}

}  // namespace
}  // namespace zkr
