#include "zkr/cleanup.hpp"

#include <spdlog/spdlog.h>

#include "lock_driver.hpp"
#include "lock_internals.hpp"
#include "lock_tree.hpp"
#include "zkr/lock_factory.hpp"
#include "zkr/path.hpp"

namespace zkr {

std::string_view to_string(LockNodeKind kind) noexcept {
  switch (kind) {
    case LockNodeKind::mutex: return "mutex";
    case LockNodeKind::read: return "read";
    case LockNodeKind::write: return "write";
    case LockNodeKind::lease: return "lease";
    case LockNodeKind::latch: return "latch";
  }
  return "unknown";
}

std::size_t LockInfo::holders() const noexcept {
  if (queue.empty()) return 0;
  if (queue.front().kind == LockNodeKind::lease)
    return static_cast<std::size_t>(
        std::count_if(queue.begin(), queue.end(),
                      [](const LockNodeInfo& n) { return n.kind == LockNodeKind::lease; }));
  if (queue.front().kind != LockNodeKind::read) return 1;
  std::size_t readers = 0;
  while (readers < queue.size() && queue[readers].kind == LockNodeKind::read) ++readers;
  return readers;
}

namespace {

using detail::ChildEntry;
using detail::DirectoryRemoval;
using detail::LockTree;

std::string too_large_message(const std::string& path, std::uint64_t children,
                              std::uint64_t limit) {
  return "refusing to list " + path + ": it has " + std::to_string(children) +
         " children, more than the limit of " + std::to_string(limit) +
         " (raise the limit to list it anyway; the hashed layout keeps directories small)";
}

LockNodeKind kind_of(std::string_view name) {
  if (!detail::is_queue_node(name)) return LockNodeKind::lease;
  switch (detail::queue_kind(name).value_or(detail::QueueKind::mutex)) {
    case detail::QueueKind::read: return LockNodeKind::read;
    case detail::QueueKind::write: return LockNodeKind::write;
    case detail::QueueKind::latch: return LockNodeKind::latch;
    case detail::QueueKind::mutex: break;
  }
  return LockNodeKind::mutex;
}

LockInfo lock_info(const std::string& dir, std::vector<ChildEntry> lock_nodes) {
  LockInfo info;
  info.path = dir;
  info.key = decode_key(node_name(dir));
  std::vector<std::string> names;
  for (const auto& node : lock_nodes) names.push_back(node.name);
  auto sorted = detail::sorted_queue_nodes(names, detail::QueueFamily::mutex);
  for (const auto family : {detail::QueueFamily::read_write, detail::QueueFamily::latch})
    for (auto& name : detail::sorted_queue_nodes(names, family)) sorted.push_back(std::move(name));
  // Leases, in the order they were made (the text after the last "lease-").
  std::vector<std::string> leases;
  for (const auto& name : names)
    if (!detail::is_queue_node(name) && detail::is_lease_node(name)) leases.push_back(name);
  const auto after = [](const std::string& n) { return n.substr(n.rfind(detail::kLeaseName)); };
  std::sort(leases.begin(), leases.end(),
            [&](const auto& a, const auto& b) { return after(a) < after(b); });
  sorted.insert(sorted.end(), leases.begin(), leases.end());
  for (const auto& name : sorted) {
    const auto& node = *std::find_if(lock_nodes.begin(), lock_nodes.end(),
                                     [&](const ChildEntry& e) { return e.name == name; });
    info.queue.push_back({.kind = kind_of(node.name),
                          .name = node.name,
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
        if (!child.readable) continue;  // guarded against us: not shown
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
// sweep empties goes in the same run. Only what lock_directory.hpp proves ours
// is removed; everything else is walked around.
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
      std::vector<std::string> candidates;
      for (const auto& child : page) {
        const auto path = join_path(dir, child.name);
        if (path == "/zookeeper") {
          ++left;  // the server's own: never looked into
        } else if (!child.readable) {
          ++report_.not_ours;
          ++left;
        } else if (child.name == kLayoutNodeName) {
          // A LockFactory's layout record: it keeps the root, so that a
          // factory configured otherwise is refused for as long as it lives.
          ++left;
        } else if (child.stat.is_ephemeral()) {
          // Held or waited on: a live session owns it. Never ours to touch.
          if (child.lock_node) ++report_.live_lock_nodes;
          ++left;
        } else if (child.lock_node) {
          // No lock of this library makes a persistent lock node: someone
          // else's. It blocks the queue, and is reported, not removed.
          ++report_.foreign_lock_nodes;
          ++left;
        } else if (child.stat.num_children == 0 ||
                   (depth < options_.max_depth && clean_below(path, depth + 1))) {
          candidates.push_back(path);
        } else {
          ++left;
        }
      }
      left += remove(candidates);
    });
    return left == 0;
  }

  // The root, by the same rules as any directory.
  void remove_root(const std::string& root) { (void)remove({root}); }

  CleanReport report() const { return report_; }

 private:
  bool clean_below(const std::string& dir, unsigned depth) {
    try {
      return clean(dir, depth);
    } catch (const KeeperError& e) {
      if (e.errc() == Errc::no_node) return false;  // gone meanwhile: nothing to remove
      // Guarded against us: another identity's, swept around like any data.
      if (e.errc() == Errc::no_auth) {
        ++report_.not_ours;
        return false;
      }
      throw;
    }
  }

  // Removes the candidates that are ours; the count of what stayed.
  std::uint64_t remove(const std::vector<std::string>& paths) {
    if (paths.empty()) return 0;
    std::vector<DirectoryRemoval> outcomes;
    if (options_.dry_run) {
      // What a real run would remove: ours, and empty once the sweep below
      // it is done (which is all a candidate can be).
      for (const bool ours : tree_.marked(paths))
        outcomes.push_back(ours ? DirectoryRemoval::removed : DirectoryRemoval::not_ours);
    } else {
      outcomes = tree_.remove_directories(paths);
    }
    std::uint64_t stayed = 0;
    for (std::size_t i = 0; i < paths.size(); ++i) {
      switch (outcomes[i]) {
        case DirectoryRemoval::removed:
          ++report_.empty_directories;
          if (options_.on_remove) options_.on_remove(paths[i], CleanAction::empty_directory);
          break;
        case DirectoryRemoval::gone: break;
        case DirectoryRemoval::not_ours:
          ++report_.not_ours;
          ++stayed;
          break;
        case DirectoryRemoval::in_use:
          // A contender queued in it since we looked: it is in use again.
          ++report_.raced;
          ++stayed;
          break;
      }
    }
    return stayed;
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
  if (empty && options.remove_root) cleaner.remove_root(root);
  auto report = cleaner.report();
  report.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  return report;
}

void create_marked_parents(Keeper& keeper, const std::string& path, OptionalTimeout timeout) {
  keeper.create_parents(path, CreateMode::container, timeout, kLockDirectoryMark);
}

}  // namespace zkr
