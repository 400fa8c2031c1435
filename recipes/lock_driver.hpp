// The pure logic of the lock queue: names, order, and "do we hold it, and if
// not, whom do we wait for" as a function of the directory's children. No I/O,
// so every rule here is tested without a server.
//
// Names follow Apache Curator's protected lock nodes, `_c_<guid>-lock-<seq>`,
// and order by the sequence after the last "lock-", as Curator's
// StandardLockInternalsDriver does, so both libraries agree on who is first.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zkr::detail {

inline constexpr std::string_view kLockName = "lock-";
inline constexpr std::string_view kProtectedPrefix = "_c_";

// A fresh random GUID, "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx".
std::string new_guid();

// "_c_<guid>-lock-": the name our create sends; the server appends the sequence.
std::string protected_lock_prefix(std::string_view guid);

// The sequence of a lock node name: the 10 digits after the last "lock-"
// (ZooKeeper prints a negative number once a parent's counter overflows).
// nullopt for anything else: those children are not lock nodes and are ignored.
std::optional<std::int64_t> lock_sequence(std::string_view name);

// The lock nodes among children, in Curator's order: by the text after the
// last "lock-" (the same as by number, until a parent's counter overflows
// 2^31 and ZooKeeper writes negative numbers). Other children are dropped:
// unlike Curator, which sorts them in by their whole name and can be blocked
// by one whose name sorts first.
std::vector<std::string> sorted_lock_nodes(const std::vector<std::string>& children);

// The child created by the attempt with this guid, if any.
std::optional<std::string> find_protected_node(const std::vector<std::string>& children,
                                               std::string_view guid);

// Where our node stands in the sorted queue.
struct QueuePosition {
  bool found = false;              // our node is among the children
  bool holds = false;              // it is first: we hold the lock
  std::vector<std::string> lower;  // lock nodes before ours, in queue order
};
QueuePosition queue_position(const std::vector<std::string>& sorted_nodes,
                             std::string_view our_node);

}  // namespace zkr::detail
