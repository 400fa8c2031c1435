// Walking a tree of lock directories a page at a time: the part that scan_locks
// and clean_lock_root share.
//
// A directory is listed once (after a stat bounds its size), then its children
// are looked at a page at a time: one pipelined round trip of stats (or reads,
// for lock nodes, whose data names the holder) per page, so a directory of a
// million keys costs a thousand round trips, not a million, and no more than a
// page of replies is held at once.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lock_directory.hpp"
#include "zkr/cleanup.hpp"

namespace zkr::detail {

// One child as a page shows it.
struct ChildEntry {
  std::string name;
  Stat stat;
  std::string data;  // lock nodes only: what the contender wrote
  // Named like a lock node (ours or Curator's), and not a directory: no
  // children, and not one of our marked directories (a key may be named so).
  bool lock_node = false;
  bool readable = true;  // false: its ACL refuses us (no_auth); stat and data unknown
};

struct WalkLimits {
  std::uint64_t max_children;
  std::size_t page_size;
};

class LockTree {
 public:
  LockTree(Client& client, WalkLimits limits, std::function<void(const WalkProgress&)> on_progress);

  // Lists dir (guarded) and hands its children to on_page, a page at a time.
  // Children gone between the listing and their page are left out. Throws
  // ListingTooLarge, or KeeperError when the retry policy gives up.
  void for_each_page(const std::string& dir,
                     const std::function<void(std::vector<ChildEntry>&)>& on_page);

  // Removes the directories of a page that are provably ours and empty
  // (lock_directory.hpp); one outcome per path, in order.
  std::vector<DirectoryRemoval> remove_directories(const std::vector<std::string>& paths);
  // Which of them hold our mark: what a dry run may list.
  std::vector<bool> marked(const std::vector<std::string>& paths);

  Client& client() const noexcept { return client_; }

 private:
  std::vector<ChildEntry> look_at(const std::string& dir, const std::vector<std::string>& names);

  Client& client_;
  const WalkLimits limits_;
  const std::function<void(const WalkProgress&)> on_progress_;
  WalkProgress progress_;
};

}  // namespace zkr::detail
