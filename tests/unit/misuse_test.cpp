// Bad input and misuse of the locks and the Client, on the in-memory
// ensemble: every case must end in a clear error (an exception naming the
// path, the option or the lock), with nothing sent to the server, nothing
// left behind, and no thread left waiting.
//
// Already covered elsewhere, not repeated here: the path rules one by one
// (path_test), bad connect strings, timeouts and auth options (client_test
// ClientOptions.*), the fake's own argument checks (fake_keeper_test), a few
// bad lock paths (lock_test BadLockPathsAreRejectedBeforeAnythingIsSent),
// reentrancy, a non-owner's release and double release of the mutex and the
// semaphore mutex (lock_test MutexUnitTest / SemaphoreMutexUnitTest).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lock_driver.hpp"
#include "support/fake_keeper.hpp"
#include "support/fault_keeper.hpp"
#include "support/process_state.hpp"
#include "support/waits.hpp"
#include "zkr/lock.hpp"
#include "zkr/lock_factory.hpp"
#include "zkr/multi_lock.hpp"
#include "zkr/path.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test::FakeEnsemble;
using test::Faults;
using test::OpKind;

constexpr auto kWait = 10s;  // bound on every wait; a healthy run takes milliseconds

// The path as the error message shows it: control characters as \xNN, cut at 80.
std::string shown(const std::string& path) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (const char c : path.substr(0, 40)) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

struct BadPath {
  std::string path;
  std::string reason;  // a fragment of the message that says what is wrong
};

// One of each rule, and the lock's own: room for its nodes.
std::vector<BadPath> bad_lock_paths() {
  return {
      {"", "empty"},
      {"locks/a", "absolute"},
      {"/locks/a/", "ends with '/'"},
      {"/locks//a", "empty segment"},
      {"/locks/./a", "relative segment"},
      {"/locks/../a", "relative segment"},
      {"/locks/a/.", "relative segment"},
      {"/locks/a/..", "relative segment"},
      {"/locks/a\x01", "control character"},
      {"/locks/\ta", "control character"},
      {"/locks/a\x7f", "control character"},
      {"/locks/a\xc2\x85", "control character"},
      {std::string("/locks/a\0b", 10), "NUL"},
      {"/" + std::string(kMaxPathLength, 'x'), "longer than"},
      {"/" + std::string(kMaxLockPathLength, 'x'), "lock path may have"},
      {"/zookeeper", "reserved"},
      {"/zookeeper/locks/a", "reserved"},
      {"/", "root"},
  };
}

// Runs make() and expects std::invalid_argument whose message names the path
// and the rule.
template <class Make>
void expect_refused(const BadPath& bad, Make make, const std::string& what) {
  try {
    make();
    ADD_FAILURE() << what << " accepted \"" << shown(bad.path) << "\"";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(bad.reason), std::string::npos)
        << what << ": \"" << message << "\" lacks \"" << bad.reason << "\"";
    if (bad.path.size() > 1) {
      EXPECT_NE(message.find(shown(bad.path)), std::string::npos)
          << what << ": \"" << message << "\" does not show the path";
    }
  }
}

// A Client on the fake ensemble whose every request is counted, with a
// sleeper that takes no time.
class MisuseTest : public ::testing::Test {
 protected:
  struct Contender {
    std::shared_ptr<Faults> faults = std::make_shared<Faults>();
    test::FaultRule* sent = nullptr;  // fires for every request that reaches a keeper
    std::shared_ptr<RecordingSleeper> sleeper = std::make_shared<RecordingSleeper>();
    std::unique_ptr<Client> client;
  };

  ClientOptions options_for(Contender& c) {
    ClientOptions options;
    options.connect_string = "127.0.0.1:2181";  // not dialled: the factory is the fake's
    options.session_timeout = 4s;
    options.connection_timeout = 2s;
    options.keeper_factory = test::with_faults(ensemble_.factory(), c.faults);
    options.retry_policy = std::make_shared<RetryNTimes>(3, 10ms);
    options.sleeper = c.sleeper;
    options.logging.level = LogLevel::off;
    return options;
  }

  Contender& contender(const std::function<void(ClientOptions&)>& adjust = {}) {
    auto c = std::make_unique<Contender>();
    c->sent = &c->faults->on(OpKind::any).after([](const test::FaultCall&) {}).times(1'000'000);
    auto options = options_for(*c);
    if (adjust) adjust(options);
    c->client = std::make_unique<Client>(options);
    EXPECT_TRUE(c->client->block_until_connected(kWait));
    contenders_.push_back(std::move(c));
    return *contenders_.back();
  }

  Keeper& raw() {
    if (!raw_) raw_ = ensemble_.connect();
    return *raw_;
  }

  bool wait_queue_length(const std::string& dir, std::size_t n) {
    return test::wait_children(
        raw(), dir, [n](const auto& names) { return names.size() == n; }, kWait);
  }

  FakeEnsemble ensemble_;
  std::vector<std::unique_ptr<Contender>> contenders_;
  std::shared_ptr<Keeper> raw_;
};

const std::string kDir = "/locks/key";

// ---- Invalid paths, at every entry point that takes one.

TEST_F(MisuseTest, EveryBadPathIsRefusedByEveryLockBeforeAnythingIsSent) {
  auto& a = contender();
  for (const auto& bad : bad_lock_paths()) {
    expect_refused(
        bad, [&] { InterProcessMutex lock(*a.client, bad.path); }, "InterProcessMutex");
    expect_refused(
        bad, [&] { NonReentrantMutex lock(*a.client, bad.path); }, "NonReentrantMutex");
    // Whatever its place in the canonical order, a bad path refuses the whole set.
    expect_refused(
        bad,
        [&] {
          MultiLock both(*a.client, {"/a", bad.path});
        },
        "MultiLock");
    expect_refused(
        bad,
        [&] {
          MultiLock both(*a.client, {bad.path, "/zz"});
        },
        "MultiLock");
  }
  EXPECT_EQ(a.sent->fired(), 0);
  EXPECT_EQ(ensemble_.node_count(), 0u);
}

TEST_F(MisuseTest, TheLongestLockPathWorksAndItsNodesStayValid) {
  auto& a = contender();
  // Deep rather than wide, as real paths are.
  std::string dir = "/locks";
  while (dir.size() + 101 <= kMaxLockPathLength) dir += "/" + std::string(100, 'd');
  dir += "/" + std::string(kMaxLockPathLength - dir.size() - 1, 'k');
  ASSERT_EQ(dir.size(), kMaxLockPathLength);
  InterProcessMutex lock(*a.client, dir);
  ASSERT_TRUE(lock.try_acquire());
  EXPECT_LE(lock.grant().node_path().size(), kMaxPathLength);
  EXPECT_NO_THROW(validate_path(lock.grant().node_path()));
  EXPECT_TRUE(lock.release());
  EXPECT_TRUE(ensemble_.children_now(dir).empty());

  // One more character would let the server name a node we could then
  // neither watch nor delete: refused up front.
  const BadPath longer{dir + "k", "lock path may have"};
  expect_refused(
      longer, [&] { NonReentrantMutex refused(*a.client, longer.path); }, "NonReentrantMutex");
}

TEST_F(MisuseTest, LockFactoryRefusesBadRootsAndRootsTooLongForTheirKeys) {
  auto& a = contender();
  for (const auto& bad : bad_lock_paths()) {
    if (bad.reason == "lock path may have") continue;  // below, with the layout
    expect_refused(
        bad, [&] { LockFactory locks(*a.client, bad.path); }, "LockFactory");
  }
  // The root must leave room for the longest key, bucket and lock node.
  const std::size_t flat_max = kMaxLockPathLength - 1 - kMaxEncodedKey;
  EXPECT_NO_THROW(LockFactory(*a.client, "/" + std::string(flat_max - 1, 'r')));
  const BadPath flat{"/" + std::string(flat_max, 'r'), "LockFactory root"};
  expect_refused(
      flat, [&] { LockFactory locks(*a.client, flat.path); }, "LockFactory flat");
  const BadPath hashed{"/" + std::string(flat_max - 1, 'r'), "LockFactory root"};
  expect_refused(
      hashed, [&] { LockFactory locks(*a.client, hashed.path, LockLayout::hashed(16)); },
      "LockFactory hashed");
  EXPECT_EQ(a.sent->fired(), 0);
  // A root that passed makes valid lock paths for the longest keys. The first
  // lock made sends only the layout check: a read, then the root, its layout
  // record and the read that watches it, pipelined (recipes/layout_gate.hpp),
  // nothing else.
  LockFactory longest(*a.client, "/" + std::string(flat_max - 1, 'r'));
  auto lock = longest.mutex(std::string(1000, '%'));
  EXPECT_LE(lock->path().size(), kMaxLockPathLength);
  EXPECT_EQ(a.sent->fired(), 4);
  EXPECT_EQ(ensemble_.node_count(), 2u);
  EXPECT_TRUE(ensemble_.exists_now(longest.root() + "/" + std::string(kLayoutNodeName)));
}

TEST_F(MisuseTest, BadNamespacesNameTheOptionAndOpenNothing) {
  int sessions = 0;
  auto factory = ensemble_.factory();
  for (const std::string& ns :
       {std::string("app\x01"), std::string("app/\x7f"), std::string("a\0b", 3),
        std::string(kMaxPathLength, 'n'), std::string("zookeeper/app"), std::string("."),
        std::string(".."), std::string("app/."), std::string("app//x")}) {
    ClientOptions options;
    options.connect_string = "127.0.0.1:2181";
    options.namespace_path = ns;
    options.logging.level = LogLevel::off;
    options.keeper_factory = [&](const KeeperConfig& config, SessionCallback on_state) {
      ++sessions;
      return factory(config, std::move(on_state));
    };
    try {
      Client client(options);
      ADD_FAILURE() << "namespace \"" << shown(ns) << "\" accepted";
    } catch (const std::invalid_argument& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("ClientOptions::namespace_path"), std::string::npos) << message;
      EXPECT_NE(message.find(shown("/" + ns)), std::string::npos) << message;
    }
  }
  EXPECT_EQ(sessions, 0);
  EXPECT_EQ(ensemble_.node_count(), 0u);
}

// ---- Release without holding, twice, from a thread that does not hold.

template <class Lock>
class ReleaseMisuseTest : public MisuseTest {
 protected:
  std::unique_ptr<Lock> make(Client& client) {
    if constexpr (std::is_same_v<Lock, MultiLock>)
      return std::make_unique<Lock>(client, std::vector<std::string>{kDir, kDir + "-2"});
    else return std::make_unique<Lock>(client, kDir);
  }
};
using AllLockTypes = ::testing::Types<InterProcessMutex, NonReentrantMutex, MultiLock>;
TYPED_TEST_SUITE(ReleaseMisuseTest, AllLockTypes);

TYPED_TEST(ReleaseMisuseTest, ReleaseWithoutHoldingAndTwiceChangeNothingAndSendNothing) {
  auto& a = this->contender();
  auto lock = this->make(*a.client);
  EXPECT_FALSE(lock->release());
  EXPECT_NO_THROW(lock->unlock());  // the Lockable form too
  EXPECT_EQ(a.sent->fired(), 0);

  ASSERT_TRUE(lock->try_acquire());
  EXPECT_TRUE(lock->release());
  const int after_release = a.sent->fired();
  EXPECT_FALSE(lock->release());
  EXPECT_FALSE(lock->release());
  EXPECT_FALSE(lock->is_acquired_in_this_process());
  EXPECT_EQ(a.sent->fired(), after_release);
  EXPECT_TRUE(this->ensemble_.children_now(kDir).empty());
}

TYPED_TEST(ReleaseMisuseTest, ReleaseFromAnotherThreadFollowsTheLocksOwnershipRule) {
  auto& a = this->contender();
  auto lock = this->make(*a.client);
  ASSERT_TRUE(lock->try_acquire());
  const int before = a.sent->fired();
  bool released = false;
  std::thread other([&] { released = lock->release(); });
  other.join();
  if constexpr (std::is_same_v<TypeParam, NonReentrantMutex>) {
    // Documented: any thread of the process may release it.
    EXPECT_TRUE(released);
    EXPECT_FALSE(lock->is_acquired_in_this_process());
    EXPECT_TRUE(this->ensemble_.children_now(kDir).empty());
  } else {
    // Per thread: the other thread holds nothing, so nothing changes.
    EXPECT_FALSE(released);
    EXPECT_TRUE(lock->is_acquired_in_this_process());
    EXPECT_EQ(this->ensemble_.children_now(kDir).size(), 1u);
    EXPECT_EQ(a.sent->fired(), before);
    EXPECT_TRUE(lock->release());
    EXPECT_TRUE(this->ensemble_.children_now(kDir).empty());
  }
}

// ---- Reentrancy past its limit.

TEST_F(MisuseTest, ReentrancyStopsAtItsLimitWithoutChangingTheHolds) {
  auto& a = contender();
  {
    InterProcessMutex lock(*a.client, kDir);
    ASSERT_TRUE(lock.try_acquire());
    const int sent_for_first = a.sent->fired();
    for (std::uint32_t i = 1; i < kMaxReentrantHolds; ++i) lock.acquire();
    EXPECT_EQ(a.sent->fired(), sent_for_first);  // holds past the first are counted locally
    try {
      lock.acquire();
      ADD_FAILURE() << "acquire number " << kMaxReentrantHolds + 1 << " succeeded";
    } catch (const std::overflow_error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(kDir), std::string::npos) << message;
      EXPECT_NE(message.find(std::to_string(kMaxReentrantHolds)), std::string::npos) << message;
    }
    EXPECT_THROW((void)lock.try_acquire(), std::overflow_error);
    // The holds are as they were: one release leaves the lock held.
    EXPECT_TRUE(lock.release());
    EXPECT_TRUE(lock.is_owned_by_current_thread());
    EXPECT_EQ(ensemble_.children_now(kDir).size(), 1u);
  }  // destroyed with 999,999 holds: one delete
  EXPECT_TRUE(ensemble_.children_now(kDir).empty());
}

// ---- Destroying a lock while held.

TEST_F(MisuseTest, LocksDestroyedWhileHeldDeleteTheirNodes) {
  auto& a = contender();
  {
    InterProcessMutex mutex(*a.client, kDir + "/mutex");
    NonReentrantMutex semaphore(*a.client, kDir + "/semaphore");
    MultiLock multi(*a.client, {kDir + "/m1", kDir + "/m2"});
    // Held by a thread that has ended, reentrantly, and by this thread.
    std::thread([&] {
      ASSERT_TRUE(mutex.try_acquire());
      ASSERT_TRUE(mutex.try_acquire());
    }).join();
    ASSERT_TRUE(semaphore.try_acquire());
    ASSERT_TRUE(multi.try_acquire());
    for (const char* name : {"/mutex", "/semaphore", "/m1", "/m2"})
      EXPECT_EQ(ensemble_.children_now(kDir + name).size(), 1u) << name;
  }
  // Lock nodes only: the Client's removal of the now idle directories may
  // have a probe child in one of them at this moment.
  for (const char* name : {"/mutex", "/semaphore", "/m1", "/m2"})
    EXPECT_TRUE(detail::sorted_lock_nodes(ensemble_.children_now(kDir + name)).empty()) << name;
}

// ---- Destroying the Client while a lock is held, or while an acquire waits.

template <class Lock>
class ClientGoneTest : public MisuseTest {};
using LockTypes = ::testing::Types<InterProcessMutex, NonReentrantMutex>;
TYPED_TEST_SUITE(ClientGoneTest, LockTypes);

TYPED_TEST(ClientGoneTest, ALockOutlivingItsClientIsSafeAndSaysSo) {
  const auto threads_before = test::thread_baseline();
  auto doomed = std::make_unique<typename MisuseTest::Contender>();
  // Straight on the fake: its close ends armed watches on the closing thread.
  auto options = this->options_for(*doomed);
  options.keeper_factory = this->ensemble_.factory();
  doomed->client = std::make_unique<Client>(options);
  ASSERT_TRUE(doomed->client->block_until_connected(kWait));
  auto lock = std::make_unique<TypeParam>(*doomed->client, kDir);
  ASSERT_TRUE(lock->try_acquire());
  const Grant grant = lock->grant();
  ASSERT_EQ(this->ensemble_.children_now(kDir).size(), 1u);
  // The watch on our own node is armed once its reply is in. A Client closed
  // before that leaves the grant unaware that it is lost, for now:
  // GrantState::check_own_watch takes only no_node for "gone", where a reply
  // of closing or session_expired means the same.
  ASSERT_TRUE(this->ensemble_.wait_idle());

  doomed->client.reset();
  // The session is closed: its node is gone, and the holder is told.
  EXPECT_TRUE(this->ensemble_.children_now(kDir).empty());
  EXPECT_TRUE(grant.lost());
  EXPECT_EQ(grant.lost_reason(), LostReason::session_lost);
  EXPECT_TRUE(grant.lost_token().stop_requested());

  // The lock knows its Client is gone and never touches it.
  try {
    (void)lock->try_acquire_for(1s);
    ADD_FAILURE() << "acquired on a destroyed Client";
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::closing);
    EXPECT_EQ(e.path(), kDir);
  }
  EXPECT_THROW((void)lock->participant_nodes(), KeeperError);
  EXPECT_TRUE(lock->is_acquired_in_this_process());
  EXPECT_TRUE(lock->release());  // clears what it held; the session took the node
  EXPECT_FALSE(lock->release());
  lock.reset();
  EXPECT_TRUE(test::threads_back_to(threads_before, kWait));
}

TYPED_TEST(ClientGoneTest, ALockDestroyedAfterItsClientWhileHeldIsSafe) {
  auto doomed = std::make_unique<typename MisuseTest::Contender>();
  doomed->client = std::make_unique<Client>(this->options_for(*doomed));
  ASSERT_TRUE(doomed->client->block_until_connected(kWait));
  auto lock = std::make_unique<TypeParam>(*doomed->client, kDir);
  ASSERT_TRUE(lock->try_acquire());
  doomed->client.reset();
  lock.reset();  // held, Client gone: nothing to send, nothing to crash on
  EXPECT_TRUE(this->ensemble_.children_now(kDir).empty());
}

TYPED_TEST(ClientGoneTest, AnAcquireWaitingWhenItsClientIsDestroyedFailsWithClosing) {
  auto& holder = this->contender();
  TypeParam held(*holder.client, kDir);
  ASSERT_TRUE(held.try_acquire());

  const auto threads_before = test::thread_baseline();
  auto doomed = std::make_unique<typename MisuseTest::Contender>();
  doomed->client = std::make_unique<Client>(this->options_for(*doomed));
  ASSERT_TRUE(doomed->client->block_until_connected(kWait));
  TypeParam waiting(*doomed->client, kDir);
  TypeParam timed(*doomed->client, kDir);
  auto forever = std::async(std::launch::async, [&] { waiting.acquire(); });
  auto bounded = std::async(std::launch::async, [&] { return timed.try_acquire_for(kWait * 6); });
  ASSERT_TRUE(this->wait_queue_length(kDir, 3));

  const auto start = Clock::now();
  doomed->client.reset();
  const auto destroyed_in = Clock::now() - start;
  EXPECT_LT(destroyed_in, kWait);
  ASSERT_EQ(forever.wait_for(kWait), std::future_status::ready);
  try {
    forever.get();
    ADD_FAILURE() << "acquire() returned on a destroyed Client";
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::closing) << e.what();
    EXPECT_EQ(e.path(), kDir) << e.what();
  }
  ASSERT_EQ(bounded.wait_for(kWait), std::future_status::ready);
  try {
    EXPECT_FALSE(bounded.get());
    ADD_FAILURE() << "try_acquire_for() did not say the Client closed";
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::closing) << e.what();
    EXPECT_EQ(e.path(), kDir) << e.what();
  }
  // Only the holder's node is left, and the holder still holds.
  EXPECT_EQ(this->ensemble_.children_now(kDir).size(), 1u);
  EXPECT_FALSE(held.grant().lost());
  EXPECT_TRUE(test::threads_back_to(threads_before, kWait));
  EXPECT_TRUE(held.release());
}

// ---- A dead link, and credentials the ensemble refused.

TEST_F(MisuseTest, TimedAcquiresKeepTheirDeadlineWhileNotConnected) {
  auto& a = contender([](ClientOptions& options) {
    // Long enough that each bound below tells a wait for a connection from
    // none, with room for a busy machine's stalls.
    options.connection_timeout = 2s;
    options.retry_policy = std::make_shared<RetryNTimes>(1, 10ms);
    // Stay suspended, however long the test takes on a loaded machine.
    options.lost_when_suspended_too_long = false;
  });
  test::Latch suspended;
  a.client->add_listener([&](ConnectionState s) {
    if (s == ConnectionState::suspended) suspended.open();
  });
  const auto session = a.client->keeper()->session_id();
  ensemble_.disconnect(session);
  ASSERT_TRUE(suspended.wait(kWait));
  // connection_timeout is 2 s: a timed acquire must not wait that long.
  InterProcessMutex mutex(*a.client, kDir);
  MultiLock multi(*a.client, {kDir + "-a", kDir + "-b"});
  {
    const auto start = Clock::now();
    EXPECT_FALSE(mutex.try_acquire());
    EXPECT_LT(Clock::now() - start, 1500ms);
  }
  {
    const auto start = Clock::now();
    EXPECT_FALSE(mutex.try_acquire_for(100ms));
    const auto took = Clock::now() - start;
    EXPECT_GE(took, 100ms);
    EXPECT_LT(took, 1500ms);
  }
  {
    const auto start = Clock::now();
    EXPECT_FALSE(multi.try_acquire_for(100ms));
    EXPECT_LT(Clock::now() - start, 1500ms);
  }
  {
    // Longer than connection_timeout: it keeps waiting, to its own deadline.
    const auto start = Clock::now();
    EXPECT_FALSE(mutex.try_acquire_for(2300ms));
    const auto took = Clock::now() - start;
    EXPECT_GE(took, 2300ms);
    EXPECT_LT(took, 3500ms);
  }
  // acquire() has no deadline: the retry policy (1 retry) gives up, and
  // the error names the lock and what it waited for.
  const auto delays_before = a.sleeper->delays().size();
  try {
    mutex.acquire();
    ADD_FAILURE() << "acquired without a connection";
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::connection_loss);
    EXPECT_EQ(e.path(), kDir);
    EXPECT_NE(std::string(e.what()).find("not connected to 127.0.0.1:2181"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(a.sleeper->delays().size(), delays_before + 1);
  ensemble_.reconnect(session);
  ASSERT_TRUE(a.client->block_until_connected(kWait));
  EXPECT_EQ(ensemble_.node_count(), 0u);
  ASSERT_TRUE(mutex.try_acquire_for(kWait));
  EXPECT_TRUE(mutex.release());
}

// The factory turns the fake's expiry into what the C client reports when the
// ensemble refuses the credentials, and every later request fails so.
class AuthFailedTest : public MisuseTest {
 protected:
  Contender& refused_contender() {
    return contender([this](ClientOptions& options) {
      auto inner = options.keeper_factory;
      options.keeper_factory = [this, inner](const KeeperConfig& config, SessionCallback on_state) {
        return inner(config, [this, on_state](SessionState s) {
          on_state(refuse_ && s == SessionState::expired ? SessionState::auth_failed : s);
        });
      };
    });
  }
  // Returns once the Client has announced lost.
  void refuse(Contender& c) {
    test::Latch lost;
    const auto id = c.client->add_listener([&](ConnectionState s) {
      if (s == ConnectionState::lost) lost.open();
    });
    c.faults->clear();
    c.faults->on(OpKind::any).fail(Errc::auth_failed).times(1'000'000);
    refuse_ = true;
    ensemble_.expire(c.client->keeper()->session_id());
    EXPECT_TRUE(lost.wait(kWait));
    c.client->remove_listener(id);
  }
  std::atomic<bool> refuse_{false};
};

TEST_F(AuthFailedTest, AcquireFailsAtOnceNamingTheLockAndDoesNotRetry) {
  auto& a = refused_contender();
  refuse(a);
  ASSERT_FALSE(a.client->block_until_connected(kWait));  // returns at once: final
  InterProcessMutex mutex(*a.client, kDir);
  NonReentrantMutex semaphore(*a.client, kDir);
  const auto start = Clock::now();
  for (const auto& attempt : std::vector<std::function<void()>>{
           [&] { mutex.acquire(); }, [&] { (void)mutex.try_acquire(); },
           [&] { (void)semaphore.try_acquire_for(kWait); }, [&] { semaphore.acquire(); }}) {
    try {
      attempt();
      ADD_FAILURE() << "acquired with refused credentials";
    } catch (const KeeperError& e) {
      EXPECT_EQ(e.errc(), Errc::auth_failed) << e.what();
      EXPECT_EQ(e.path(), kDir);
      EXPECT_NE(std::string(e.what()).find("authentication failed on 127.0.0.1:2181"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_LT(Clock::now() - start, 1s);
  EXPECT_TRUE(a.sleeper->delays().empty()) << "auth_failed is final: no retry";
}

TEST_F(AuthFailedTest, AWaitingAcquireFailsWhenTheCredentialsAreRefused) {
  auto& holder = contender();
  InterProcessMutex held(*holder.client, kDir);
  ASSERT_TRUE(held.try_acquire());
  auto& a = refused_contender();
  InterProcessMutex waiting(*a.client, kDir);
  auto waiter = std::async(std::launch::async, [&] { waiting.acquire(); });
  ASSERT_TRUE(wait_queue_length(kDir, 2));
  const auto start = Clock::now();
  refuse(a);
  ASSERT_EQ(waiter.wait_for(kWait), std::future_status::ready);
  const auto failed_in = Clock::now() - start;
  // Not a connection_timeout per retry while it waits for a session that
  // will never come.
  EXPECT_LT(failed_in, 1s);
  try {
    waiter.get();
    ADD_FAILURE() << "acquired with refused credentials";
  } catch (const KeeperError& e) {
    EXPECT_EQ(e.errc(), Errc::auth_failed) << e.what();
    EXPECT_TRUE(e.path().starts_with(kDir)) << e.what();
  }
  EXPECT_EQ(ensemble_.children_now(kDir).size(), 1u);  // the holder's
  EXPECT_TRUE(held.release());
}

// ---- Locks inside a connection state listener.

TEST_F(MisuseTest, InAListenerAcquireIsRefusedAtOnceAndReleaseWorks) {
  auto& a = contender();
  InterProcessMutex mutex(*a.client, kDir + "-mutex");
  NonReentrantMutex semaphore(*a.client, kDir + "-semaphore");
  MultiLock multi(*a.client, {kDir + "-m1", kDir + "-m2"});
  ASSERT_TRUE(mutex.try_acquire());
  ASSERT_TRUE(semaphore.try_acquire());
  const int sent_before = a.sent->fired();

  struct Seen {
    std::vector<std::string> refusals;
    bool mutex_released = true;
    bool semaphore_released = false;
  };
  std::promise<Seen> in_listener;
  std::atomic<bool> done{false};
  a.client->add_listener([&](ConnectionState state) {
    if (state != ConnectionState::reconnected || done.exchange(true)) return;
    Seen seen;
    for (const auto& attempt : std::vector<std::function<void()>>{
             [&] { mutex.acquire(); }, [&] { (void)mutex.try_acquire(); },
             [&] { (void)semaphore.try_acquire_for(kWait); }, [&] { multi.acquire(); },
             [&] { (void)multi.try_acquire_for(kWait); }}) {
      try {
        attempt();
      } catch (const std::logic_error& e) {
        seen.refusals.push_back(e.what());
      }
    }
    seen.mutex_released = mutex.release();  // not this thread's: refused
    seen.semaphore_released = semaphore.release();
    in_listener.set_value(std::move(seen));
  });
  test::Latch heard;
  a.client->add_listener([&](ConnectionState state) {
    if (state == ConnectionState::reconnected) heard.open();
  });
  const auto session = a.client->keeper()->session_id();
  ensemble_.disconnect(session);
  ensemble_.reconnect(session);

  auto future = in_listener.get_future();
  ASSERT_EQ(future.wait_for(kWait), std::future_status::ready);
  const Seen seen = future.get();
  ASSERT_EQ(seen.refusals.size(), 5u);
  for (const auto& message : seen.refusals) {
    EXPECT_NE(message.find("listener thread"), std::string::npos) << message;
    EXPECT_NE(message.find(kDir), std::string::npos) << message;
  }
  EXPECT_FALSE(seen.mutex_released);
  EXPECT_TRUE(seen.semaphore_released);
  // The other listeners went on. Nothing was created; the semaphore's node
  // was deleted: by the release, after a read proving it ours when the
  // reconnect left its version unproven, so not always before the listener
  // returns; wait for it, on a watch.
  EXPECT_TRUE(heard.wait(kWait));
  EXPECT_GT(a.sent->fired(), sent_before);
  EXPECT_TRUE(test::wait_children(
      *a.client->keeper(), kDir + "-semaphore",
      [](const std::vector<std::string>& names) { return names.empty(); }, kWait));
  EXPECT_EQ(ensemble_.children_now(kDir + "-mutex").size(), 1u);
  EXPECT_FALSE(ensemble_.exists_now(kDir + "-m1"));
  EXPECT_FALSE(ensemble_.exists_now(kDir + "-m2"));
  EXPECT_TRUE(mutex.release());
}

}  // namespace
}  // namespace zkr
