// The counter rule (see checker.hpp): the counter participants' operations,
// read from the workers' logs (counter_participant.hpp), and the final value
// the servers hold, judged by the linearizability checker of the test kit.
//
// What each record becomes: a read that returned is a read of its value; an
// add or a swap that succeeded took effect once, with the result it gave; an
// add refused (conflict) never took effect and is left out; a swap refused
// saw another value (the counter only grows, so a moved version means a
// moved value). An indeterminate outcome, an error, or an invocation with no
// outcome at all (its process was killed in the call) may have taken effect
// at any instant after its invocation, or never; a read among them says
// nothing and is left out.
#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "checker.hpp"
#include "checker_records.hpp"
#include "linearizability.hpp"

namespace zkr::chaos {
namespace {

using linearizability::CounterOp;

// One operation as the records give it; nullopt if it says nothing.
std::optional<CounterOp> operation(const std::string& source, const Event& invoked,
                                   const Event* outcome) {
  CounterOp op;
  const auto& kind = invoked.get("kind");
  op.kind = kind == "add"   ? CounterOp::Kind::add
            : kind == "cas" ? CounterOp::Kind::cas
                            : CounterOp::Kind::read;
  if (kind != "add" && kind != "cas" && kind != "read")
    throw std::invalid_argument("counter operation " + invoked.get("id") + " of kind '" + kind +
                                "'");
  op.operand = invoked.integer("operand");
  op.expected = invoked.integer("expected");
  op.invoked = invoked.integer("invoked");
  op.label = source + " " + invoked.get("id");
  const std::string result = outcome ? outcome->get("outcome") : "";
  if (result == "succeeded") {
    op.returned = outcome->at;
    op.swapped = true;
    if (!outcome->get("value").empty()) op.value = outcome->integer("value");
    if (op.kind == CounterOp::Kind::read && !op.value) return std::nullopt;
    return op;
  }
  if (result == "conflict") {
    if (op.kind != CounterOp::Kind::cas) return std::nullopt;  // never applied
    op.returned = outcome->at;
    op.swapped = false;
    return op;
  }
  // indeterminate, error, or cut short by a kill
  if (op.kind == CounterOp::Kind::read) return std::nullopt;
  op.unknown = true;
  return op;
}

}  // namespace

void check_counter_history(const RunInput& input, CheckResult& result) {
  const std::string path = std::string(kCounterRoot) + "/c0";
  std::vector<CounterOp> ops;
  std::int64_t last = 0;
  for (const auto& [source, events] : input.workers) {
    std::map<std::string, const Event*> invoked;
    std::map<std::string, const Event*> outcomes;
    for (const auto& e : events) {
      if (e.name == "cinv") invoked[e.get("id")] = &e;
      if (e.name == "cop") outcomes[e.get("id")] = &e;
      last = std::max(last, e.at);
    }
    for (const auto& [id, e] : invoked) {
      try {
        const auto found = outcomes.find(id);
        const auto op = operation(source, *e, found == outcomes.end() ? nullptr : found->second);
        if (!op) continue;
        ops.push_back(*op);
        ++result.counter_ops;
        if (op->unknown) ++result.counter_indeterminate;
      } catch (const std::exception& x) {
        result.problems.push_back(source + ":" + std::to_string(e->line) + ": " + x.what());
      }
    }
  }
  if (ops.empty()) return;
  const auto final_value = input.final_state.long_counters.find(path);
  if (final_value == input.final_state.long_counters.end()) {
    result.problems.push_back("the final state has no value of the counter " + path);
    return;
  }
  ops.push_back(linearizability::final_read(final_value->second, last + 1));
  const auto verdict = linearizability::check_counter(ops, 0);
  result.counter_search_states = static_cast<std::int64_t>(verdict.steps);
  if (verdict.result == linearizability::Result::not_linearizable)
    add_violation(result, "counter_not_linearizable", path + ": " + verdict.explanation);
  else if (verdict.result == linearizability::Result::gave_up)
    result.problems.push_back("the counter's history was not judged: " + verdict.explanation);
}

}  // namespace zkr::chaos
