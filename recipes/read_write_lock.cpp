// The read/write lock: per-thread ownership of its two sides, downgrade and
// upgrade rules. The queue is LockInternals', with read and write nodes.
#include "zkr/read_write_lock.hpp"

#include <spdlog/spdlog.h>

#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "acquire_calls.hpp"
#include "client_internals.hpp"
#include "grant_state.hpp"
#include "lock_internals.hpp"

namespace zkr {

using detail::Clock;
using detail::Deadline;
using detail::GrantState;
using Visit = detail::ClientLifeline::Visit;

struct InterProcessReadWriteLock::Side::Impl {
  struct Hold {
    std::shared_ptr<GrantState> state;
    std::uint32_t count = 0;
  };
  // One thread's holds. A downgraded read granted ahead of queued writers
  // keeps the thread's write node (kept_write) after the write lock is
  // released, until the read is released too (see the header).
  struct ThreadHolds {
    Hold read;
    Hold write;
    std::shared_ptr<GrantState> kept_write;
    bool empty() const { return !read.state && !write.state && !kept_write; }
  };

  Impl(Client& client, const std::string& path, const LockOptions& options)
      : readers(client, path, options, detail::QueueKind::read),
        writers(client, path, options, detail::QueueKind::write),
        lifeline(detail::ClientInternals::lifeline(client)),
        log(detail::ClientInternals::log(client)) {}

  const std::string& dir() const { return readers.dir(); }
  detail::LockInternals& side(bool write) { return write ? writers : readers; }
  static const char* name(bool write) {
    return write ? "InterProcessReadWriteLock write lock" : "InterProcessReadWriteLock read lock";
  }

  // Reentry, or what a new acquire of this side must know: the thread's held
  // write node, for a read. Throws for an upgrade and for a lost hold.
  // nullopt: reentered, done.
  std::optional<std::optional<detail::HeldWriteNode>> plan(bool write) {
    std::lock_guard lock(mutex);
    const auto it = threads.find(std::this_thread::get_id());
    if (it == threads.end()) return std::optional<detail::HeldWriteNode>{};
    ThreadHolds& holds = it->second;
    Hold& hold = write ? holds.write : holds.read;
    if (hold.state) {
      if (hold.count >= kMaxReentrantHolds)
        throw std::overflow_error(std::string(name(write)) + " " + dir() +
                                  ": this thread already holds it " +
                                  std::to_string(kMaxReentrantHolds) +
                                  " times, the most allowed (acquires without releases?)");
      if (const auto why = hold.state->reason(); why != LostReason::none)
        throw KeeperError(Errc::session_expired, dir(),
                          "this thread's hold on the " + std::string(write ? "write" : "read") +
                              " lock was lost (" + std::string(to_string(why)) +
                              "); release it before acquiring again");
      ++hold.count;
      return std::nullopt;
    }
    if (write && (holds.read.state || holds.kept_write))
      throw std::logic_error(std::string(name(write)) + " " + dir() +
                             ": this thread holds the read lock; a write acquire would wait for "
                             "its own read for ever (upgrade is not supported): release the "
                             "read lock first");
    if (!write && holds.write.state)
      return std::optional<detail::HeldWriteNode>(
          detail::HeldWriteNode{std::string(node_name(holds.write.state->node_path)),
                                holds.write.state->epoch, holds.write.state});
    return std::optional<detail::HeldWriteNode>{};
  }

  // A grant owned by a LockGuard: no thread's, so no downgrade exemption and
  // no upgrade refusal; it queues like a contender of another process.
  LockGuard take_guard(bool write, Deadline deadline, const std::stop_token& stop) {
    Visit visit(*lifeline);
    detail::check_may_acquire(visit, side(write).client(), name(write), dir());
    auto state = detail::acquire_when_connected(side(write), deadline, std::nullopt, stop);
    if (!state) return {};
    return LockGuard(std::move(state), lifeline, side(write).client());
  }

  bool take(bool write, Deadline deadline, const std::stop_token& stop) {
    Visit visit(*lifeline);
    detail::check_may_acquire(visit, side(write).client(), name(write), dir());
    if (stop.stop_requested()) return false;
    const auto held_write = plan(write);
    if (!held_write) return true;
    auto state = detail::acquire_when_connected(side(write), deadline, *held_write, stop);
    if (!state) return false;
    std::lock_guard lock(mutex);
    ThreadHolds& holds = threads[std::this_thread::get_id()];
    (write ? holds.write : holds.read) = Hold{state, 1};
    if (!write && state->ahead_of_writers && holds.write.state) {
      // Writers queue between our write node and this read: losing the
      // write node would let them in beside the read.
      holds.kept_write = holds.write.state;
      holds.kept_write->add_callback([weak = std::weak_ptr<GrantState>(state)](LostReason why) {
        if (auto read = weak.lock()) read->mark_lost(why);
      });
    }
    return true;
  }

  bool give(bool write) noexcept {
    std::shared_ptr<GrantState> last, kept;
    {
      std::lock_guard lock(mutex);
      const auto it = threads.find(std::this_thread::get_id());
      Hold* hold = nullptr;
      if (it != threads.end()) hold = write ? &it->second.write : &it->second.read;
      if (!hold || !hold->state) {
        log->error("{} {}: release by a thread that does not hold it; nothing changed", name(write),
                   dir());
        return false;
      }
      if (--hold->count > 0) return true;
      last = std::move(hold->state);
      ThreadHolds& holds = it->second;
      if (write && holds.kept_write == last) {
        last.reset();  // kept for the read: given back with it
      } else if (!write) {
        kept = std::move(holds.kept_write);
        if (kept == holds.write.state) kept.reset();  // still held as a write too
      }
      if (holds.empty()) threads.erase(it);
    }
    // The read node first: the write node's delete lets queued writers in.
    if (last) give_back(side(write), last);
    if (kept) give_back(writers, kept);
    return true;
  }

  void give_back(detail::LockInternals& internals,
                 const std::shared_ptr<GrantState>& state) noexcept {
    detail::give_back(*lifeline, internals, state);
  }

  detail::LockInternals readers;
  detail::LockInternals writers;
  const std::shared_ptr<detail::ClientLifeline> lifeline;
  const std::shared_ptr<spdlog::logger> log;  // the Client's, usable after it is gone
  mutable std::mutex mutex;
  std::unordered_map<std::thread::id, ThreadHolds> threads;  // guarded by mutex
};

InterProcessReadWriteLock::Side::Side(std::shared_ptr<Impl> shared, bool write)
    : shared_(std::move(shared)), write_(write) {}

bool InterProcessReadWriteLock::Side::take(std::optional<Clock::time_point> deadline,
                                           std::stop_token stop) {
  return shared_->take(write_, deadline, stop);
}
LockGuard InterProcessReadWriteLock::Side::take_guard(std::optional<Clock::time_point> deadline,
                                                      std::stop_token stop) {
  return shared_->take_guard(write_, deadline, stop);
}
void InterProcessReadWriteLock::Side::take_guard_async(std::optional<Clock::time_point> deadline,
                                                       std::stop_token stop,
                                                       detail::GuardHandler on_done) {
  detail::acquire_guard_async(shared_, shared_->side(write_), shared_->lifeline, deadline,
                              std::move(stop), std::move(on_done));
}
const std::string& InterProcessReadWriteLock::Side::path() const noexcept { return shared_->dir(); }
bool InterProcessReadWriteLock::Side::release() noexcept { return shared_->give(write_); }

bool InterProcessReadWriteLock::Side::is_acquired_in_this_process() const {
  std::lock_guard lock(shared_->mutex);
  for (const auto& [thread, holds] : shared_->threads)
    if ((write_ ? holds.write : holds.read).state) return true;
  return false;
}
bool InterProcessReadWriteLock::Side::is_owned_by_current_thread() const {
  std::lock_guard lock(shared_->mutex);
  const auto it = shared_->threads.find(std::this_thread::get_id());
  return it != shared_->threads.end() && (write_ ? it->second.write : it->second.read).state;
}
Grant InterProcessReadWriteLock::Side::grant() const {
  std::lock_guard lock(shared_->mutex);
  const auto it = shared_->threads.find(std::this_thread::get_id());
  if (it == shared_->threads.end() || !(write_ ? it->second.write : it->second.read).state)
    throw std::logic_error(std::string(Impl::name(write_)) + " " + shared_->dir() +
                           ": lease() by a thread that does not hold it");
  return Grant((write_ ? it->second.write : it->second.read).state);
}

InterProcessReadWriteLock::InterProcessReadWriteLock(Client& client, std::string path,
                                                     LockOptions options)
    : impl_(std::make_shared<Side::Impl>(
          client, detail::checked_lock_path(std::move(path), kMaxReadWriteLockPathLength),
          options)),
      read_(impl_, false),
      write_(impl_, true) {}

InterProcessReadWriteLock::~InterProcessReadWriteLock() {
  std::unordered_map<std::thread::id, Side::Impl::ThreadHolds> left;
  {
    std::lock_guard lock(impl_->mutex);
    left.swap(impl_->threads);
  }
  for (auto& [thread, holds] : left) {
    impl_->log->warn("InterProcessReadWriteLock {} destroyed while held; releasing", impl_->dir());
    if (holds.read.state) impl_->give_back(impl_->readers, holds.read.state);
    if (holds.write.state) impl_->give_back(impl_->writers, holds.write.state);
    else if (holds.kept_write) impl_->give_back(impl_->writers, holds.kept_write);
  }
}

std::vector<std::string> InterProcessReadWriteLock::participant_nodes() const {
  return detail::participant_nodes_naming(*impl_->lifeline, impl_->readers);
}

const std::string& InterProcessReadWriteLock::path() const noexcept { return impl_->dir(); }

}  // namespace zkr
