// The floor: the least a ZooKeeper lock can cost. One session of the bare C
// client runs the minimal lock protocol with synchronous calls (create an
// ephemeral sequential node, list the directory, delete the node) on a parent
// that already exists. Every zkr figure is also shown as a ratio to it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "stats.hpp"

namespace zkr::bench {

class Floor {
 public:
  // Connects (std::runtime_error after 15 s) and creates root (a container,
  // which the server reaps once empty) and root/floor.
  Floor(const std::string& connect, const std::string& root);
  // Removes root/floor and closes the session.
  ~Floor();
  Floor(const Floor&) = delete;
  Floor& operator=(const Floor&) = delete;

  // Runs cycles for `duration` or max_cycles, whichever comes first, adding
  // each cycle's time to samples; returns how many. Throws std::runtime_error.
  std::uint64_t cycle_for(std::chrono::milliseconds duration, std::uint64_t max_cycles,
                          Samples& samples);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The floor of a contended lock (W2): the textbook protocol on the bare C
// client, one session each. Acquire: create an ephemeral sequential node,
// list the directory; if ours is the lowest, held; else watch the next lower
// node (exists with a watch), wait for its event, list again. Release: delete
// ours. No retries, no recovery: what a competent engineer writes in twenty
// lines, and the least such a lock costs.
class FloorLock {
 public:
  // How a waiter decides it holds the lock once the node before it goes.
  enum class Grant {
    listing,      // it lists the directory again: the textbook protocol (and ours)
    event_alone,  // the deletion event is the grant, and a release does not
                  // wait for its reply: the unsafe probe, measured to show what
                  // the listing costs. Unsafe: a waiter whose predecessor left
                  // the queue, or whose process stopped past its session's
                  // expiry, is granted while another holds. Right in W2 only,
                  // where every node goes after it held the lock.
  };
  // Connects (std::runtime_error after 15 s); dir must exist.
  FloorLock(const std::string& connect, std::string dir, Grant grant = Grant::listing);
  ~FloorLock();
  FloorLock(const FloorLock&) = delete;
  FloorLock& operator=(const FloorLock&) = delete;

  // True once held; false at the deadline (our node is then deleted).
  // Throws std::runtime_error on an error from the server.
  bool try_acquire_for(std::chrono::milliseconds timeout);
  void release();
  // The czxid of our node: the fencing token of the grant.
  std::int64_t token() const noexcept { return token_; }

  // Creates dir (persistent) through a session of its own, if missing.
  static void create_dir(const std::string& connect, const std::string& root,
                         const std::string& dir);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  Grant grant_;
  std::int64_t token_ = 0;
};

}  // namespace zkr::bench
