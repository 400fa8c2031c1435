#include "check.hpp"

namespace trainyard {
namespace {

constexpr int kMaxDetails = 3;  // violations quoted per invariant

}  // namespace

void violated(Invariant& invariant, const std::string& what) {
  invariant.holds = false;
  if (++invariant.violations <= kMaxDetails)
    invariant.detail += (invariant.detail.empty() ? "" : "; ") + what;
  else if (invariant.violations == kMaxDetails + 1) invariant.detail += "; ...";
}

std::vector<Invariant> check(const StreamConfig& config, const std::vector<Message>& stream,
                             const std::vector<TrainRecord>& trains,
                             const std::vector<LocationRecord>& locations) {
  const Expected expected = replay(config, stream);

  // 1. What the counters say is at each location is what the trains say.
  Invariant balance{"per location: created + arrived - departed - deleted == trains there"};
  std::vector<std::int64_t> present(config.locations, 0);
  for (const auto& t : trains)
    if (t.location >= 0 && t.location < config.locations) ++present[t.location];
  for (int l = 0; l < config.locations; ++l)
    if (locations[l].balance() != present[l])
      violated(balance, "l" + std::to_string(l) + ": counters say " +
                            std::to_string(locations[l].balance()) + ", trains say " +
                            std::to_string(present[l]));

  // 2. Totals equal the stream's.
  Invariant totals{"totals of created, deleted, arrived, departed equal the stream's"};
  LocationRecord want, got;
  for (int l = 0; l < config.locations; ++l) {
    want.created += expected.locations[l].created;
    want.deleted += expected.locations[l].deleted;
    want.arrived += expected.locations[l].arrived;
    want.departed += expected.locations[l].departed;
    got.created += locations[l].created;
    got.deleted += locations[l].deleted;
    got.arrived += locations[l].arrived;
    got.departed += locations[l].departed;
  }
  if (got != want)
    violated(totals, "stream " + encode(want) + ", records " + encode(got) +
                         " (created deleted arrived departed)");

  // 3. Each location's counters equal the stream's (totals could hide two
  //    errors that cancel out).
  Invariant per_location{"every location's counters equal the stream's"};
  for (int l = 0; l < config.locations; ++l)
    if (locations[l] != expected.locations[l])
      violated(per_location, "l" + std::to_string(l) + ": stream " + encode(expected.locations[l]) +
                                 ", record " + encode(locations[l]));

  // 4. No message lost or applied twice: each train applied exactly as many
  //    messages as the stream has for it, and ended where the stream ends it.
  Invariant exactly_once{"every train applied each of its messages exactly once"};
  for (int t = 0; t < config.trains; ++t)
    if (trains[t] != expected.trains[t])
      violated(exactly_once, "t" + std::to_string(t) + ": stream " + encode(expected.trains[t]) +
                                 ", record " + encode(trains[t]) + " (seq location)");

  return {balance, totals, per_location, exactly_once};
}

}  // namespace trainyard
