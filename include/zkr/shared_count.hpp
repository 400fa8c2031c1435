// zkr/shared_count.hpp: Curator's SharedCount, an int shared through one node.
//
// The count lives in one persistent node as a 4-byte big-endian int, exactly
// as Curator's SharedCount stores it, so Java and C++ services share it. A
// write is either unconditional (set_count) or a compare-and-set on the
// node's version (try_set_count), and listeners hear every value the count
// takes that we read:
//
//   zkr::SharedCount generation(client, "/app/generation", /*seed=*/0);
//   generation.add_listener([](zkr::VersionedCount c) { reload(c.value); });
//   generation.start();                                 // creates it with the seed if missing
//   auto seen = generation.get_versioned_count();
//   if (generation.try_set_count(seen, seen.value + 1) == zkr::CounterOutcome::succeeded) ...
//
// Two faults of Curator's are not repeated. Its cache accepts a value only if
// its version is not lower than the cached one, so once the int32 version
// wrapped past 2^31 - 1 it ignored every change (CURATOR-688): here versions
// are compared for equality only, and "newer" means a higher mzxid (a 64-bit
// zxid, which does not wrap). And it could keep a stale value after a
// reconnect (CURATOR-311/331): here every change of the connection makes it
// read the node again, and a watch is set with every read.
//
// A lost reply to try_set_count() is `indeterminate` (zkr/counter_outcome.hpp),
// unless a re-read proves it was not applied: then the same compare-and-set is
// sent again, which cannot apply twice. A node whose data is not 4 bytes is
// refused with CounterDataError naming the path and the size.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "zkr/client.hpp"
#include "zkr/counter_outcome.hpp"
#include "zkr/types.hpp"

namespace zkr {

/// A counter node holds data of the wrong size for its encoding.
class CounterDataError : public std::runtime_error {
 public:
  CounterDataError(const std::string& path, std::size_t size, std::size_t expected);
  const std::string& path() const noexcept { return path_; }
  std::size_t size() const noexcept { return size_; }

 private:
  std::string path_;
  std::size_t size_;
};

/// A count and the node version it was read at (Curator's VersionedValue).
struct VersionedCount {
  Version version = 0;
  std::int32_t value = 0;
  friend bool operator==(const VersionedCount&, const VersionedCount&) = default;
};

class SharedCount {
 public:
  using Listener = std::function<void(VersionedCount)>;
  using ListenerId = std::uint64_t;

  /// std::invalid_argument for a bad path (zkr/path.hpp) or the root. Sends nothing.
  SharedCount(Client& client, std::string path, std::int32_t seed);
  /// close(); never throws.
  ~SharedCount();
  SharedCount(const SharedCount&) = delete;
  SharedCount& operator=(const SharedCount&) = delete;

  /// Creates the node with the seed if it is missing (parents as containers,
  /// as Curator does), reads it, and starts watching it. Throws KeeperError
  /// when the retry policy gives up, CounterDataError for a node of the wrong
  /// size, std::logic_error if started before or closed.
  void start();
  /// The last value read (or written by us). std::logic_error before start().
  std::int32_t get_count() const;
  VersionedCount get_versioned_count() const;
  /// Writes the count whatever the node holds. Throws KeeperError on any
  /// failure; after a connection error the write may or may not have been
  /// applied (it is not repeated).
  void set_count(std::int32_t value);
  /// Writes `value` only if the node's version is still `previous.version`:
  /// succeeded, conflict (the node changed since; the cache is read again), or
  /// indeterminate (see the file comment). KeeperError for other failures.
  [[nodiscard]] CounterOutcome try_set_count(VersionedCount previous, std::int32_t value);

  /// Called with each new value read, on the Client's callback thread, in
  /// order. Our own successful writes count too. It must not block for long:
  /// other recipes' callbacks wait.
  ListenerId add_listener(Listener listener);
  /// After it returns the listener is not started again (one running on the
  /// callback thread may still be finishing).
  void remove_listener(ListenerId id);

  /// Stops watching and removes every listener. The node stays (it is
  /// shared). Final; never throws.
  void close() noexcept;
  const std::string& path() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace zkr
