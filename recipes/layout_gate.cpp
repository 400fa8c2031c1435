#include "layout_gate.hpp"

#include <future>
#include <utility>
#include <vector>

#include <spdlog/fmt/fmt.h>

#include "pending_reply.hpp"
#include "zkr/cleanup.hpp"
#include "zkr/path.hpp"

namespace zkr::detail {

LayoutGate::LayoutGate(std::string root, const LockLayout& layout, CreateOptions create)
    : root_(std::move(root)),
      node_(join_path(root_, kLayoutNodeName)),
      ours_(layout_record(layout)),
      create_(std::move(create)) {}

bool LayoutGate::proven(std::uint64_t epoch) {
  std::lock_guard lock(mutex_);
  if (refused_) std::rethrow_exception(refused_);
  return proven_epoch_ != 0 && proven_epoch_ == epoch && !fired_;
}

void LayoutGate::refuse(std::exception_ptr refusal) {
  if (!refused_) refused_ = std::move(refusal);
  std::rethrow_exception(refused_);
}

Watcher LayoutGate::watcher() {
  return [weak = weak_from_this()](const WatchEvent&) {
    // Changed, deleted, or the session ended: read again before relying on it.
    if (const auto self = weak.lock()) {
      std::lock_guard lock(self->mutex_);
      self->fired_ = true;
    }
  };
}

bool LayoutGate::judge(const Result<NodeData>& read, std::uint64_t epoch) {
  std::lock_guard lock(mutex_);
  if (refused_) std::rethrow_exception(refused_);
  if (!read.ok() && read.error() != Errc::no_node)
    throw KeeperError(read.error(), node_, "reading the lock layout of " + root_);
  if (!read.ok()) {
    if (!first_) return false;
    refuse(std::make_exception_ptr(LayoutRecordChanged(
        root_, "deleted (first read created at zxid " + fmt::format("0x{:x}", first_->czxid) + ")",
        ours_)));
  }
  const auto& [data, stat] = read.value();
  if (data != ours_) refuse(std::make_exception_ptr(LayoutMismatch(root_, data, ours_)));
  if (first_ && (stat.czxid != first_->czxid || stat.mzxid != first_->mzxid))
    refuse(std::make_exception_ptr(LayoutRecordChanged(
        root_,
        fmt::format("created at zxid 0x{:x} and last written at 0x{:x}, first read as created at "
                    "0x{:x} and written at 0x{:x}",
                    stat.czxid, stat.mzxid, first_->czxid, first_->mzxid),
        ours_)));
  if (!first_) first_ = Seen{stat.czxid, stat.mzxid};
  // This read's watch stands from its reply on: any earlier firing is
  // covered by what it read.
  proven_epoch_ = epoch;
  fired_ = false;
  return true;
}

Task<void> LayoutGate::verify(std::shared_ptr<Keeper> keeper, std::uint64_t epoch,
                              TimerThread& timers, std::chrono::steady_clock::time_point until) {
  if (proven(epoch)) co_return;
  for (int round = 0; round < 2; ++round) {
    // Round 1 (no record yet): the root's missing ancestors, the root
    // (containers, as a lock makes its directories, with the lock's ACL so
    // that every contender can read the record), the record, and the read,
    // all pipelined.
    std::vector<std::pair<std::string, PendingReply<Result<Created>>>> made;
    if (round == 1) {
      for (auto slash = node_.find('/', 1); slash != std::string::npos;
           slash = node_.find('/', slash + 1)) {
        made.emplace_back(node_.substr(0, slash), PendingReply<Result<Created>>{});
        keeper->async_create(made.back().first, std::string(kLockDirectoryMark),
                             CreateMode::container, create_, made.back().second.handler());
      }
      made.emplace_back(node_, PendingReply<Result<Created>>{});
      keeper->async_create(node_, ours_, CreateMode::persistent, create_,
                           made.back().second.handler());
    }
    PendingReply<Result<NodeData>> read;
    keeper->async_get(node_, watcher(), read.handler());
    std::optional<KeeperError> failed;
    for (auto& [path, reply] : made) {
      const auto result =
          co_await reply.until(timers, until, Result<Created>(Errc::operation_timeout, path));
      if (!result.ok() && result.error() != Errc::node_exists && !failed)
        failed.emplace(result.error(), path, "recording the lock layout of " + root_);
    }
    const auto got =
        co_await read.until(timers, until, Result<NodeData>(Errc::operation_timeout, node_));
    if (judge(got, epoch)) co_return;
    if (failed) throw *failed;  // no record, and ours could not be made: say why
  }
  // Recorded, then gone before we could read it.
  throw KeeperError(Errc::no_node, node_, "the lock layout record came and went");
}

void LayoutGate::verify_now(std::shared_ptr<Keeper> keeper, std::uint64_t epoch,
                            TimerThread& timers, std::chrono::milliseconds timeout) {
  const auto done = std::make_shared<std::promise<void>>();
  auto outcome = done->get_future();
  spawn(verify(std::move(keeper), epoch, timers, std::chrono::steady_clock::now() + timeout),
        [done](std::exception_ptr error) {
          if (error) done->set_exception(error);
          else done->set_value();
        });
  outcome.get();
}

}  // namespace zkr::detail
