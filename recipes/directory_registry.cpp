#include "directory_registry.hpp"

#include <spdlog/spdlog.h>
#include <algorithm>
#include <random>

#include "client_internals.hpp"
#include "lock_directory.hpp"
#include "zkr/error.hpp"

namespace zkr::detail {
namespace {

// Directories removed in one batch: three pipelined round trips for all of
// them, with replies small enough to keep the page's memory bounded.
constexpr std::size_t kRemovalPage = 1000;
// How soon a removal that failed on the link is tried again.
constexpr std::chrono::milliseconds kRetryPause{1000};
// A removal that found the directory in use looks again this many times,
// after about this long (jittered).
constexpr int kInUseRetries = 3;
constexpr std::chrono::milliseconds kInUsePause{200};

std::chrono::milliseconds jittered(std::chrono::milliseconds pause) {
  thread_local std::minstd_rand random{std::random_device{}()};
  return std::chrono::milliseconds(std::uniform_int_distribution<std::int64_t>(
      pause.count() / 2, pause.count() * 3 / 2)(random));
}

// "At once" means within this long: directories whose lock objects close
// one after another (a million keys, each locked once) go in one batch, not
// three round trips each.
constexpr std::chrono::milliseconds kBatchWindow{100};

// How long the thread waits on one release reply before it looks at its other
// work (a due removal, close()).
constexpr std::chrono::milliseconds kReplySlice{50};

}  // namespace

// ---- Use

DirectoryRegistry::Use::Use(std::shared_ptr<DirectoryRegistry> registry, std::string dir,
                            bool removable, std::chrono::milliseconds grace)
    : registry_(std::move(registry)), dir_(std::move(dir)), removable_(removable), grace_(grace) {
  std::lock_guard lock(registry_->mutex_);
  if (registry_->closed_) return;
  auto& entry = registry_->entries_[dir_];
  ++entry.uses;
  entry.in_use_retries = 0;
  registry_->unschedule(entry);  // in use: not removed on our account
}

DirectoryRegistry::Use::~Use() {
  try {
    registry_->leave(dir_, removable_, grace_);
  } catch (const std::exception& e) {  // allocation: nothing better to do than say so
    registry_->log_->error("lock directory {}: {}", dir_, e.what());
  }
}

// ---- DirectoryRegistry

DirectoryRegistry::DirectoryRegistry(SessionSource session, BackgroundRemove remove_in_background,
                                     std::shared_ptr<spdlog::logger> log)
    : session_(std::move(session)),
      remove_in_background_(std::move(remove_in_background)),
      log_(std::move(log)),
      thread_([this] { run(); }) {}

std::shared_ptr<DirectoryRegistry> DirectoryRegistry::of(Client& client) {
  // Closed by ~Client before the Client goes: the reference stays valid for
  // every call the registry makes.
  return ClientInternals::service<DirectoryRegistry>(client, [&client] {
    return std::make_shared<DirectoryRegistry>(
        [&client] {
          const auto [session, serving] = ClientInternals::background_session(client);
          return Session{session.keeper, session.epoch, serving};
        },
        [&client](std::string path, std::uint64_t of_epoch, std::int64_t czxid) {
          ClientInternals::remove_in_background(client, std::move(path), of_epoch,
                                                /*by_name_prefix=*/false, czxid);
        },
        detail::ClientInternals::log(client));
  });
}

DirectoryRegistry::~DirectoryRegistry() { close(); }

void DirectoryRegistry::attach(const std::string& dir) {
  std::lock_guard lock(mutex_);
  if (closed_) return;
  ++entries_[dir].objects;
}

void DirectoryRegistry::detach(const std::string& dir, bool removable) {
  std::lock_guard lock(mutex_);
  if (closed_) return;
  const auto it = entries_.find(dir);
  if (it == entries_.end()) return;
  auto& entry = it->second;
  if (--entry.objects > 0 || entry.uses > 0) return;
  // The last lock object on it is gone: no reason to keep the directory.
  if (removable && entry.removable) schedule(dir, entry, Clock::now() + kBatchWindow);
  else forget_if_idle(dir);
}

void DirectoryRegistry::leave(const std::string& dir, bool removable,
                              std::chrono::milliseconds grace) {
  std::lock_guard lock(mutex_);
  if (closed_) return;
  const auto it = entries_.find(dir);
  if (it == entries_.end()) return;
  auto& entry = it->second;
  if (--entry.uses > 0) return;
  if (!removable || !entry.removable) {
    forget_if_idle(dir);
    return;
  }
  schedule(dir, entry, Clock::now() + (entry.objects > 0 ? grace : kBatchWindow));
}

bool DirectoryRegistry::known(const std::string& dir) {
  std::lock_guard lock(mutex_);
  const auto it = entries_.find(dir);
  return it != entries_.end() && it->second.known && !it->second.removing;
}

void DirectoryRegistry::proven(const std::string& dir) {
  std::lock_guard lock(mutex_);
  if (closed_) return;
  const auto it = entries_.find(dir);
  if (it == entries_.end()) return;  // only a use in progress learns
  it->second.known = true;
  ++it->second.generation;
}

void DirectoryRegistry::missing(const std::string& dir) {
  std::lock_guard lock(mutex_);
  if (const auto it = entries_.find(dir); it != entries_.end()) it->second.known = false;
}

void DirectoryRegistry::watch_release(std::string path, std::uint64_t epoch, std::int64_t czxid,
                                      std::future<Result<Empty>> reply) noexcept {
  try {
    const auto session = session_();
    const auto patience =
        session.keeper ? session.keeper->default_timeout() : std::chrono::milliseconds(10000);
    {
      std::lock_guard lock(mutex_);
      // Closing: the session's end deletes the node.
      if (closed_) return;
      releases_.push_back(
          {std::move(path), epoch, czxid, std::move(reply), Clock::now() + patience});
    }
    wake_.notify_all();
  } catch (const std::exception& e) {
    log_->error("release of {}: could not watch its reply: {}", path, e.what());
    remove_in_background_(path, epoch, czxid);
  }
}

void DirectoryRegistry::schedule(const std::string& dir, Entry& entry, Clock::time_point at) {
  if (entry.due && (*entry.due)->first <= at) return;
  unschedule(entry);
  entry.due = timetable_.emplace(at, dir);
  wake_.notify_all();
}

void DirectoryRegistry::forget_if_idle(const std::string& dir) {
  const auto it = entries_.find(dir);
  if (it == entries_.end()) return;
  const auto& entry = it->second;
  if (entry.objects == 0 && entry.uses == 0 && !entry.removing && !entry.due) entries_.erase(it);
}

void DirectoryRegistry::unschedule(Entry& entry) {
  if (!entry.due) return;
  timetable_.erase(*entry.due);
  entry.due.reset();
}

std::optional<DirectoryRegistry::Clock::time_point> DirectoryRegistry::next_due() {
  if (timetable_.empty()) return std::nullopt;
  return timetable_.begin()->first;
}

std::vector<std::string> DirectoryRegistry::take_due(Clock::time_point now, std::size_t max) {
  std::vector<std::string> due;
  while (!timetable_.empty() && due.size() < max && timetable_.begin()->first <= now) {
    const auto it = entries_.find(timetable_.begin()->second);
    auto& entry = it->second;  // an entry with a due is never forgotten
    const std::string dir = it->first;
    unschedule(entry);
    if (entry.uses > 0 || entry.removing || !entry.removable) {
      forget_if_idle(dir);
      continue;
    }
    entry.removing = true;
    due.push_back(dir);
  }
  return due;
}

void DirectoryRegistry::run() {
  std::unique_lock lock(mutex_);
  while (!closed_) {
    // Replies of one session come in order: settle every one that is in.
    std::vector<PendingRelease> settled;
    while (!releases_.empty() &&
           releases_.front().reply.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      settled.push_back(std::move(releases_.front()));
      releases_.pop_front();
    }
    if (!settled.empty()) {
      lock.unlock();
      for (auto& pending : settled) settle(pending, true);
      settled.clear();
      lock.lock();
    } else if (!releases_.empty()) {
      // The front one is the next to come. The reference outlives the lock:
      // only this thread pops or clears releases_ (close() joins it first),
      // and a deque's push_back keeps references to its elements valid.
      auto& front = releases_.front();
      auto until = std::min(front.give_up_at, Clock::now() + kReplySlice);
      if (const auto due = next_due()) until = std::min(until, *due);
      busy_ = true;
      lock.unlock();
      const bool ready = front.reply.wait_until(until) == std::future_status::ready;
      lock.lock();
      if (ready || Clock::now() >= front.give_up_at) {
        auto pending = std::move(releases_.front());
        releases_.pop_front();
        lock.unlock();
        settle(pending, ready);
        lock.lock();
      }
    } else if (const auto due = next_due(); !due || *due > Clock::now()) {
      busy_ = false;
      idle_.notify_all();
      const auto woken = [&] { return closed_ || !releases_.empty() || next_due() != due; };
      if (due) wake_.wait_until(lock, *due, woken);
      else wake_.wait(lock, woken);
      continue;
    }
    const auto batch = take_due(Clock::now(), kRemovalPage);
    if (batch.empty()) continue;
    busy_ = true;
    lock.unlock();
    remove(batch);
    lock.lock();
  }
  busy_ = false;
  idle_.notify_all();
}

void DirectoryRegistry::settle(PendingRelease& pending, bool ready) {
  try {
    if (!ready) {
      log_->debug("release of {}: no reply yet; deleting in the background", pending.path);
      remove_in_background_(pending.path, pending.epoch, pending.czxid);
      return;
    }
    const auto result = pending.reply.get();
    // no_node: deleted by someone else; session_expired, closing: the
    // session's end deletes it.
    if (result.ok() || result.error() == Errc::no_node || result.error() == Errc::session_expired ||
        result.error() == Errc::closing)
      return;
    if (is_connection_error(result.error()) || result.error() == Errc::bad_version) {
      log_->debug("release of {}: {}; deleting in the background", pending.path,
                  errc_name(result.error()));
      remove_in_background_(pending.path, pending.epoch, pending.czxid);
      return;
    }
    log_->error("release: could not delete {}: {}", pending.path, errc_name(result.error()));
  } catch (const std::exception& e) {
    log_->error("release of {}: {}", pending.path, e.what());
    remove_in_background_(pending.path, pending.epoch, pending.czxid);
  }
}

void DirectoryRegistry::remove(const std::vector<std::string>& dirs) {
  std::vector<std::uint64_t> generations;
  {
    std::lock_guard lock(mutex_);
    for (const auto& dir : dirs) generations.push_back(entries_[dir].generation);
  }
  std::optional<std::vector<DirectoryRemoval>> outcomes;
  bool retry = false;
  const auto session = session_();
  if (!session.connected || !session.keeper) {
    retry = true;
  } else {
    try {
      outcomes = remove_lock_directories(*session.keeper, dirs);
    } catch (const KeeperError& e) {
      retry = is_connection_error(e.errc()) || is_retryable(e.errc());
      log_->log(retry ? spdlog::level::debug : spdlog::level::warn,
                "removing {} idle lock directories: {}", dirs.size(), e.what());
    } catch (const std::exception& e) {
      log_->warn("removing {} idle lock directories: {}", dirs.size(), e.what());
    }
  }
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    auto& entry = entries_[dirs[i]];
    entry.removing = false;
    if (!outcomes) {
      // The link failed: try again later. Anything else: leave it (to the
      // server's container reaper, or the cleaner).
      if (retry && entry.uses == 0) schedule(dirs[i], entry, Clock::now() + kRetryPause);
      else entry.removable = retry;
    } else {
      switch ((*outcomes)[i]) {
        case DirectoryRemoval::removed:
        case DirectoryRemoval::gone:
          // Unless an acquire proved it again meanwhile (it made it anew).
          if (entry.generation == generations[i]) entry.known = false;
          break;
        case DirectoryRemoval::not_ours:
          log_->debug("lock directory {} is not ours (no mark): kept", dirs[i]);
          entry.removable = false;
          break;
        case DirectoryRemoval::in_use:
          // Someone queues, or another Client's removal pinned it with its
          // probe at the same moment as ours (then both back off): look
          // again a few times, at random moments so that two removers part.
          if (entry.uses == 0 && entry.in_use_retries < kInUseRetries) {
            ++entry.in_use_retries;
            schedule(dirs[i], entry, Clock::now() + jittered(kInUsePause));
          }
          break;
      }
    }
    forget_if_idle(dirs[i]);
  }
  idle_.notify_all();
}

void DirectoryRegistry::close() noexcept {
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  try {
    std::vector<std::string> unused;
    {
      std::lock_guard lock(mutex_);
      for (const auto& [dir, entry] : entries_)
        if (entry.uses == 0 && entry.removable && (entry.known || entry.due)) unused.push_back(dir);
      releases_.clear();  // the session's end deletes those nodes
    }
    for (std::size_t i = 0; i < unused.size(); i += kRemovalPage) {
      const auto session = session_();
      if (!session.connected || !session.keeper) break;
      const std::vector<std::string> page(
          unused.begin() + static_cast<std::ptrdiff_t>(i),
          unused.begin() + static_cast<std::ptrdiff_t>(std::min(unused.size(), i + kRemovalPage)));
      (void)remove_lock_directories(*session.keeper, page);
    }
  } catch (const std::exception& e) {
    log_->warn("closing: lock directories left to the server's reaper: {}", e.what());
  }
  std::lock_guard lock(mutex_);
  entries_.clear();
  idle_.notify_all();
}

bool DirectoryRegistry::wait_idle(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return idle_.wait_for(lock, timeout, [&] {
    if (closed_) return true;
    if (busy_ || !releases_.empty()) return false;
    const auto now = Clock::now();
    return std::none_of(entries_.begin(), entries_.end(), [&](const auto& e) {
      // Due within the batch window counts as due: "at once" for a caller.
      return e.second.removing ||
             (e.second.due && (*e.second.due)->first <= now + kBatchWindow && e.second.uses == 0);
    });
  });
}

std::size_t DirectoryRegistry::remembered() {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

std::size_t DirectoryRegistry::scheduled() {
  std::lock_guard lock(mutex_);
  return timetable_.size();
}

}  // namespace zkr::detail
