// A mutual-exclusion checker, independent of the lock code: it sees only what
// the holders wrote down. Shared by the lock stress tests and `zkr bench`
// (W2, W5), which judge every lock they run, ours, the floor's and Curator's,
// by the same rules.
//
// Each holder records one interval per acquisition: when it entered and left
// the critical section (CLOCK_MONOTONIC, which one machine's processes share),
// and the fencing token it was granted. In the critical section it does a
// read-modify-write of a counter with nothing but the lock to protect it (read,
// hold a moment, write the value + 1). The checker then asks three questions a
// correct lock must answer "no" to:
//   - did two intervals overlap?
//   - in the order the lock was granted, did a token fail to grow?
//   - did the counter end below the number of acquisitions (lost updates)?
//
// Intervals of kind "read" are a read/write lock's shared holds: they may
// overlap one another, never another kind; their tokens must exceed the last
// exclusive hold's before them (a reader queued before a writer has left
// before the writer enters), not each other's; they make no increment.
//
//   auto intervals = zkr::exclusion::read_interval_file("/tmp/worker-1.intervals");
//   auto report = zkr::exclusion::check_exclusion(intervals, counter, intervals.size());
//   EXPECT_TRUE(report.ok()) << zkr::exclusion::format_report(report);
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace zkr::exclusion {

// One acquisition, as its holder saw it.
struct HolderInterval {
  std::int64_t pid = 0;
  std::int64_t thread = 0;
  std::int64_t enter_ns = 0;  // CLOCK_MONOTONIC, just after the acquire returned
  std::int64_t exit_ns = 0;   // CLOCK_MONOTONIC, just before the release
  std::int64_t token = 0;     // the fencing token of the grant
  std::string kind;           // the lock's kind: "mutex", "semaphore", "none", "read", "write"...
  friend bool operator==(const HolderInterval&, const HolderInterval&) = default;
};

// The text format, one interval per line, fields separated by one space:
//   <pid> <thread> <enter_ns> <exit_ns> <token> <kind>
// e.g. "4242 4245 1830021477000 1830021912000 4294967391 mutex". Integers are
// decimal; kind is one word. Plain text so that a failed run can be read.
std::string format_interval(const HolderInterval& interval);

// Parses one line of that format. Throws std::invalid_argument saying what is
// wrong: a missing or extra field, a field that is not an integer, a blank
// kind, or an exit before the enter.
HolderInterval parse_interval(std::string_view line);

// Every line of a stream; blank lines are skipped. Errors name `source` and
// the line number.
std::vector<HolderInterval> parse_intervals(std::istream& in, const std::string& source);

// parse_intervals of a file; std::runtime_error if it cannot be opened.
std::vector<HolderInterval> read_interval_file(const std::string& path);

struct ExclusionReport {
  std::size_t intervals = 0;
  std::size_t overlaps = 0;          // intervals entered before an earlier one left
  std::size_t token_inversions = 0;  // tokens not above the previous grant's
  std::int64_t counter = 0;          // the counter's final value
  std::int64_t acquisitions = 0;     // how many increments were made
  std::int64_t lost_updates = 0;     // acquisitions - counter (negative: extra updates)
  // Acquisitions and exclusive intervals differ: some holder's records are missing.
  bool interval_count_mismatch = false;
  std::size_t shared_intervals = 0;     // of kind "read"
  std::size_t most_shared_at_once = 0;  // the most "read" intervals held at one time
  // Not a violation, but the sign of a stall: the longest time nobody held
  // the lock, and the hold that ended it.
  std::int64_t longest_idle_ns = 0;
  std::string longest_idle_before;
  // The first few violations of each kind, for a human.
  std::vector<std::string> examples;

  bool ok() const noexcept {
    return overlaps == 0 && token_inversions == 0 && lost_updates == 0 && !interval_count_mismatch;
  }
};

// How many examples of each kind of violation the report keeps.
inline constexpr std::size_t kExamplesPerKind = 5;

// The kind of a shared hold.
inline constexpr std::string_view kSharedKind = "read";

// Checks intervals (in any order) against the rules above. Intervals that
// touch (one's exit equals the next one's enter) do not overlap.
// `acquisitions` counts the increments: the intervals not of kind "read".
ExclusionReport check_exclusion(std::vector<HolderInterval> intervals, std::int64_t counter,
                                std::int64_t acquisitions);

// A few lines: the totals, then the examples.
std::string format_report(const ExclusionReport& report);

}  // namespace zkr::exclusion
