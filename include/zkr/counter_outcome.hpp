// zkr/counter_outcome.hpp: what became of a counter's conditional write.
//
// A counter write is a compare-and-set on the node's version. Three outcomes,
// never two folded into one:
//
//   auto r = counter.add(1);
//   switch (r.outcome) {
//     case zkr::CounterOutcome::succeeded:     use(*r.post); break;  // applied once
//     case zkr::CounterOutcome::conflict:      break;  // not applied: someone else wrote first
//     case zkr::CounterOutcome::indeterminate: break;  // applied once or not at all: unknown
//   }
//
// `indeterminate` is the honest answer to a lost reply: the request reached the
// servers or not, and the connection broke before we heard which. Retrying it
// could apply the change twice (the retry, finding the version moved by our
// own first attempt, would re-read and add again), so the library never does;
// it re-reads, and settles the question only when the node proves that our
// write was not applied (same czxid and mzxid as the value we based it on).
// What to do with it is the caller's decision: docs/counters.md.
#pragma once

#include <string_view>

namespace zkr {

enum class CounterOutcome {
  succeeded,      ///< applied, exactly once
  conflict,       ///< not applied: the value changed (or the retries ran out) first
  indeterminate,  ///< the reply was lost: applied once, or not at all
};
std::string_view to_string(CounterOutcome outcome) noexcept;

}  // namespace zkr
