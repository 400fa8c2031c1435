// The train yard's message stream and records: pure logic, no ZooKeeper.
//
// A stream is generated from a seed, so the orchestrator and every worker
// compute the same one on their own: nothing but the seed and the sizes need
// to be handed out.
//
//   auto stream = trainyard::generate({.trains = 40, .locations = 8, .messages = 2000});
//   for (const auto& m : stream) apply(m, train[m.train], from, to);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainyard {

struct StreamConfig {
  int trains = 50;
  int locations = 8;
  int messages = 3000;  // at least one per train
  std::uint64_t seed = 1;
};

enum class Kind { created, moved, deleted };
const char* to_string(Kind kind);

struct Message {
  int index = 0;  // position in the stream
  int train = 0;
  int seq = 0;  // 1 for the train's first message, +1 for each next one
  Kind kind = Kind::created;
  int from = -1;  // the train's location before; -1 for created
  int to = -1;    // its location after; -1 for deleted
};

// Every train is created, moves a few times, and is deleted at the end about
// half the time. A train's messages keep their order in the stream; trains are
// interleaved at random. Locations are picked with Zipf-like weights (location
// 0 is the busiest), so that workers collide on them.
// Throws std::invalid_argument for sizes that make no stream.
std::vector<Message> generate(const StreamConfig& config);

// A train's record: how many of its messages were applied, and where it is
// (-1: not created yet, or deleted).
struct TrainRecord {
  int seq = 0;
  int location = -1;
  friend bool operator==(const TrainRecord&, const TrainRecord&) = default;
};

struct LocationRecord {
  std::int64_t created = 0;
  std::int64_t deleted = 0;
  std::int64_t arrived = 0;
  std::int64_t departed = 0;
  // Trains that should be here, from the counters alone.
  std::int64_t balance() const { return created + arrived - departed - deleted; }
  friend bool operator==(const LocationRecord&, const LocationRecord&) = default;
};

// Records are stored as text, so that zkCli shows them readably:
// a train as "seq location", a location as "created deleted arrived departed".
std::string encode(const TrainRecord& train);
std::string encode(const LocationRecord& location);
// nullopt for data that is not a record.
std::optional<TrainRecord> decode_train(const std::string& data);
std::optional<LocationRecord> decode_location(const std::string& data);

// Applies m to the records it touches: `from` is the record of m.from (unused
// for created), `to` that of m.to (unused for deleted).
void apply(const Message& m, TrainRecord& train, LocationRecord& from, LocationRecord& to);

// The records the stream leaves behind when every message is applied once, in order.
struct Expected {
  std::vector<TrainRecord> trains;
  std::vector<LocationRecord> locations;
};
Expected replay(const StreamConfig& config, const std::vector<Message>& stream);

}  // namespace trainyard
