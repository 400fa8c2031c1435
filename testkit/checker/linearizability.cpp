// See linearizability.hpp. A depth-first search over orders: at each step,
// any operation not yet placed may come next if it was invoked before every
// unplaced operation with a known outcome returned (none of those can have
// taken effect before it); a step that gives a result the record contradicts
// is a dead end. The states tried (which operations are placed, and the
// counter's value then) are remembered, so no state is searched twice: that
// bounds the work by the states, not by the orders.
#include "linearizability.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <unordered_set>
#include <utility>
#include <vector>

namespace zkr::linearizability {
namespace {

using Kind = CounterOp::Kind;

std::string describe(const CounterOp& op) {
  std::ostringstream out;
  out << (op.label.empty() ? "?" : op.label) << " ";
  switch (op.kind) {
    case Kind::read: out << "read " << op.value.value_or(0); break;
    case Kind::add:
      out << "add " << op.operand;
      if (op.value) out << " -> " << *op.value;
      break;
    case Kind::set: out << "set " << op.operand; break;
    case Kind::cas:
      out << "cas " << op.expected << " -> " << op.operand;
      if (!op.unknown) out << (op.swapped ? " (swapped)" : " (not swapped)");
      break;
  }
  if (op.unknown) out << " (outcome unknown)";
  return out.str();
}

// What op does to a counter at `value`: the value after it, or nullopt if
// the record contradicts it there.
std::optional<std::int64_t> apply(const CounterOp& op, std::int64_t value) {
  switch (op.kind) {
    case Kind::read:
      if (op.value != value) return std::nullopt;
      return value;
    case Kind::add: {
      const std::int64_t after = static_cast<std::int64_t>(static_cast<std::uint64_t>(value) +
                                                           static_cast<std::uint64_t>(op.operand));
      if (op.value && *op.value != after) return std::nullopt;
      return after;
    }
    case Kind::set: return op.operand;
    case Kind::cas:
      if (op.unknown)  // taken only where it would swap: elsewhere it did nothing
        return value == op.expected ? std::optional(op.operand) : std::nullopt;
      if (op.swapped != (value == op.expected)) return std::nullopt;
      return op.swapped ? op.operand : value;
  }
  return std::nullopt;
}

class Search {
 public:
  Search(std::vector<CounterOp> ops, std::size_t max_steps)
      : ops_(std::move(ops)), max_steps_(max_steps), placed_((ops_.size() + 63) / 64, 0) {
    for (const auto& op : ops_) remaining_ += op.unknown ? 0 : 1;
  }

  Verdict run(std::int64_t initial) {
    Verdict verdict;
    const bool found = visit(initial, 0);
    verdict.steps = steps_;
    if (found) {
      verdict.result = Result::linearizable;
      verdict.explanation = "an order of all " + std::to_string(ops_.size()) + " operations exists";
    } else if (gave_up_) {
      verdict.result = Result::gave_up;
      verdict.explanation = "no verdict within " + std::to_string(max_steps_) + " states";
    } else {
      verdict.result = Result::not_linearizable;
      verdict.explanation = best_;
    }
    return verdict;
  }

 private:
  bool is_placed(std::size_t i) const { return (placed_[i / 64] >> (i % 64)) & 1U; }
  void flip(std::size_t i) { placed_[i / 64] ^= std::uint64_t{1} << (i % 64); }

  // A 128-bit digest of the state: two independent 64-bit hashes, so that a
  // collision (which would skip a state never searched) is out of reach.
  std::pair<std::uint64_t, std::uint64_t> digest(std::int64_t value) const {
    std::uint64_t a = 0x9e3779b97f4a7c15ULL ^ static_cast<std::uint64_t>(value);
    std::uint64_t b = 0xc2b2ae3d27d4eb4fULL + static_cast<std::uint64_t>(value) * 31;
    for (const auto word : placed_) {
      a = (a ^ word) * 0x100000001b3ULL;
      a ^= a >> 29;
      b = (b + word) * 0xff51afd7ed558ccdULL;
      b ^= b >> 33;
    }
    return {a, b};
  }

  struct DigestHash {
    std::size_t operator()(const std::pair<std::uint64_t, std::uint64_t>& d) const {
      return static_cast<std::size_t>(d.first ^ (d.second * 0x9e3779b97f4a7c15ULL));
    }
  };

  bool visit(std::int64_t value, std::size_t definite_placed) {
    if (remaining_ == 0) return true;
    if (++steps_ > max_steps_) {
      gave_up_ = true;
      return false;
    }
    if (!tried_.insert(digest(value)).second) return false;
    std::int64_t first_return = kNeverReturned;
    for (std::size_t i = 0; i < ops_.size(); ++i)
      if (!is_placed(i) && !ops_[i].unknown)
        first_return = std::min(first_return, ops_[i].returned);
    if (definite_placed >= best_depth_) note_dead_end(value, definite_placed, first_return);
    for (std::size_t i = 0; i < ops_.size() && !gave_up_; ++i) {
      if (ops_[i].invoked > first_return) break;  // sorted: none after can come next either
      if (is_placed(i)) continue;
      const auto after = apply(ops_[i], value);
      if (!after) continue;
      flip(i);
      const bool definite = !ops_[i].unknown;
      remaining_ -= definite ? 1 : 0;
      const bool found = visit(*after, definite_placed + (definite ? 1 : 0));
      remaining_ += definite ? 1 : 0;
      flip(i);
      if (found) return true;
    }
    return false;
  }

  // The furthest the search got, for the explanation.
  void note_dead_end(std::int64_t value, std::size_t depth, std::int64_t first_return) {
    best_depth_ = depth + 1;
    std::ostringstream out;
    out << "no order exists: at best " << depth << " of " << depth + remaining_
        << " operations with a known outcome were ordered, the counter then at " << value
        << ", and none of these could come next:";
    int listed = 0;
    for (std::size_t i = 0; i < ops_.size() && listed < 8; ++i) {
      if (ops_[i].invoked > first_return) break;
      if (is_placed(i) || ops_[i].unknown) continue;
      out << "\n  " << describe(ops_[i]);
      ++listed;
    }
    best_ = out.str();
  }

  const std::vector<CounterOp> ops_;
  const std::size_t max_steps_;
  std::vector<std::uint64_t> placed_;
  std::size_t remaining_ = 0;  // operations with a known outcome not yet placed
  std::size_t steps_ = 0;
  bool gave_up_ = false;
  std::unordered_set<std::pair<std::uint64_t, std::uint64_t>, DigestHash> tried_;
  std::size_t best_depth_ = 0;
  std::string best_ = "no order exists";
};

void validate(const CounterOp& op) {
  if (op.kind == Kind::read && !op.value && !op.unknown)
    throw std::invalid_argument("linearizability: " + describe(op) + ": a read with no value");
  if (!op.unknown && op.returned < op.invoked)
    throw std::invalid_argument("linearizability: " + describe(op) +
                                ": returned before it was invoked");
}

}  // namespace

CounterOp final_read(std::int64_t value, std::int64_t at) {
  CounterOp op;
  op.kind = Kind::read;
  op.value = value;
  op.invoked = at;
  op.returned = at;
  op.label = "final value";
  return op;
}

Verdict check_counter(const std::vector<CounterOp>& ops, std::int64_t initial,
                      std::size_t max_steps) {
  std::vector<CounterOp> kept;
  kept.reserve(ops.size());
  for (const auto& op : ops) {
    validate(op);
    // A read whose reply never came says nothing.
    if (op.kind == Kind::read && op.unknown) continue;
    kept.push_back(op);
    if (op.unknown) kept.back().returned = kNeverReturned;
  }
  std::stable_sort(kept.begin(), kept.end(),
                   [](const auto& a, const auto& b) { return a.invoked < b.invoked; });
  return Search(std::move(kept), max_steps).run(initial);
}

}  // namespace zkr::linearizability
