// The train yard's invariants, checked from first principles over the records
// found in ZooKeeper at the end of a run. Pure logic, no ZooKeeper.
//
//   for (const auto& i : trainyard::check(config, stream, trains, locations))
//     std::printf("%s %s\n", i.holds ? "ok" : "BROKEN", i.name.c_str());
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "stream.hpp"

namespace trainyard {

struct Invariant {
  explicit Invariant(std::string name_, bool holds_ = true, std::string detail_ = {})
      : name(std::move(name_)), holds(holds_), detail(std::move(detail_)) {}
  std::string name;
  bool holds = true;
  int violations = 0;
  std::string detail;  // the first few violations
};

// Marks `invariant` broken, quoting the first few violations in its detail.
void violated(Invariant& invariant, const std::string& what);

std::vector<Invariant> check(const StreamConfig& config, const std::vector<Message>& stream,
                             const std::vector<TrainRecord>& trains,
                             const std::vector<LocationRecord>& locations);

}  // namespace trainyard
