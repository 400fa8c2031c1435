// The servers' record reader (server_record.hpp) on transaction logs written
// here in ZooKeeper's format: lock nodes born in a create or a multi, ended by
// a delete or by their session's close; other paths ignored; one transaction
// found in two servers' logs counted once. No server. (The chaos run reads
// real logs: a grant whose node the reader missed fails the run.)
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "server_record.hpp"

namespace zkr::chaos {
namespace {

// Jute, big-endian.
struct Out {
  std::string bytes;
  Out& i32(std::int32_t v) {
    for (int s = 24; s >= 0; s -= 8)
      bytes.push_back(static_cast<char>((static_cast<std::uint32_t>(v) >> s) & 0xff));
    return *this;
  }
  Out& i64(std::int64_t v) {
    for (int s = 56; s >= 0; s -= 8)
      bytes.push_back(static_cast<char>((static_cast<std::uint64_t>(v) >> s) & 0xff));
    return *this;
  }
  Out& boolean(bool v) {
    bytes.push_back(v ? 1 : 0);
    return *this;
  }
  Out& buffer(const std::string& v) {
    i32(static_cast<std::int32_t>(v.size()));
    bytes += v;
    return *this;
  }
};

std::string create_txn(const std::string& path, bool ephemeral) {
  Out o;
  o.buffer(path)
      .buffer("data")
      .i32(1)
      .i32(31)
      .buffer("world")
      .buffer("anyone")
      .boolean(ephemeral)
      .i32(0);
  return o.bytes;
}

std::string delete_txn(const std::string& path) { return Out().buffer(path).bytes; }

std::string multi_txn(const std::vector<std::pair<int, std::string>>& parts) {
  Out o;
  o.i32(static_cast<std::int32_t>(parts.size()));
  for (const auto& [type, body] : parts) o.i32(type).buffer(body);
  return o.bytes;
}

std::uint32_t adler32(const std::string& bytes) {
  std::uint32_t a = 1, b = 0;
  for (const unsigned char c : bytes) {
    a = (a + c) % 65521;
    b = (b + a) % 65521;
  }
  return (b << 16) | a;
}

struct Txn {
  std::int64_t session;
  std::int64_t zxid;
  std::int64_t time_ms;
  int type;
  std::string body;
};

// A log file: header, records (checksum, entry, 'B'), then preallocated zeros.
std::string write_log(const std::string& name, const std::vector<Txn>& txns) {
  Out o;
  o.i32(0x5a4b4c47).i32(2).i64(0);
  for (const auto& t : txns) {
    Out entry;
    entry.i64(t.session).i32(7).i64(t.zxid).i64(t.time_ms).i32(t.type);
    entry.bytes += t.body;
    o.i64(adler32(entry.bytes)).buffer(entry.bytes);
    o.bytes.push_back('B');
  }
  o.bytes.append(4096, '\0');
  const auto path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path, std::ios::binary) << o.bytes;
  return path;
}

TEST(ChaosServerRecord, ReadsLockNodeLivesFromTransactionLogs) {
  const std::string n0 = "/chaos/locks/k0/_c_g-lock-0000000001";
  const std::string n1 = "/chaos/locks/k1/_c_h-lock-0000000002";
  const std::vector<Txn> all = {
      {0x1, 0x100000001, 1000, -10, Out().i32(4000).bytes},  // createSession
      {0x1, 0x100000002, 1001, 14,
       multi_txn({{1, create_txn(n0, true)}, {5, "x"}})},                 // a lock node in a multi
      {0x1, 0x100000003, 1002, 1, create_txn("/chaos/locks/k0", false)},  // a directory
      {0x2, 0x100000004, 1003, 15, create_txn(n1, true)},                 // create2
      {0x3, 0x100000005, 1004, 2, delete_txn(n0)},  // another client deletes n0
      {0x2, 0x100000006, 1005, -11, ""},            // n1's session closes
      {0x4, 0x100000007, 1006, 1, create_txn("/elsewhere/_c_x-lock-0000000001", true)},
  };
  // Server 1 has everything, in two files; server 2 came back by a snapshot
  // and lacks the first three; server 3, a leader cut off, logged n0's
  // deletion at 1003 in an epoch no quorum followed, and nothing after.
  const std::vector<Txn> first(all.begin(), all.begin() + 4), rest(all.begin() + 4, all.end());
  const std::vector<Txn> from_snapshot(all.begin() + 3, all.end());
  const std::vector<Txn> cut_off = {all[0], all[1], {0x9, 0x100000004, 1003, 2, delete_txn(n0)}};
  const auto record =
      read_txn_logs({{write_log("zkr-txn-1a.log", first), write_log("zkr-txn-1b.log", rest)},
                     {write_log("zkr-txn-2.log", from_snapshot)},
                     {write_log("zkr-txn-3.log", cut_off)}},
                    "/chaos/locks/");
  EXPECT_TRUE(record.problems.empty()) << record.problems.front();
  EXPECT_EQ(record.transactions, 6);  // the directory's create: one copy only, left out
  EXPECT_EQ(record.unconfirmed, 1);
  ASSERT_EQ(record.lives.size(), 2u);
  const auto& a = record.lives[0];
  EXPECT_EQ(a.path, n0);
  EXPECT_EQ(a.czxid, 0x100000002);
  EXPECT_EQ(a.created, 1001 * 1'000'000LL);
  EXPECT_EQ(a.owner, 0x1);
  EXPECT_EQ(a.end, "delete");
  EXPECT_EQ(a.deleter, 0x3);
  ASSERT_TRUE(a.deleted.has_value());
  EXPECT_EQ(*a.deleted, 1004 * 1'000'000LL);
  const auto& b = record.lives[1];
  EXPECT_EQ(b.path, n1);
  EXPECT_EQ(b.end, "session_closed");
  EXPECT_EQ(b.deleter, 0x2);
  EXPECT_EQ(b.dzxid, 0x100000006);
}

// A release's multi whose directory delete failed (not empty): the node's
// delete in it did not happen either. The leader logs the parts already
// marked error, the followers as proposed.
TEST(ChaosServerRecord, TheLeadersCopyOfAFailedMultiAgreesWithTheFollowers) {
  const std::string n0 = "/chaos/locks/k0/_c_g-lock-0000000001";
  const auto error = Out().i32(-111).bytes;
  const auto follower = write_log(
      "zkr-txn-e.log", {{0x1, 0x10, 1000, 1, create_txn(n0, true)},
                        {0x1, 0x11, 1001, 14, multi_txn({{2, delete_txn(n0)}, {-1, error}})}});
  const auto leader = write_log(
      "zkr-txn-f.log", {{0x1, 0x10, 1000, 1, create_txn(n0, true)},
                        {0x1, 0x11, 1001, 14, multi_txn({{-1, delete_txn(n0)}, {-1, error}})}});
  const auto record = read_txn_logs({{follower}, {leader}}, "/chaos/locks/");
  EXPECT_TRUE(record.problems.empty()) << record.problems.front();
  ASSERT_EQ(record.lives.size(), 1u);
  EXPECT_FALSE(record.lives[0].deleted.has_value());
}

TEST(ChaosServerRecord, TwoDifferentCopiesOfOneZxidAreAProblem) {
  const std::string n0 = "/chaos/locks/k0/_c_g-lock-0000000001";
  const auto a = write_log("zkr-txn-c.log", {{0x1, 0x10, 1000, 1, create_txn(n0, true)}});
  const auto b = write_log("zkr-txn-d.log", {{0x1, 0x10, 1000, 2, delete_txn(n0)}});
  EXPECT_EQ(read_txn_logs({{a}, {b}}, "/chaos/locks/").problems.size(), 1u);
}

TEST(ChaosServerRecord, LifeRecordRoundTrips) {
  NodeLife life{"/chaos/locks/k0/_c_g-lock-0000000001", 5, 6, 0x1a, 9, 10, "session_closed", 0x1a};
  std::string line = "0 life";
  for (const auto& [key, value] : life_fields(life)) line += " " + key + "=" + word(value);
  const auto back = parse_life(parse_event(line));
  EXPECT_EQ(back.path, life.path);
  EXPECT_EQ(back.czxid, 5);
  EXPECT_EQ(back.created, 6);
  EXPECT_EQ(back.owner, 0x1a);
  EXPECT_EQ(back.dzxid, 9);
  EXPECT_EQ(back.deleted, 10);
  EXPECT_EQ(back.end, "session_closed");
  life.deleted.reset();
  life.end.clear();
  line = "0 life";
  for (const auto& [key, value] : life_fields(life)) line += " " + key + "=" + word(value);
  EXPECT_FALSE(parse_life(parse_event(line)).deleted.has_value());
}

}  // namespace
}  // namespace zkr::chaos
