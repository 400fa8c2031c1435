// The train yard dispatcher's record (examples/trainyard/dispatch.hpp): its
// encodings, the next batch after a cursor, and the checker of the published
// record, which must catch a message published twice or skipped, an epoch
// that falls, a batch older than its term, and a failover to no newer epoch.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "dispatch.hpp"

namespace trainyard {
namespace {

const Invariant& named(const std::vector<Invariant>& all, const std::string& prefix) {
  for (const auto& i : all)
    if (i.name.rfind(prefix, 0) == 0) return i;
  throw std::logic_error("no invariant " + prefix);
}

constexpr const char* kOnce = "every message published exactly once";
constexpr const char* kRising = "epochs only rise";
constexpr const char* kDeposed = "no publish by a deposed leader";

TEST(TrainyardDispatch, RecordsRoundTripAsText) {
  const Cursor cursor{300, 4294972083, 2};
  EXPECT_EQ(encode(cursor), "300 4294972083 2");
  EXPECT_EQ(decode_cursor(encode(cursor)), cursor);
  EXPECT_EQ(decode_cursor("0 0 -1"), Cursor{});  // as laid out, before the first publish
  const Batch batch{275, 25, 4294972039};
  EXPECT_EQ(encode(batch), "275 25 4294972039");
  EXPECT_EQ(decode_batch(encode(batch)), batch);
  const DispatcherStats stats{true, 3};
  EXPECT_EQ(decode_dispatcher_stats(encode(stats)), stats);
}

TEST(TrainyardDispatch, WhatIsNotARecordDecodesToNothing) {
  for (const char* bad : {"", "12", "12 5", "12 5 1 x", "a b c", "-1 5 1", "12 -5 1"})
    EXPECT_FALSE(decode_cursor(bad)) << "'" << bad << "'";
  for (const char* bad : {"", "0 25", "0 25 7 8", "0 0 7", "0 25 0", "-1 25 7"})
    EXPECT_FALSE(decode_batch(bad)) << "'" << bad << "'";
  for (const char* bad : {"", "1", "1 2 3", "1 -1"})
    EXPECT_FALSE(decode_dispatcher_stats(bad)) << "'" << bad << "'";
}

TEST(TrainyardDispatch, NextBatchStartsAtTheCursorAndStopsAtTheEnd) {
  EXPECT_EQ(next_batch(Cursor{}, 100, 25, 7), (Batch{0, 25, 7}));
  EXPECT_EQ(next_batch(Cursor{90, 5, 1}, 100, 25, 7), (Batch{90, 10, 7}));
  EXPECT_EQ(next_batch(Cursor{100, 5, 1}, 100, 25, 7).count, 0);
  EXPECT_THROW(next_batch(Cursor{101, 5, 1}, 100, 25, 7), std::invalid_argument);
  EXPECT_THROW(next_batch(Cursor{-1, 5, 1}, 100, 25, 7), std::invalid_argument);
  EXPECT_THROW(next_batch(Cursor{}, 100, 0, 7), std::invalid_argument);
  // The cursor after it names the new publisher and its epoch.
  EXPECT_EQ(advance(Cursor{90, 5, 1}, Batch{90, 10, 7}, 2), (Cursor{100, 7, 2}));
}

// A clean run: three terms, publishing in turn, the servers' zxids rising.
std::vector<PublishedBatch> clean_run() {
  return {{{0, 25, 10}, 11},
          {{25, 25, 10}, 12},
          {{50, 25, 20}, 21},
          {{75, 20, 20}, 22},
          {{95, 5, 30}, 31}};
}

TEST(TrainyardDispatch, ACleanRecordHolds) {
  auto batches = clean_run();
  std::swap(batches[0], batches[3]);  // listed in any order: judged in the servers' order
  const auto all = check_published(100, Cursor{100, 30, 1}, batches);
  ASSERT_EQ(all.size(), 3u);
  for (const auto& i : all) EXPECT_TRUE(i.holds) << i.name << ": " << i.detail;
}

TEST(TrainyardDispatch, AMessagePublishedTwiceBreaksExactlyOnce) {
  auto batches = clean_run();
  batches[2].batch.first = 40;  // overlaps [25, 50)
  batches[2].batch.count = 35;
  const auto all = check_published(100, Cursor{100, 30, 1}, batches);
  EXPECT_FALSE(named(all, kOnce).holds);
  EXPECT_NE(named(all, kOnce).detail.find("published twice"), std::string::npos);
  EXPECT_TRUE(named(all, kRising).holds);
}

TEST(TrainyardDispatch, AMessageSkippedOrMissingBreaksExactlyOnce) {
  auto skipped = clean_run();
  skipped[2].batch.first = 55;
  skipped[2].batch.count = 20;
  EXPECT_FALSE(named(check_published(100, Cursor{100, 30, 1}, skipped), kOnce).holds);
  auto short_run = clean_run();
  short_run.pop_back();  // the last five never published
  EXPECT_FALSE(named(check_published(100, Cursor{95, 20, 0}, short_run), kOnce).holds);
  // The batches are all there but the cursor disagrees.
  EXPECT_FALSE(named(check_published(100, Cursor{95, 30, 1}, clean_run()), kOnce).holds);
}

TEST(TrainyardDispatch, OutOfOrderPublishesBreakInOrder) {
  auto batches = clean_run();
  std::swap(batches[1].czxid, batches[2].czxid);  // [50, 75) accepted before [25, 50)
  batches[1].batch.epoch = batches[2].batch.epoch = 10;
  EXPECT_FALSE(named(check_published(100, Cursor{100, 30, 1}, batches), kOnce).holds);
}

TEST(TrainyardDispatch, AnEpochThatFallsIsADeposedLeadersWrite) {
  auto batches = clean_run();
  batches[3].batch.epoch = 10;  // the first leader's write, accepted after the second's
  const auto all = check_published(100, Cursor{100, 30, 1}, batches);
  EXPECT_TRUE(named(all, kOnce).holds);
  EXPECT_FALSE(named(all, kRising).holds);
  EXPECT_FALSE(named(all, kDeposed).holds);
}

TEST(TrainyardDispatch, ABatchNotAfterItsTermBeganIsRefused) {
  auto batches = clean_run();
  batches[0].batch.epoch = batches[1].batch.epoch = 12;  // a term that began after batch 0
  const auto all = check_published(100, Cursor{100, 30, 1}, batches);
  EXPECT_TRUE(named(all, kRising).holds);
  EXPECT_FALSE(named(all, kDeposed).holds);
}

TEST(TrainyardDispatch, FailoversMustBeEnoughAndEachToANewerEpoch) {
  EXPECT_TRUE(check_failovers({{1, 10, 20, 4.2}, {0, 20, 30, 4.1}}, 2).holds);
  EXPECT_FALSE(check_failovers({{1, 10, 20, 4.2}}, 2).holds);
  EXPECT_FALSE(check_failovers({{1, 10, 20, 4.2}, {0, 20, 0, 0}}, 2).holds);   // nobody took over
  EXPECT_FALSE(check_failovers({{1, 10, 20, 4.2}, {0, 20, 15, 1}}, 2).holds);  // an older epoch
}

}  // namespace
}  // namespace trainyard
