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

// ---- No silent mix: other lock protocols' nodes on our path.
//
// Our queue sees only lock nodes, and Curator's other lock recipes keep their
// nodes where it does not look; each side would grant as if the other were
// not there. What they leave directly under the lock path (read from the
// Curator 5.4.0 jar with javap, checked live in curator_mix_test):
//   InterProcessSemaphoreV2, and InterProcessSemaphoreMutex (a V2 of one
//     lease): the children "locks" (its internal InterProcessMutex) and
//     "leases" (lease nodes `_c_<guid>-lease-<seq>`, counted for the grant);
//   InterProcessReadWriteLock: `_c_<guid>-__READ__<seq>` and
//     `_c_<guid>-__WRIT__<seq>` nodes (its sort puts ours after all of them).
// Names that say nothing about a protocol (an operator's note, our probe and
// layout record, "lock-" without a sequence) are not foreign locks: they stay
// ignored, as before.
// Cannot be told from ours: Curator's deprecated InterProcessSemaphore (v1)
// uses our very names and queue (and grants the first N).
enum class ForeignProtocol { curator_semaphore, curator_read_write_lock };

inline constexpr std::string_view kCuratorSemaphoreLocks = "locks";
inline constexpr std::string_view kCuratorSemaphoreLeases = "leases";
inline constexpr std::string_view kCuratorReadName = "__READ__";
inline constexpr std::string_view kCuratorWriteName = "__WRIT__";

struct ForeignLockNodes {
  ForeignProtocol protocol;
  std::vector<std::string> nodes;  // the children that give it away ("locks" first; by name)
  // E.g. "Curator InterProcessReadWriteLock (node _c_...-__WRIT__0000000003)".
  std::string description() const;
};

// The first foreign protocol found among a lock directory's children, if any.
std::optional<ForeignLockNodes> find_foreign_lock_nodes(const std::vector<std::string>& children);

}  // namespace zkr::detail
