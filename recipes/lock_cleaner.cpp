#include "zkr/cleanup.hpp"

#include <spdlog/spdlog.h>

#include "lock_driver.hpp"
#include "lock_internals.hpp"
#include "lock_tree.hpp"
#include "zkr/lock_factory.hpp"
#include "zkr/path.hpp"

namespace zkr {
namespace {

using detail::ChildEntry;
using detail::LockTree;

std::string too_large_message(const std::string& path, std::uint64_t children,
                              std::uint64_t limit) {
  return "refusing to list " + path + ": it has " + std::to_string(children) +
         " children, more than the limit of " + std::to_string(limit) +
         " (raise the limit to list it anyway; the hashed layout keeps directories small)";
}

LockInfo lock_info(const std::string& dir, std::vector<ChildEntry> lock_nodes) {
  LockInfo info;
  info.path = dir;
  info.key = decode_key(node_name(dir));
  std::vector<std::string> names;
  for (const auto& node : lock_nodes) names.push_back(node.name);
  for (const auto& name : detail::sorted_lock_nodes(names)) {
    const auto& node = *std::find_if(lock_nodes.begin(), lock_nodes.end(),
                                     [&](const ChildEntry& e) { return e.name == name; });
    info.queue.push_back({.name = node.name,
                          .holder_id = node.data,
                          .czxid = node.stat.czxid,
                          .ctime_ms = node.stat.ctime,
                          .ephemeral_owner = node.stat.ephemeral_owner});
  }
  return info;
}

class Scanner {
 public:
  Scanner(Client& client, const ScanOptions& options,
          const std::function<void(const LockInfo&)>& on_lock)
      : tree_(client, {options.max_children, options.page_size}, options.on_progress),
        max_depth_(options.max_depth),
        on_lock_(on_lock) {}

  void scan(const std::string& dir, unsigned depth) {
    std::vector<ChildEntry> lock_nodes;
    std::vector<std::string> subdirs;
    tree_.for_each_page(dir, [&](std::vector<ChildEntry>& page) {
      for (auto& child : page) {
        if (child.lock_node) lock_nodes.push_back(std::move(child));
        else if (child.stat.num_children > 0 && depth < max_depth_)
          subdirs.push_back(join_path(dir, child.name));
      }
    });
    if (!lock_nodes.empty()) on_lock_(lock_info(dir, std::move(lock_nodes)));
    for (const auto& sub : subdirs) {
      try {
        scan(sub, depth + 1);
      } catch (const KeeperError& e) {
        if (e.errc() != Errc::no_node) throw;  // gone meanwhile: a release took it
      }
    }
  }

 private:
  LockTree tree_;
  const unsigned max_depth_;
  const std::function<void(const LockInfo&)>& on_lock_;
};

// Post-order: a directory is looked at after its children, so one that the
// sweep empties goes in the same run.
class Cleaner {
 public:
  Cleaner(Client& client, const CleanOptions& options)
      : tree_(client, {options.max_children, options.page_size}, options.on_progress),
        options_(options) {}

  // True if dir has (or, dry run, would have) no child left.
  bool clean(const std::string& dir, unsigned depth) {
    ++report_.directories_seen;
    std::uint64_t left = 0;
    tree_.for_each_page(dir, [&](std::vector<ChildEntry>& page) {
      std::vector<std::string> doomed;
      std::vector<CleanAction> actions;
      for (const auto& child : page) {
        const auto path = join_path(dir, child.name);
        if (child.stat.is_ephemeral()) {
          // Held or waited on: a live session owns it. Never ours to touch.
          if (child.lock_node) ++report_.live_lock_nodes;
          ++left;
        } else if (child.stat.num_children == 0 && (child.lock_node || child.stat.data_length == 0)) {
          // An orphan lock node, or an empty directory (lock directories hold
          // no data: a node with data is someone's, not a lock's).
          doomed.push_back(path);
          actions.push_back(child.lock_node ? CleanAction::orphan_node
                                            : CleanAction::empty_directory);
        } else if (child.stat.num_children > 0 && depth < options_.max_depth &&
                   clean_below(path, depth + 1)) {
          doomed.push_back(path);
          actions.push_back(CleanAction::empty_directory);
        } else {
          ++left;
        }
      }
      left += remove(doomed, actions);
    });
    return left == 0;
  }

  CleanReport report() const { return report_; }

 private:
  bool clean_below(const std::string& dir, unsigned depth) {
    try {
      return clean(dir, depth);
    } catch (const KeeperError& e) {
      if (e.errc() == Errc::no_node) return false;  // gone meanwhile: nothing to remove
      throw;
    }
  }

  // Removes what a page doomed, all at once; the count of what stayed.
  std::uint64_t remove(const std::vector<std::string>& paths,
                       const std::vector<CleanAction>& actions) {
    if (paths.empty()) return 0;
    std::vector<Errc> results(paths.size(), Errc::ok);
    if (!options_.dry_run) results = tree_.remove_all(paths);
    std::uint64_t stayed = 0;
    for (std::size_t i = 0; i < paths.size(); ++i) {
      if (results[i] == Errc::ok || results[i] == Errc::no_node) {
        count(actions[i]);
        if (options_.on_remove) options_.on_remove(paths[i], actions[i]);
      } else if (results[i] == Errc::not_empty) {
        // A contender queued in it since we looked: it is in use again.
        ++report_.raced;
        ++stayed;
      } else {
        throw KeeperError(results[i], paths[i], "removing during cleanup");
      }
    }
    return stayed;
  }

  void count(CleanAction action) {
    if (action == CleanAction::orphan_node) ++report_.orphan_nodes;
    else ++report_.empty_directories;
  }

  LockTree tree_;
  const CleanOptions& options_;
  CleanReport report_;
};

}  // namespace

ListingTooLarge::ListingTooLarge(std::string path, std::uint64_t children, std::uint64_t limit)
    : std::runtime_error(too_large_message(path, children, limit)),
      path_(std::move(path)),
      children_(children),
      limit_(limit) {}

Children list_children(Keeper& keeper, const std::string& path, std::uint64_t max_children) {
  const auto stat = keeper.exists(path);
  if (!stat) throw KeeperError(Errc::no_node, path, "listing");
  if (static_cast<std::uint64_t>(stat->num_children) > max_children)
    throw ListingTooLarge(path, static_cast<std::uint64_t>(stat->num_children), max_children);
  return keeper.children(path);
}

void scan_locks(Client& client, const std::string& root, const ScanOptions& options,
                const std::function<void(const LockInfo&)>& on_lock) {
  validate_path(root);
  Scanner(client, options, on_lock).scan(root, 0);
}

CleanReport clean_lock_root(Client& client, const std::string& root, const CleanOptions& options) {
  validate_path(root);
  const auto start = std::chrono::steady_clock::now();
  Cleaner cleaner(client, options);
  const bool empty = cleaner.clean(root, 0);
  auto report = cleaner.report();
  if (empty && options.remove_root && root != "/" && !options.dry_run) {
    const auto removed = client.with_retry([&](Keeper& keeper) { return keeper.try_remove(root); },
                                           {.retry_session_expired = true});
    if (removed.ok()) {
      ++report.empty_directories;
      if (options.on_remove) options.on_remove(root, CleanAction::empty_directory);
    } else if (removed.error() == Errc::not_empty) {
      ++report.raced;
    }
  }
  report.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  return report;
}

}  // namespace zkr
