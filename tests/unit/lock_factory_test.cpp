#include <gtest/gtest.h>

#include <functional>
#include <future>
#include <map>
#include <random>
#include <set>

#include "support/fake_keeper.hpp"
#include "support/fault_keeper.hpp"
#include "support/waits.hpp"
#include "zkr/cleanup.hpp"
#include "zkr/lock_factory.hpp"
#include "zkr/path.hpp"

namespace zkr {
namespace {

TEST(EncodeKey, KeepsPlainKeysAndEscapesTheRest) {
  EXPECT_EQ(encode_key("9f86d081884c7d65"), "9f86d081884c7d65");
  EXPECT_EQ(encode_key("train-42_x"), "train-42_x");
  EXPECT_EQ(encode_key("a/b"), "a%2Fb");
  EXPECT_EQ(encode_key("."), "%2E");
  EXPECT_EQ(encode_key(".."), "%2E%2E");
  EXPECT_EQ(encode_key("100%"), "100%25");
  EXPECT_EQ(encode_key(std::string("\0\x7f", 2)), "%00%7F");
  EXPECT_EQ(encode_key("zookeeper"), "zookeeper");  // harmless below a root
  EXPECT_THROW(encode_key(""), std::invalid_argument);
}

TEST(EncodeKey, RoundTripsAndStaysUniqueForArbitraryBytes) {
  std::mt19937 rng(7);
  std::set<std::string> names;
  std::set<std::string> keys;
  for (int i = 0; i < 5000; ++i) {
    std::string key(1 + rng() % 40, '\0');
    for (auto& c : key) c = static_cast<char>(rng() % 256);
    if (!keys.insert(key).second) continue;
    const std::string name = encode_key(key);
    ASSERT_NO_THROW(validate_node_name(name)) << name;
    EXPECT_TRUE(names.insert(name).second) << "two keys share " << name;
    EXPECT_EQ(decode_key(name), key);
  }
}

TEST(EncodeKey, LongKeysAreCutAndHashedButStayUnique) {
  const std::string a(500, 'a');
  std::string b = a;
  b.back() = 'b';
  const std::string na = encode_key(a), nb = encode_key(b);
  EXPECT_LE(na.size(), kMaxEncodedKey);
  EXPECT_NE(na, nb);
  EXPECT_NE(na.find('~'), std::string::npos);
  EXPECT_EQ(decode_key(na), std::nullopt);
  // Never cut inside an escape.
  const std::string slashes(300, '/');
  const std::string ns = encode_key(slashes);
  ASSERT_NO_THROW(validate_node_name(ns));
  const auto tilde = ns.find('~');
  EXPECT_EQ(tilde % 3, 0u) << ns;
}

TEST(DecodeKey, RefusesNamesEncodeKeyCannotMake) {
  EXPECT_EQ(decode_key("a%2"), std::nullopt);
  EXPECT_EQ(decode_key("a%2f"), std::nullopt);  // lower case is not ours
  EXPECT_EQ(decode_key("a.b"), std::nullopt);
  EXPECT_EQ(decode_key(""), std::nullopt);
}

TEST(LockLayout, HashedForKeepsBucketsAQuarterFull) {
  EXPECT_EQ(LockLayout::hashed_for(0).buckets, 1u);
  EXPECT_EQ(LockLayout::hashed_for(2500).buckets, 1u);
  EXPECT_EQ(LockLayout::hashed_for(2501).buckets, 2u);
  EXPECT_EQ(LockLayout::hashed_for(1'000'000).buckets, 512u);  // 400 needed, next power of two
  EXPECT_EQ(LockLayout::hashed_for(1'000'000, 1000).buckets, 4096u);
  EXPECT_THROW(LockLayout::hashed(0), std::invalid_argument);
}

class LockFactoryTest : public ::testing::Test {
 protected:
  Client& client() {
    if (!client_) {
      ClientOptions options;
      options.connect_string = "127.0.0.1:2181";
      options.keeper_factory = ensemble_.factory();
      client_ = std::make_unique<Client>(options);
    }
    return *client_;
  }
  test::FakeEnsemble ensemble_;
  std::unique_ptr<Client> client_;
};

TEST_F(LockFactoryTest, FlatLayoutPutsKeysUnderTheRoot) {
  LockFactory locks(client(), "/app/locks");
  EXPECT_EQ(locks.path_for("a/b"), "/app/locks/a%2Fb");
  EXPECT_EQ(locks.bucket_for("a"), "");
  EXPECT_EQ(locks.mutex("k")->path(), "/app/locks/k");
}

TEST_F(LockFactoryTest, HashedLayoutIsStableAndSpreadsKeysEvenly) {
  LockFactory locks(client(), "/app/locks", LockLayout::hashed(256));
  // A key's bucket must never change between processes or releases.
  EXPECT_EQ(locks.path_for("train-1"), locks.bucket_for("train-1") + "/train-1");
  EXPECT_EQ(locks.bucket_for("train-1"),
            LockFactory(client(), "/app/locks", LockLayout::hashed(256)).bucket_for("train-1"));
  std::map<std::string, int> load;
  constexpr int kKeys = 256 * 100;
  for (int i = 0; i < kKeys; ++i) ++load[locks.bucket_for("key-" + std::to_string(i))];
  EXPECT_EQ(load.size(), 256u);
  for (const auto& [bucket, n] : load) {
    EXPECT_EQ(bucket.size(), std::string("/app/locks/xx").size()) << bucket;
    EXPECT_GT(n, 50) << bucket;  // mean 100: a bad hash would pile keys up
    EXPECT_LT(n, 160) << bucket;
  }
}

TEST_F(LockFactoryTest, RefusesTheRootAndBadPaths) {
  EXPECT_THROW(LockFactory(client(), "/"), std::invalid_argument);
  EXPECT_THROW(LockFactory(client(), "locks"), std::invalid_argument);
  EXPECT_THROW(LockFactory(client(), "/locks/"), std::invalid_argument);
}

TEST_F(LockFactoryTest, LocksByKeyExcludeEachOther) {
  ASSERT_TRUE(client().block_until_connected(std::chrono::seconds(5)));
  LockFactory locks(client(), "/app/locks", LockLayout::hashed(16));
  auto a = locks.non_reentrant_mutex("order/42");
  auto b = locks.non_reentrant_mutex("order/42");
  auto c = locks.non_reentrant_mutex("order/43");
  ASSERT_TRUE(a->try_acquire());
  EXPECT_FALSE(b->try_acquire());
  EXPECT_TRUE(c->try_acquire());
  a->release();
  c->release();
  EXPECT_TRUE(ensemble_.children_now(locks.path_for("order/42")).empty());
}

// The first lock a factory makes records its layout under the root; a factory
// with the same layout agrees, one with another refuses (naming the root, the
// recorded layout and its own), for every later lock too.
TEST_F(LockFactoryTest, ADifferentLayoutOnTheSameRootIsRefused) {
  ASSERT_TRUE(client().block_until_connected(std::chrono::seconds(5)));
  const std::string record = "/app/locks/" + std::string(kLayoutNodeName);
  LockFactory first(client(), "/app/locks", LockLayout::hashed(16));
  EXPECT_FALSE(ensemble_.exists_now(record));  // the constructor sends nothing
  auto a = first.non_reentrant_mutex("order/42");
  EXPECT_EQ(ensemble_.data_now(record), "zkr-lock-layout v1 hashed 16");
  EXPECT_EQ(ensemble_.exists_now(record)->ephemeral_owner, 0);  // persistent

  LockFactory same(client(), "/app/locks", LockLayout::hashed(16));
  EXPECT_NO_THROW(same.check_layout());
  auto b = same.non_reentrant_mutex("order/42");
  ASSERT_TRUE(a->try_acquire());
  EXPECT_FALSE(b->try_acquire());  // one key, one path: they exclude each other
  a->release();

  LockFactory other(client(), "/app/locks", LockLayout::hashed(64));
  try {
    (void)other.mutex("order/42");
    FAIL() << "a factory with another layout made a lock";
  } catch (const LayoutMismatch& e) {
    EXPECT_EQ(e.root(), "/app/locks");
    EXPECT_EQ(e.recorded(), "zkr-lock-layout v1 hashed 16");
    EXPECT_EQ(e.ours(), "zkr-lock-layout v1 hashed 64");
    const std::string what = e.what();
    for (const auto* part : {"/app/locks", "hashed 16", "hashed 64"})
      EXPECT_NE(what.find(part), std::string::npos) << what;
  }
  EXPECT_THROW((void)other.non_reentrant_mutex("x"), LayoutMismatch);
  EXPECT_THROW((void)other.multi_lock({"x", "y"}), LayoutMismatch);
  EXPECT_THROW(other.check_layout(), LayoutMismatch);
  EXPECT_THROW((void)LockFactory(client(), "/app/locks").mutex("x"), LayoutMismatch);  // flat
  EXPECT_EQ(ensemble_.data_now(record), "zkr-lock-layout v1 hashed 16");               // untouched
  // Another root is another record.
  EXPECT_NO_THROW((void)LockFactory(client(), "/app/other", LockLayout::hashed(64)).mutex("x"));
}

// check_layout() makes the root as a lock makes its directories, with the
// lock's ACL (open by default, so that every identity can read the record),
// and the record with the same ACL.
TEST_F(LockFactoryTest, CheckLayoutCreatesTheRootAndRecordsTheLayout) {
  ASSERT_TRUE(client().block_until_connected(std::chrono::seconds(5)));
  LockFactory flat(client(), "/deep/er/root");
  flat.check_layout();
  EXPECT_EQ(ensemble_.data_now("/deep/er/root/" + std::string(kLayoutNodeName)),
            "zkr-lock-layout v1 flat");
  // (Containers look persistent to clients, the fake's as the server's: the
  // mode cannot be seen here; the ACL can.)
  for (const auto* path : {"/deep", "/deep/er", "/deep/er/root", "/deep/er/root/_zkr.layout"})
    EXPECT_EQ(ensemble_.acl_now(path), open_acl_unsafe()) << path;
  flat.check_layout();  // idempotent
}

// Made while disconnected, a lock is made unchecked (try_acquire promises one
// attempt, not a wait); the next lock made while connected checks.
TEST_F(LockFactoryTest, LocksMadeWithoutAConnectionAreCheckedByTheNextOne) {
  ASSERT_TRUE(client().block_until_connected(std::chrono::seconds(5)));
  auto suspended = std::make_shared<test::Latch>();  // the listener may outlive this test body
  client().add_listener([suspended](ConnectionState s) {
    if (s == ConnectionState::suspended) suspended->open();
  });
  const auto id = client().keeper()->session_id();
  ensemble_.disconnect(id);
  ASSERT_TRUE(suspended->wait(std::chrono::seconds(5)));
  ASSERT_FALSE(client().is_connected());
  LockFactory locks(client(), "/app/locks");
  EXPECT_NO_THROW((void)locks.mutex("k"));
  EXPECT_FALSE(ensemble_.exists_now("/app/locks/" + std::string(kLayoutNodeName)));
  ensemble_.reconnect(id);
  ASSERT_TRUE(client().block_until_connected(std::chrono::seconds(5)));
  (void)locks.mutex("k");
  EXPECT_EQ(ensemble_.data_now("/app/locks/" + std::string(kLayoutNodeName)),
            "zkr-lock-layout v1 flat");
}

// The record is not a lock directory: no key's path is it, a scan shows no
// lock for it, and the cleaner leaves it alone.
TEST_F(LockFactoryTest, TheRecordIsNeverTakenForALock) {
  ASSERT_TRUE(client().block_until_connected(std::chrono::seconds(5)));
  LockFactory locks(client(), "/app/locks");
  EXPECT_NE(locks.path_for(kLayoutNodeName), "/app/locks/" + std::string(kLayoutNodeName));
  auto held = locks.non_reentrant_mutex("k");
  ASSERT_TRUE(held->try_acquire());
  std::vector<std::string> found;
  scan_locks(client(), "/app/locks", {}, [&](const LockInfo& info) { found.push_back(info.path); });
  EXPECT_EQ(found, std::vector<std::string>{"/app/locks/k"});
  held->release();
  (void)clean_lock_root(client(), "/app/locks", {});
  EXPECT_TRUE(ensemble_.exists_now("/app/locks/" + std::string(kLayoutNodeName)));
}

// ---- The check before the first grant, and a record changed under us.

namespace layout_gate {

// The ordinary order: client, factory, lock, acquire; here the Client has no
// connection yet when the lock is made (so making it checks nothing), and
// another process recorded another layout. On e527dab the acquire was
// granted at the flat path while the hashed layout's holders used another.
TEST_F(LockFactoryTest, ALockMadeBeforeTheConnectionChecksTheLayoutBeforeItsGrant) {
  ASSERT_TRUE(client().block_until_connected(std::chrono::seconds(5)));
  LockFactory hashed(client(), "/app/locks", LockLayout::hashed(16));
  hashed.check_layout();
  auto suspended = std::make_shared<test::Latch>();
  client().add_listener([suspended](ConnectionState s) {
    if (s == ConnectionState::suspended) suspended->open();
  });
  const auto id = client().keeper()->session_id();
  ensemble_.disconnect(id);
  ASSERT_TRUE(suspended->wait(std::chrono::seconds(5)));
  LockFactory flat(client(), "/app/locks");
  auto mutex = flat.mutex("order/42");  // no connection: nothing checked yet
  auto semaphore = flat.non_reentrant_mutex("order/43");
  auto multi = flat.multi_lock({"order/44", "order/45"});
  ensemble_.reconnect(id);
  ASSERT_TRUE(client().block_until_connected(std::chrono::seconds(5)));
  EXPECT_THROW((void)mutex->try_acquire_for(std::chrono::seconds(5)), LayoutMismatch);
  EXPECT_THROW((void)semaphore->try_acquire(), LayoutMismatch);
  EXPECT_THROW((void)multi->try_acquire_for(std::chrono::seconds(5)), LayoutMismatch);
  // The async form too: it ends with the refusal, holding nothing.
  std::promise<std::exception_ptr> ended;
  mutex->async_acquire_guard(std::chrono::steady_clock::now() + std::chrono::seconds(5), {},
                             [&ended](std::exception_ptr error, LockGuard guard) {
                               ended.set_value(guard ? nullptr : error);
                             });
  auto outcome = ended.get_future();
  ASSERT_EQ(outcome.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  const auto error = outcome.get();
  ASSERT_TRUE(error);
  EXPECT_THROW(std::rethrow_exception(error), LayoutMismatch);
  // Nothing of ours was left queued, nor any lock path made for the flat layout.
  EXPECT_FALSE(ensemble_.exists_now(flat.path_for("order/42")));
  EXPECT_TRUE(ensemble_.ephemerals_of(client().keeper()->session_id()).empty());
}

// What a foreign client may do to the record, each on a fresh root.
struct Tamper {
  const char* what;
  std::function<void(Keeper&, const std::string&)> apply;
  bool another_layout;  // LayoutMismatch; else LayoutRecordChanged
};

TEST_F(LockFactoryTest, AForeignChangeToTheRecordIsRefusedNeverFollowed) {
  ASSERT_TRUE(client().block_until_connected(std::chrono::seconds(5)));
  auto foreign = ensemble_.connect();
  const std::vector<Tamper> tampers = {
      {"rewritten to another layout",
       [](Keeper& k, const std::string& r) { (void)k.set(r, "zkr-lock-layout v1 hashed 16"); },
       true},
      {"rewritten to garbage", [](Keeper& k, const std::string& r) { (void)k.set(r, "\x01??"); },
       true},
      {"rewritten to the same text",
       [](Keeper& k, const std::string& r) { (void)k.set(r, "zkr-lock-layout v1 flat"); }, false},
      {"deleted and made again",
       [](Keeper& k, const std::string& r) {
         k.remove(r);
         (void)k.create(r, "zkr-lock-layout v1 flat");
       },
       false},
      {"deleted", [](Keeper& k, const std::string& r) { k.remove(r); }, false},
  };
  int round = 0;
  for (const auto& tamper : tampers) {
    SCOPED_TRACE(tamper.what);
    const std::string root = "/tamper/" + std::to_string(round++);
    LockFactory locks(client(), root);
    auto mutex = locks.mutex("k");
    ASSERT_TRUE(mutex->try_acquire());  // checked, recorded, granted
    mutex->release();
    tamper.apply(*foreign, root + "/" + std::string(kLayoutNodeName));
    ASSERT_TRUE(ensemble_.wait_idle());
    try {
      (void)mutex->try_acquire_for(std::chrono::seconds(5));
      FAIL() << "an acquire followed the changed record";
    } catch (const LayoutRecordChanged& e) {
      EXPECT_FALSE(tamper.another_layout) << e.what();
      EXPECT_NE(std::string(e.what()).find(root), std::string::npos) << e.what();
    } catch (const LayoutMismatch& e) {
      EXPECT_TRUE(tamper.another_layout) << e.what();
    }
    // Final: a new lock of the factory refuses too, and nothing of ours queues.
    EXPECT_THROW((void)locks.mutex("j")->try_acquire(), LayoutMismatch);
    EXPECT_TRUE(ensemble_.children_now(locks.path_for("k")).empty());
  }
}

// The cost: once proven in a session, acquires send no read of the record
// (its watch stands); the read comes back only after the watch fired.
TEST_F(LockFactoryTest, AProvenLayoutCostsLaterAcquiresNoRequest) {
  auto faults = std::make_shared<test::Faults>();
  ClientOptions options;
  options.connect_string = "127.0.0.1:2181";
  options.keeper_factory = test::with_faults(ensemble_.factory(), faults);
  Client counted(options);
  ASSERT_TRUE(counted.block_until_connected(std::chrono::seconds(5)));
  const auto record = "/app/locks/" + std::string(kLayoutNodeName);
  auto& reads = faults->on(test::OpKind::get, record).after([](const test::FaultCall&) {});
  reads.times(1000);
  LockFactory locks(counted, "/app/locks");
  auto mutex = locks.mutex("k");
  EXPECT_EQ(reads.fired(), 2);  // none recorded: the record's create, then a read
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(mutex->try_acquire());
    mutex->release();
  }
  EXPECT_EQ(reads.fired(), 2);  // nothing more for five acquires
  auto other = locks.non_reentrant_mutex("j");
  ASSERT_TRUE(other->try_acquire());
  other->release();
  EXPECT_EQ(reads.fired(), 2);
  (void)ensemble_.connect()->set(record, "zkr-lock-layout v1 flat");  // same text, still a change
  ASSERT_TRUE(ensemble_.wait_idle());
  EXPECT_THROW((void)mutex->try_acquire(), LayoutRecordChanged);
  EXPECT_EQ(reads.fired(), 3);
}

}  // namespace layout_gate

}  // namespace
}  // namespace zkr
