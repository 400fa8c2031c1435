// Waiting for the tree to reach a state, by watching it: no sleeps, no polling
// loops, a deadline on every wait. Works on any Keeper (fake or real).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "zkr/keeper.hpp"

namespace zkr::test {

// The bound on a live test's wait for a condition that a healthy run reaches
// in milliseconds: generous, for an ensemble on a loaded machine.
inline constexpr std::chrono::seconds kWait{30};
// The bound where a wait spans more: a peer process's start, many sessions'
// grants one after another, a zkr command's steps.
inline constexpr std::chrono::seconds kLongWait{60};

using ChildrenPredicate = std::function<bool(const std::vector<std::string>&)>;

// True once pred(children of dir) holds (a missing dir has no children); false
// if the timeout passed first.
[[nodiscard]] bool wait_children(Keeper& keeper, const std::string& dir,
                                 const ChildrenPredicate& pred, std::chrono::milliseconds timeout);

// True once path does not exist; false if the timeout passed first.
[[nodiscard]] bool wait_gone(Keeper& keeper, const std::string& path,
                             std::chrono::milliseconds timeout);

// True once pred(the node at path: its data and stat, nullopt if absent)
// holds; false if the timeout passed first.
using NodePredicate = std::function<bool(const std::optional<NodeData>&)>;
[[nodiscard]] bool wait_node(Keeper& keeper, const std::string& path, const NodePredicate& pred,
                             std::chrono::milliseconds timeout);

// A flag one thread raises and another waits for, with a deadline.
class Latch {
 public:
  void open();
  [[nodiscard]] bool wait(std::chrono::milliseconds timeout);
  bool is_open() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

}  // namespace zkr::test
