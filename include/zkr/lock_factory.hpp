// zkr/lock_factory.hpp: locks by key under one root, with the path layout in
// one place.
//
// Keys are arbitrary non-empty strings (a file checksum, a transaction id);
// each becomes one valid, unique znode name. With the hashed layout the keys
// spread over bucket directories, so that no directory collects more children
// than ZooKeeper can list in one reply.
//
//   zkr::LockFactory locks(client, "/app/locks", zkr::LockLayout::hashed_for(1'000'000));
//   auto mutex = locks.mutex("sha256:9f86d081884c7d65");   // /app/locks/0a3f/sha256%3A9f86...
//   std::scoped_lock hold(*mutex);
//
// Every process must use the same layout for a root: with different ones a key
// has two paths and the locks exclude nothing. So a factory records its layout
// under the root (kLayoutNodeName), and no acquire of its locks can be granted
// before the record was read and found to be ours: whatever the order in
// which the Client connected and the locks were made, every acquire form
// (async ones too) waits for the check or fails with LayoutMismatch.
//
// The record is made once and never written again, and with the locks' ACL
// (open by default, so that every contender can read it): anyone may change
// it. A change is refused, never followed: the factory keeps the czxid and
// mzxid of its first read, and a record rewritten (to any text, even ours),
// or deleted, or deleted and made again makes every later acquire of its
// locks fail with LayoutRecordChanged, naming what was found. Cost: a watch
// on the record says when to read it again, so only the first acquire in
// each session sends a read (one round trip before its create); later ones
// and their grants check a flag (recipes/layout_gate.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "zkr/lock.hpp"
#include "zkr/multi_lock.hpp"

namespace zkr {

struct LockLayout {
  enum class Kind { flat, hashed };
  Kind kind = Kind::flat;
  std::uint32_t buckets = 256;  // hashed only: how many bucket directories

  static LockLayout flat() { return {}; }
  static LockLayout hashed(std::uint32_t buckets);
  // Enough buckets (a power of two) that, with `expected_keys` keys, a bucket
  // holds on average a quarter of max_children: a uniform hash then exceeds
  // max_children in no bucket, short of astronomically bad luck.
  static LockLayout hashed_for(std::uint64_t expected_keys, std::uint32_t max_children = 10000);
};

// The znode name of a key: [A-Za-z0-9_-] stay as they are, every other byte
// becomes %XX. A name that would exceed kMaxEncodedKey keeps a prefix and ends
// in "~" and the key's SHA-1, so it stays unique. Throws std::invalid_argument
// for an empty key.
inline constexpr std::size_t kMaxEncodedKey = 200;
std::string encode_key(std::string_view key);
// The key of a name made by encode_key; nullopt for a hashed long key or a
// name encode_key cannot have made.
std::optional<std::string> decode_key(std::string_view name);

// The child of a lock root where LockFactory records the root's layout: a
// persistent node whose data is layout_record(layout). The "." makes it a
// name that neither encode_key (which escapes ".") nor a bucket (hex digits)
// can produce, so no key's lock directory can ever be it, and it is not named
// like a lock node. Lock scans ignore it (no lock nodes in it); the cleaner
// keeps it (a node with data is not an empty lock directory).
inline constexpr std::string_view kLayoutNodeName = "_zkr.layout";

// What a layout is recorded as: "zkr-lock-layout v1 flat" or
// "zkr-lock-layout v1 hashed <buckets>".
std::string layout_record(const LockLayout& layout);

// The layout recorded under a root is not the factory's.
class LayoutMismatch : public std::logic_error {
 public:
  LayoutMismatch(std::string root, std::string recorded, std::string ours);
  const std::string& root() const noexcept { return root_; }
  const std::string& recorded() const noexcept { return recorded_; }
  const std::string& ours() const noexcept { return ours_; }

 protected:
  LayoutMismatch(std::string root, std::string recorded, std::string ours,
                 const std::string& message);

 private:
  std::string root_, recorded_, ours_;
};

// The layout record changed after this factory read it (recorded() says how:
// deleted, or its czxid and mzxid against the first read's): someone other
// than a LockFactory wrote or deleted it, and a layout that changes under
// running locks proves nothing. Final for the factory and its locks.
class LayoutRecordChanged : public LayoutMismatch {
 public:
  LayoutRecordChanged(std::string root, std::string found, std::string ours);
};

class LockFactory {
 public:
  // Throws std::invalid_argument for a bad root (or "/") or zero buckets.
  // Sends nothing: the layout is checked when the first lock is made.
  LockFactory(Client& client, std::string root, LockLayout layout = {}, LockOptions options = {});

  // Reads the layout recorded under the root, recording ours first if none is
  // (a create that, should another process record one at the same moment,
  // fails with node_exists, and we read theirs). Throws LayoutMismatch if the
  // recorded layout differs from ours (LayoutRecordChanged if it changed
  // since), KeeperError if it cannot be read or recorded (after the Client's
  // retry policy). For callers who want to know at startup: acquires check
  // anyway.
  void check_layout() const;

  // The lock directory of a key: root/name, or root/bucket/name.
  std::string path_for(std::string_view key) const;
  // The bucket directory of a key ("" for the flat layout).
  std::string bucket_for(std::string_view key) const;

  // Each of these checks the layout first if it is not proven in the current
  // session: LayoutMismatch (or LayoutRecordChanged) if another is recorded,
  // for this lock and every later one. That check makes one attempt, and
  // only while connected: if it cannot be made now the lock is made all the
  // same, and its acquires check before they can be granted.
  std::unique_ptr<InterProcessMutex> mutex(std::string_view key) const;
  std::unique_ptr<NonReentrantMutex> non_reentrant_mutex(std::string_view key) const;
  std::unique_ptr<MultiLock> multi_lock(const std::vector<std::string>& keys) const;

  const std::string& root() const noexcept { return root_; }
  const LockLayout& layout() const noexcept { return layout_; }

 private:
  void check_layout_if_unchecked() const;

  Client& client_;
  std::string root_;
  LockLayout layout_;
  LockOptions options_;  // with layout_gate: shared by copies of the factory and its locks
};

}  // namespace zkr
