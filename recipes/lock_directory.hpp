// What makes a znode a lock directory of this library, and how one is removed
// without ever removing anything else.
//
// Ensembles are shared: a lock path may be an existing node holding another
// application's data (locking /data/printer is common with Curator users), and
// a lock root may hold other applications' empty persistent nodes. So the
// library removes a directory only if it can prove the directory is its own:
//
//  - Every directory it creates (lock directories, their missing parents,
//    hashed buckets) holds kLockDirectoryMark as its data. A node without it
//    is never removed, whatever it looks like.
//  - The proof and the delete must hold at one moment. A delete with the
//    version read earlier is not enough: a directory deleted and created
//    again in between (by anyone) has version 0 again. A child we created
//    pins the directory instead: a node with a child cannot be deleted, so
//    the directory our child is in is the one we read. A release has such a
//    child, its own lock node: one multi deletes the node and the directory
//    (with the version of the proof). A sweep has none, so it creates a probe
//    child first, reads the directory (the one the probe is in), and then
//    deletes probe and directory in one multi.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "zkr/cleanup.hpp"
#include "zkr/keeper.hpp"

namespace zkr::detail {

// The probe child's name: this prefix and a fresh GUID.
inline constexpr std::string_view kProbePrefix = "zkr-probe-";

// A directory proven to be one of ours: its czxid (which incarnation) and the
// data version at the proof (a write since then makes a delete fail).
struct DirectoryProof {
  std::int64_t czxid = 0;
  std::int32_t version = 0;
};

inline bool is_marked(const NodeData& node) { return node.data == kLockDirectoryMark; }

enum class DirectoryRemoval {
  removed,   // it was ours and empty, and is gone
  gone,      // it did not exist
  not_ours,  // no mark (or under /zookeeper): left alone
  in_use,    // ours, but it has children (or gained one meanwhile)
};

// Removes each path that is a directory of ours with no child, proven as
// described above: three pipelined round trips for the whole list. Sends
// nothing to a node without the mark. Throws KeeperError for anything but
// the answers above (connection errors included: the caller retries; a
// probe left by a lost reply is an ephemeral node and goes with the session,
// or with a later sweep).
std::vector<DirectoryRemoval> remove_lock_directories(Keeper& keeper,
                                                      const std::vector<std::string>& paths);

// For each path: does it hold our mark (and is it a plain node, not under
// /zookeeper)? One pipelined round trip; what a dry run asks.
std::vector<bool> marked_lock_directories(Keeper& keeper, const std::vector<std::string>& paths);

}  // namespace zkr::detail
