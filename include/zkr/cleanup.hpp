// zkr/cleanup.hpp: looking at and sweeping a lock root.
//
// Locks clean up after themselves: lock directories are container znodes, and
// a release removes its directory at once when it is empty. What is left to a
// sweep is what a lock could not remove: a directory whose last contender's
// session died, a hashed bucket, a lock root.
//
// Lock roots are often shared with other applications, so a sweep removes
// only what it can prove this library made: a directory holding the
// library's mark (every directory it creates does), empty, checked at the
// moment of the delete (recipes/lock_directory.hpp). It never removes a node
// with other data, a node it did not mark (an empty persistent node of another
// application, a container made by Curator or by an older version of this
// library), an ephemeral node (a held or waited-on lock: its session owns
// it), anything under /zookeeper, nor a lock-named node that no session owns
// (no lock of this library makes one: it is reported, since it blocks every
// contender queued behind it, and left for a person to remove). A root that
// mixes lock directories with other data is swept around that data; the root
// itself goes only with remove_root, and by the same rules. A LockFactory's
// layout record (kLayoutNodeName) stays, and with it the root it describes.
//
// Huge directories are listed once and then worked through page by page, a
// page of requests in flight at a time. Before any listing, a stat says how
// many children there are; above `max_children` the call throws
// ListingTooLarge naming the path and the count, instead of pulling a reply of
// unbounded size.
//
//   zkr::CleanOptions options{.dry_run = true};
//   options.on_remove = [](const std::string& path, zkr::CleanAction) { std::cout << path << '\n'; };
//   auto report = zkr::clean_lock_root(client, "/app/locks", options);
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "zkr/client.hpp"

namespace zkr {

// The data of every directory zkrecipes creates (lock directories, their
// missing parents, hashed buckets): what tells a sweep, or a release, that a
// node is the library's to remove. A tool that makes lock directories for
// zkrecipes to clean up may write it too; nothing else should.
inline constexpr std::string_view kLockDirectoryMark = "zkrecipes lock directory v1";

// Creates every missing ancestor of path (not path itself) as a container
// holding kLockDirectoryMark: directories a sweep may remove once they are
// empty, as the servers reap them. The recipes make their parents so; a tool
// that puts its own nodes under a lock root may too.
void create_marked_parents(Keeper& keeper, const std::string& path, OptionalTimeout timeout = {});

// A directory has more children than the caller allowed to list.
class ListingTooLarge : public std::runtime_error {
 public:
  ListingTooLarge(std::string path, std::uint64_t children, std::uint64_t limit);
  const std::string& path() const noexcept { return path_; }
  std::uint64_t children() const noexcept { return children_; }
  std::uint64_t limit() const noexcept { return limit_; }

 private:
  std::string path_;
  std::uint64_t children_;
  std::uint64_t limit_;
};

// Default bound for listings made to show things to people (zkr ls).
inline constexpr std::uint64_t kDefaultListingLimit = 100'000;

// The children of path, after a stat has shown there are at most max_children.
// Throws ListingTooLarge above it, KeeperError (no_node, ...) otherwise.
Children list_children(Keeper& keeper, const std::string& path,
                       std::uint64_t max_children = kDefaultListingLimit);

// Whose queue a lock node is in: a mutex's (InterProcessMutex of either
// library, our NonReentrantMutex), a read/write lock's reader or
// writer (InterProcessReadWriteLock of either library), or a semaphore's
// lease (InterProcessSemaphoreV2 of either library, in its leases/), or a
// leader latch's participant (LeaderLatch of either library: the first leads).
enum class LockNodeKind { mutex, read, write, lease, latch };
std::string_view to_string(LockNodeKind kind) noexcept;

// One contender's node in a lock directory.
struct LockNodeInfo {
  LockNodeKind kind = LockNodeKind::mutex;
  std::string name;
  std::string holder_id;             // what the contender wrote: host, pid, thread
  std::int64_t czxid = 0;            // the fencing token it holds or will hold (but for a
                                     // downgraded read, which holds its write's)
  std::int64_t ctime_ms = 0;         // ms since the epoch, server clock
  std::int64_t ephemeral_owner = 0;  // its session; 0 means nobody owns it
};

// A lock directory with at least one lock node.
struct LockInfo {
  std::string path;                 // the directory
  std::optional<std::string> key;   // decoded from the directory name, when encode_key made it
  std::vector<LockNodeInfo> queue;  // holders first, then waiters in order
  // How many of the queue hold the lock: the first node, for a read/write
  // lock every reader before the first writer, for a semaphore's leases/
  // every lease (while a contender waits, its lease node is there too: it
  // holds the semaphore's internal mutex, listed as a lock at <path>/locks).
  // (A directory with nodes of several kinds, which the locks refuse, shows
  // the mutex queue's first.)
  std::size_t holders() const noexcept;
  std::size_t waiters() const noexcept { return queue.size() - holders(); }
};

struct WalkProgress {
  std::uint64_t directories = 0;  // looked at so far
  std::uint64_t nodes = 0;        // children looked at so far
};

struct ScanOptions {
  std::uint64_t max_children = kDefaultListingLimit;     // per directory listed
  std::size_t page_size = 1000;                          // requests in flight at a time
  unsigned max_depth = 4;                                // levels below root (hashed layout uses 2)
  std::function<void(const WalkProgress&)> on_progress;  // after each page
};

// Calls on_lock for every lock directory under root (root included), in no
// particular order. Throws ListingTooLarge, or KeeperError (no_node if root
// does not exist).
void scan_locks(Client& client, const std::string& root, const ScanOptions& options,
                const std::function<void(const LockInfo&)>& on_lock);

enum class CleanAction { empty_directory };

struct CleanOptions {
  bool dry_run = false;                     // report, remove nothing
  std::uint64_t max_children = 10'000'000;  // per directory listed
  std::size_t page_size = 1000;             // requests in flight at a time
  unsigned max_depth = 4;                   // levels below root
  bool remove_root = false;                 // also remove root if it ends up empty and is ours
  std::function<void(const WalkProgress&)> on_progress;  // after each page
  // Each path removed (dry run: that would be), as it goes.
  std::function<void(const std::string& path, CleanAction action)> on_remove;
};

struct CleanReport {
  std::uint64_t directories_seen = 0;
  std::uint64_t empty_directories = 0;   // ours, removed (or, dry run: would be)
  std::uint64_t not_ours = 0;            // empty, but not provably ours: kept
  std::uint64_t foreign_lock_nodes = 0;  // lock-named, no session owns them: kept, reported
  std::uint64_t live_lock_nodes = 0;     // held or waiting: kept
  std::uint64_t raced = 0;               // not removed: something appeared under it meanwhile
  std::chrono::milliseconds elapsed{0};
};

// Sweeps root as described above. Throws ListingTooLarge, or KeeperError
// (no_node if root does not exist) for what the Client's retry policy gives up on.
CleanReport clean_lock_root(Client& client, const std::string& root,
                            const CleanOptions& options = {});

}  // namespace zkr
