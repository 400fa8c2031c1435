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
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
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

class LockFactory {
 public:
  // Throws std::invalid_argument for a bad root (or "/") or zero buckets.
  LockFactory(Client& client, std::string root, LockLayout layout = {}, LockOptions options = {});

  // The lock directory of a key: root/name, or root/bucket/name.
  std::string path_for(std::string_view key) const;
  // The bucket directory of a key ("" for the flat layout).
  std::string bucket_for(std::string_view key) const;

  std::unique_ptr<InterProcessMutex> mutex(std::string_view key) const;
  std::unique_ptr<InterProcessSemaphoreMutex> semaphore_mutex(std::string_view key) const;
  std::unique_ptr<MultiLock> multi_lock(const std::vector<std::string>& keys) const;

  const std::string& root() const noexcept { return root_; }
  const LockLayout& layout() const noexcept { return layout_; }

 private:
  Client& client_;
  std::string root_;
  LockLayout layout_;
  LockOptions options_;
};

}  // namespace zkr
