// A linearizability checker for a counter: given what clients saw of their
// operations on one counter (when each was invoked, when it returned, what
// it returned), is there one order of the operations, each taking effect at
// an instant between its invocation and its return, in which every result is
// what a single counter would have given? (Herlihy and Wing's definition; the
// search is Wing and Gong's, with Lowe's memo of the states already tried.)
// It knows nothing of ZooKeeper nor of the library: it judges our counters,
// Curator's, or anyone's from their records.
//
// An operation whose outcome is unknown (its reply was lost: it may or may
// not have been applied) is allowed to take effect at any instant after its
// invocation, or never. One known not to have been applied has no place in
// the history: leave it out. To judge the final value the servers hold, add
// a read invoked after every other operation returned.
//
//   std::vector<zkr::linearizability::CounterOp> ops = ...;  // from the workers' logs
//   ops.push_back(zkr::linearizability::final_read(final_value, end_ns));
//   const auto verdict = zkr::linearizability::check_counter(ops, 0);
//   if (verdict.result != zkr::linearizability::Result::linearizable) fail(verdict.explanation);
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace zkr::linearizability {

inline constexpr std::int64_t kNeverReturned = std::numeric_limits<std::int64_t>::max();

// One operation on the counter, as its client saw it.
struct CounterOp {
  enum class Kind {
    read,  // returned `value`
    add,   // added `operand`; returned the value after it in `value`, if known
    set,   // set the counter to `operand`
    cas,   // if the counter was `expected`, set it to `operand`; `swapped` says whether it did
  };
  Kind kind = Kind::read;
  std::int64_t operand = 0;
  std::int64_t expected = 0;               // cas only
  bool swapped = false;                    // cas with a known outcome only
  std::optional<std::int64_t> value;       // read: required; add: the result, when known
  bool unknown = false;                    // the outcome is unknown: applied or not, when it may
  std::int64_t invoked = 0;                // ns, one clock for every client
  std::int64_t returned = kNeverReturned;  // ns; ignored for an unknown outcome
  std::string label;                       // who and which, for the explanation
};

// A read of `value`, invoked at `at` (after everything else returned) and
// returning at once: how the final value on the servers joins the history.
CounterOp final_read(std::int64_t value, std::int64_t at);

enum class Result {
  linearizable,
  not_linearizable,
  gave_up,  // the search reached max_steps first: nothing is proven
};

struct Verdict {
  Result result = Result::gave_up;
  std::size_t steps = 0;  // states the search visited
  // Why not (the furthest the search got: the operations it could order,
  // and those it could not place after them), or what was found.
  std::string explanation;
};

// Judges `ops` on a counter that starts at `initial`. A record that makes no
// sense (a read with no value, a return before its invocation) is refused
// with std::invalid_argument naming it. The search visits at most max_steps
// states.
Verdict check_counter(const std::vector<CounterOp>& ops, std::int64_t initial,
                      std::size_t max_steps = 2'000'000);

}  // namespace zkr::linearizability
