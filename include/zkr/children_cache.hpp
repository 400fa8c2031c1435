// zkr/children_cache.hpp: the children of one node and their data, kept
// up to date by watches.
//
// A ChildrenCache keeps a copy of the children of a path: each child's name,
// data and Stat. It tells of every change (a child added, its data updated,
// a child removed) in order, and snapshot() returns the whole view at once:
//
//   zkr::ChildrenCacheOptions options;
//   options.on_event = [](const zkr::ChildEvent& e) {
//     log(zkr::to_string(e.type), e.name, e.node.data);
//   };
//   zkr::ChildrenCache members(client, "/services/search", options);
//   members.start();
//   if (!members.wait_until_initialized(10s)) ...;   // no connection yet
//   for (const auto& [name, node] : members.snapshot()) ...;
//   members.close();
//
// One-shot watches only (Debian's C client has no persistent watches): a
// watch on the children and one on each child, each set again by the read
// that follows its firing. A request whose reply is lost with the connection
// sets no watch, so every change of the connection (reconnected, a new
// session) makes the cache read everything again. A child's data change is
// told by its mzxid, never its version (versions start again when a node is
// re-created); a child deleted and created again under the same name has a
// new czxid and is told as removed, then added.
//
// A missing parent is an empty group, not an error: its creation is
// watched. A parent deleted makes every child removed; created again, it is
// read like a new one.
//
// The view is what the servers held at the last read, which may lag behind
// them by the time a watch takes to fire: a cache is never a lock.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "zkr/client.hpp"
#include "zkr/types.hpp"

namespace zkr {

/// One child as the cache last read it.
struct ChildNode {
  std::string data;
  Stat stat;  ///< czxid, mzxid, ephemeral_owner, ... of the child
  friend bool operator==(const ChildNode&, const ChildNode&) = default;
};

/// The view: child name (not path) -> child.
using ChildMap = std::map<std::string, ChildNode>;

enum class ChildEventType {
  added,    ///< a child appeared (or was created again: see removed)
  updated,  ///< a child's data changed (a new mzxid, same czxid)
  removed,  ///< a child went (node is what the cache last held)
};
std::string_view to_string(ChildEventType type) noexcept;

struct ChildEvent {
  ChildEventType type;
  std::string name;  ///< the child's name, not its path
  ChildNode node;
  friend bool operator==(const ChildEvent&, const ChildEvent&) = default;
};

struct ChildrenCacheOptions {
  /// Told of every change, on the Client's callback thread, in the order the
  /// cache saw them; the events of one read come together, and snapshot()
  /// already shows them. It must not block for long: other recipes'
  /// callbacks wait.
  std::function<void(const ChildEvent&)> on_event;
};

/// The children of one path, with their data (see the file comment).
class ChildrenCache {
 public:
  /// std::invalid_argument for a bad path (zkr/path.hpp). Sends nothing.
  ChildrenCache(Client& client, std::string path, ChildrenCacheOptions options = {});
  /// close(); never throws.
  ~ChildrenCache();
  ChildrenCache(const ChildrenCache&) = delete;
  ChildrenCache& operator=(const ChildrenCache&) = delete;

  /// Starts reading and watching. std::logic_error if started before or closed.
  void start();
  /// Waits until the first whole read is done (true), or the timeout passes.
  bool wait_until_initialized(std::chrono::milliseconds timeout) const;
  /// The children as of the last read: one consistent view, never a mix of
  /// two reads.
  ChildMap snapshot() const;
  /// Stops watching; events not yet told are dropped (one being told may
  /// still be running). Final. Never throws.
  void close() noexcept;
  const std::string& path() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace zkr
