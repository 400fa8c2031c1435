#include "stream.hpp"

#include <algorithm>
#include <random>
#include <sstream>
#include <stdexcept>

namespace trainyard {

const char* to_string(Kind kind) {
  switch (kind) {
    case Kind::created: return "created";
    case Kind::moved: return "moved";
    case Kind::deleted: return "deleted";
  }
  return "?";
}

std::vector<Message> generate(const StreamConfig& config) {
  if (config.trains < 1 || config.locations < 2 || config.messages < config.trains)
    throw std::invalid_argument("need trains >= 1, locations >= 2, messages >= trains");
  // The distributions of <random> differ between standard libraries, so a seed
  // gives the same stream only within one build; every process of a run is
  // the same binary, which is all that matters here.
  std::mt19937_64 rng(config.seed);
  std::vector<double> weights;
  for (int l = 0; l < config.locations; ++l) weights.push_back(1.0 / (l + 1));
  std::discrete_distribution<int> pick(weights.begin(), weights.end());
  std::bernoulli_distribution coin(0.5);

  // Each train's own messages, in order.
  std::vector<std::vector<Message>> per_train(config.trains);
  for (int t = 0; t < config.trains; ++t) {
    const int count =
        config.messages / config.trains + (t < config.messages % config.trains ? 1 : 0);
    int here = pick(rng);
    per_train[t].push_back({0, t, 1, Kind::created, -1, here});
    for (int seq = 2; seq <= count; ++seq) {
      if (seq == count && coin(rng)) {
        per_train[t].push_back({0, t, seq, Kind::deleted, here, -1});
        break;
      }
      int next = pick(rng);
      if (next == here) next = (here + 1) % config.locations;  // a move goes somewhere
      per_train[t].push_back({0, t, seq, Kind::moved, here, next});
      here = next;
    }
  }

  // Interleave: one slot per message, labelled with its train, shuffled; the
  // k-th slot of train t gets t's k-th message, so per-train order holds.
  std::vector<int> slots;
  for (int t = 0; t < config.trains; ++t) slots.insert(slots.end(), per_train[t].size(), t);
  std::shuffle(slots.begin(), slots.end(), rng);
  std::vector<std::size_t> next(config.trains, 0);
  std::vector<Message> stream;
  stream.reserve(slots.size());
  for (int t : slots) {
    Message m = per_train[t][next[t]++];
    m.index = static_cast<int>(stream.size());
    stream.push_back(m);
  }
  return stream;
}

std::string encode(const TrainRecord& train) {
  return std::to_string(train.seq) + " " + std::to_string(train.location);
}

std::string encode(const LocationRecord& l) {
  return std::to_string(l.created) + " " + std::to_string(l.deleted) + " " +
         std::to_string(l.arrived) + " " + std::to_string(l.departed);
}

std::optional<TrainRecord> decode_train(const std::string& data) {
  std::istringstream in(data);
  TrainRecord train;
  if (!(in >> train.seq >> train.location)) return std::nullopt;
  return train;
}

std::optional<LocationRecord> decode_location(const std::string& data) {
  std::istringstream in(data);
  LocationRecord l;
  if (!(in >> l.created >> l.deleted >> l.arrived >> l.departed)) return std::nullopt;
  return l;
}

void apply(const Message& m, TrainRecord& train, LocationRecord& from, LocationRecord& to) {
  switch (m.kind) {
    case Kind::created: ++to.created; break;
    case Kind::moved:
      ++from.departed;
      ++to.arrived;
      break;
    case Kind::deleted: ++from.deleted; break;
  }
  train.seq = m.seq;
  train.location = m.to;
}

Expected replay(const StreamConfig& config, const std::vector<Message>& stream) {
  Expected e{std::vector<TrainRecord>(config.trains),
             std::vector<LocationRecord>(config.locations)};
  LocationRecord unused;
  for (const auto& m : stream)
    apply(m, e.trains[m.train], m.from >= 0 ? e.locations[m.from] : unused,
          m.to >= 0 ? e.locations[m.to] : unused);
  return e;
}

}  // namespace trainyard
