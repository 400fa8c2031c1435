// The dispatcher's record: what it publishes, and the checks of it. Pure
// logic, no ZooKeeper.
//
// The leader among the dispatcher candidates publishes the stream in batches.
// One publish is one guarded_write under its term: it advances the cursor
// node (set with the version read, so two publishes cannot both start from the
// same cursor) and creates the batch's node (named by its first message, so a
// batch cannot be created twice). Both record the leader's epoch.
//
//   Cursor c = decode_cursor(data).value();      // next message to publish
//   Batch b = next_batch(c, total, batch_size, my_epoch);
//   ops: Set(cursor, encode(advance(c, b, slot)), version), Create(batch path, encode(b))
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "check.hpp"

namespace trainyard {

// The cursor node: messages [0, next) are published; epoch and slot are the
// last publisher's (0 and -1 before the first publish).
struct Cursor {
  int next = 0;
  std::int64_t epoch = 0;
  int slot = -1;  // the dispatcher candidate that published last
  friend bool operator==(const Cursor&, const Cursor&) = default;
};

// One publish: messages [first, first + count), by the leader of `epoch`.
struct Batch {
  int first = 0;
  int count = 0;
  std::int64_t epoch = 0;
  friend bool operator==(const Batch&, const Batch&) = default;
};

// Text, so that zkCli shows them readably: "next epoch slot", "first count epoch".
std::string encode(const Cursor& cursor);
std::string encode(const Batch& batch);
std::optional<Cursor> decode_cursor(const std::string& data);
std::optional<Batch> decode_batch(const std::string& data);

// The batch to publish after `cursor`: at most `size` messages, none past
// `total`; count 0 when everything is published. std::invalid_argument for a
// size below 1 or a cursor outside [0, total].
Batch next_batch(const Cursor& cursor, int total, int size, std::int64_t epoch);
// The cursor once `batch` is published by candidate `slot`.
Cursor advance(const Cursor& cursor, const Batch& batch, int slot);

// A batch as found on the servers: its record and its node's czxid (the
// order in which the servers accepted the publishes).
struct PublishedBatch {
  Batch batch;
  std::int64_t czxid = 0;
};

// The dispatcher's invariants over what the servers hold at the end: every
// message of [0, total) published exactly once, in order (the batches, in the
// order the servers created them, tile the stream from 0, and the cursor says
// all of it); the epochs never fall from one publish to the next (a deposed
// leader's accepted write would bring an older epoch after a newer one), and
// each batch was written by a term that began before it (epoch < czxid).
std::vector<Invariant> check_published(int total, const Cursor& cursor,
                                       std::vector<PublishedBatch> batches);

// One failover seen by the orchestrator: the leader killed (its epoch, the
// last one published) and the next leader's first publish.
struct Failover {
  int slot = -1;  // the killed candidate
  std::int64_t old_epoch = 0;
  std::int64_t new_epoch = 0;  // 0: no new leader published
  double seconds = 0;          // from the kill to the next leader's first publish
};

// "at least `wanted` failovers, each to a newer epoch".
Invariant check_failovers(const std::vector<Failover>& failovers, int wanted);

// What a dispatcher candidate reports in its own node, written at once when
// it changes (a killed candidate's report must already be there). What it
// published is in the batches.
struct DispatcherStats {
  bool done = false;
  std::int64_t refused = 0;  // publishes refused by the servers: its term was over
  friend bool operator==(const DispatcherStats&, const DispatcherStats&) = default;
};
std::string encode(const DispatcherStats& stats);
std::optional<DispatcherStats> decode_dispatcher_stats(const std::string& data);

}  // namespace trainyard
