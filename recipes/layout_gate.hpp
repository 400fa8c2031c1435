// What every acquire of a LockFactory's locks waits for: the layout recorded
// under the root is ours, and has not changed since this factory first read
// it. Shared by the factory, its copies and every lock it made (through
// LockOptions::layout_gate), so the check is made once per session, not per
// lock, whatever the order in which the Client connected and the locks were
// made.
//
// Detection. The record is made once and never written again by any
// LockFactory, so any change to it is foreign: rewritten (to another layout,
// to garbage, even to the same text), or deleted (and made again). We keep
// the czxid and mzxid of the first read that showed our layout; every later
// read must show the same two, or the gate refuses for good
// (LayoutRecordChanged; LayoutMismatch if the text is another layout's).
//
// Cost. Each read sets a watch on the record. While the watch of a read in
// the current session stands and has not fired, nothing has changed as of
// every later reply (a watch event comes before them): an acquire then sends
// nothing for the check, and a grant checks a flag. A read is sent only by
// the first acquire in each session (one round trip before its create; two
// if no layout was recorded yet: the record's create, pipelined with its
// parents', then the read) and after the watch fired; a reconnect of the same
// session keeps the watch (the C client sets it again).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "task.hpp"
#include "timer_thread.hpp"
#include "zkr/keeper.hpp"
#include "zkr/lock_factory.hpp"

namespace zkr::detail {

class LayoutGate : public std::enable_shared_from_this<LayoutGate> {
 public:
  LayoutGate(std::string root, const LockLayout& layout, CreateOptions create);

  // Proven for session `epoch` (see the file comment): returns at once when
  // the watch says so, else reads the record (recording ours first if there
  // is none). Throws LayoutMismatch or LayoutRecordChanged, for this and
  // every later call, or KeeperError for a failed request (not final).
  Task<void> verify(std::shared_ptr<Keeper> keeper, std::uint64_t epoch, TimerThread& timers,
                    std::chrono::steady_clock::time_point until);
  // The same, blocking for at most `timeout` (for LockFactory::check_layout).
  void verify_now(std::shared_ptr<Keeper> keeper, std::uint64_t epoch, TimerThread& timers,
                  std::chrono::milliseconds timeout);

  // True if a read in session `epoch` showed our layout and its watch has
  // not fired since. Throws the refusal if one was found. Sends nothing.
  bool proven(std::uint64_t epoch);

  const std::string& record_path() const noexcept { return node_; }

 private:
  struct Seen {
    std::int64_t czxid;
    std::int64_t mzxid;
  };
  // Judges a read of the record made with a watch in session `epoch`: true
  // if it proves our layout; false if there is no record yet (and we never
  // saw one). Throws a refusal (kept) or KeeperError.
  bool judge(const Result<NodeData>& read, std::uint64_t epoch);
  [[noreturn]] void refuse(std::exception_ptr refusal);  // under mutex_
  Watcher watcher();

  const std::string root_;
  const std::string node_;
  const std::string ours_;
  const CreateOptions create_;

  std::mutex mutex_;
  std::optional<Seen> first_;       // guarded by mutex_: the first read showing ours
  std::uint64_t proven_epoch_ = 0;  // guarded by mutex_: 0 = none
  bool fired_ = false;              // guarded by mutex_: the watch fired since
  std::exception_ptr refused_;      // guarded by mutex_: final once set
};

}  // namespace zkr::detail
