#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "support/fake_keeper.hpp"
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
  EXPECT_EQ(locks.bucket_for("train-1"), LockFactory(client(), "/app/locks", LockLayout::hashed(256))
                                             .bucket_for("train-1"));
  std::map<std::string, int> load;
  constexpr int kKeys = 256 * 100;
  for (int i = 0; i < kKeys; ++i) ++load[locks.bucket_for("key-" + std::to_string(i))];
  EXPECT_EQ(load.size(), 256u);
  for (const auto& [bucket, n] : load) {
    EXPECT_EQ(bucket.size(), std::string("/app/locks/xx").size()) << bucket;
    EXPECT_GT(n, 50) << bucket;   // mean 100: a bad hash would pile keys up
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
  auto a = locks.semaphore_mutex("order/42");
  auto b = locks.semaphore_mutex("order/42");
  auto c = locks.semaphore_mutex("order/43");
  ASSERT_TRUE(a->try_acquire());
  EXPECT_FALSE(b->try_acquire());
  EXPECT_TRUE(c->try_acquire());
  a->release();
  c->release();
  EXPECT_TRUE(ensemble_.children_now(locks.path_for("order/42")).empty());
}

}  // namespace
}  // namespace zkr
