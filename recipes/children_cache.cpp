// ChildrenCache: a thread that reads the children (and the data of those it
// must) whenever something may have changed (a watch fired, the connection
// changed, or a failed read to repeat), and publishes the new view with the
// events that lead to it.
//
// Watches are one-shot, and a watch set twice on one node is two watches in
// the C client (each fires, each costs memory), so the cache sets one only
// where none is armed: each watch has a flag that its firing raises, and a
// node whose flag is down needs no new one. A flag is kept only when the read
// that set its watch was answered (the C client arms a watch on the reply);
// a new session drops them all (its predecessor's watches ended with it).
#include "zkr/children_cache.hpp"

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "callback_thread.hpp"
#include "children_diff.hpp"
#include "client_internals.hpp"
#include "refresh_thread.hpp"
#include "zkr/path.hpp"

namespace zkr {

std::string_view to_string(ChildEventType type) noexcept {
  switch (type) {
    case ChildEventType::added: return "added";
    case ChildEventType::updated: return "updated";
    case ChildEventType::removed: return "removed";
  }
  return "unknown";
}

namespace {

// A failed read is repeated after this, unless something wakes us first.
constexpr auto kCacheReadAgainAfterFailure = std::chrono::seconds(1);

// Raised when its watch fires (for any reason: a change, or the session's end).
struct WatchFlag {
  std::atomic<bool> fired{false};
};
using Flag = std::shared_ptr<WatchFlag>;

bool armed(const Flag& flag) { return flag && !flag->fired.load(); }

}  // namespace

struct ChildrenCache::Impl {
  Impl(Client& c, std::string p, ChildrenCacheOptions o)
      : client(c), path(checked(std::move(p))), options(std::move(o)) {}

  static std::string checked(std::string p) {
    validate_path(p);
    return p;
  }

  // One watcher: raises its flag, then wakes the thread.
  Watcher watcher(const Flag& flag) const {
    return [signal = refresh.signal(), flag](const WatchEvent&) {
      flag->fired = true;
      signal->wake();
    };
  }

  // One read, and the view it gives. False when it failed and must be
  // repeated (a connection or server error).
  bool read_once(bool full) {
    const auto keeper = client.keeper();
    if (!keeper || !client.is_connected()) return true;  // the listener wakes us
    try {
      const auto session = keeper->session_id();
      if (session != read_in_session) {  // the old session's watches are gone
        children_watch.reset();
        parent_watch.reset();
        for (auto& [name, entry] : entries) entry.watch.reset();
        read_in_session = session;
        full = true;
      }
      Flag listing_flag = armed(children_watch) ? nullptr : std::make_shared<WatchFlag>();
      auto listed = keeper->try_children(path, listing_flag ? watcher(listing_flag) : Watcher{});
      if (listed.error() == Errc::no_node) return parent_missing(*keeper);
      if (!listed.ok()) throw KeeperError(listed.error(), path);
      if (listing_flag) children_watch = listing_flag;
      parent_watch.reset();  // it fired (the parent came) or is not needed
      return read_children(*keeper, listed.value().names, full);
    } catch (const KeeperError& e) {
      detail::ClientInternals::log(client)->debug("children cache {}: {}", path, e.what());
      return false;
    }
  }

  // No parent: an empty group, and a watch on its creation.
  bool parent_missing(Keeper& keeper) {
    children_watch.reset();  // getChildren sets no watch on a missing node
    Flag flag = armed(parent_watch) ? nullptr : std::make_shared<WatchFlag>();
    const auto stat = keeper.exists(path, flag ? watcher(flag) : Watcher{});
    if (flag) parent_watch = flag;
    if (stat) {  // created between the two reads: read it
      refresh.signal()->wake(true);
      return true;
    }
    entries.clear();
    publish();
    return true;
  }

  // Reads the data of each child that is new, or whose watch fired, or all
  // of them on a full read; pipelined, then awaited.
  bool read_children(Keeper& keeper, const std::vector<std::string>& names, bool full) {
    struct Read {
      std::string name;
      Flag flag;
      std::future<Result<NodeData>> reply;
    };
    std::vector<Read> reads;
    std::map<std::string, Entry> next;
    for (const auto& name : names) {
      const auto found = entries.find(name);
      const bool known = found != entries.end();
      if (known && armed(found->second.watch) && !full) {
        next.emplace(name, found->second);
        continue;
      }
      Flag flag = known && armed(found->second.watch) ? nullptr : std::make_shared<WatchFlag>();
      auto reply = keeper.async_get(join_path(path, name), flag ? watcher(flag) : Watcher{});
      reads.push_back(Read{name, flag, std::move(reply)});
    }
    const auto deadline = deadline_after(keeper.default_timeout());
    bool failed = false;
    for (auto& read : reads) {
      auto got = await_reply(std::move(read.reply), deadline, join_path(path, read.name));
      const auto old = entries.find(read.name);
      if (got.ok()) {
        auto node = std::move(got).value();
        Entry entry{ChildNode{std::move(node.data), node.stat}, read.flag};
        if (!read.flag && old != entries.end()) entry.watch = old->second.watch;  // still armed
        next.emplace(read.name, std::move(entry));
      } else if (got.error() == Errc::no_node) {
        // Gone since the listing: the children watch tells of it.
      } else {
        // Unknown: keep what we had, unwatched, so that the next read reads it.
        failed = true;
        if (old != entries.end()) next.emplace(read.name, Entry{old->second.node, nullptr});
        detail::ClientInternals::log(client)->debug("children cache {}: {}", path,
                                                    KeeperError(got.error(), got.path()).what());
      }
    }
    entries = std::move(next);
    publish();
    return !failed;
  }

  // Makes the entries the view, and tells what changed.
  void publish() {
    ChildMap view;
    for (const auto& [name, entry] : entries) view.emplace(name, entry.node);
    std::vector<ChildEvent> events;
    {
      std::lock_guard lock(mutex);
      events = detail::diff_children(published, view);
      published = std::move(view);
      initialized = true;
    }
    initialized_changed.notify_all();
    if (events.empty() || !options.on_event) return;
    const auto callbacks = detail::ClientInternals::callback_thread(client);
    if (!callbacks) return;
    std::vector<std::function<void()>> tasks;
    tasks.reserve(events.size());
    for (auto& event : events)
      tasks.emplace_back([on_event = options.on_event, open = open, e = std::move(event)] {
        if (open->load()) on_event(e);
      });
    callbacks->post_all(std::move(tasks));
  }

  struct Entry {
    ChildNode node;
    Flag watch;  // the data watch set on this child, if any
  };

  Client& client;
  const std::string path;
  const ChildrenCacheOptions options;
  // Lowered by close(): events still queued on the callback thread are dropped.
  const std::shared_ptr<std::atomic<bool>> open = std::make_shared<std::atomic<bool>>(true);

  // The thread's own.
  std::map<std::string, Entry> entries;
  Flag children_watch;  // on the parent's children
  Flag parent_watch;    // on the parent's creation, while it is missing
  std::int64_t read_in_session = 0;

  mutable std::mutex mutex;
  mutable std::condition_variable initialized_changed;
  ChildMap published;        // guarded by mutex
  bool initialized = false;  // guarded by mutex
  bool started = false;      // guarded by mutex
  bool closed = false;       // guarded by mutex

  std::mutex closing;  // one close() at a time
  std::optional<Client::ListenerId> listener;
  detail::RefreshThread refresh;  // reads whenever its signal is raised
};

ChildrenCache::ChildrenCache(Client& client, std::string path, ChildrenCacheOptions options)
    : impl_(std::make_unique<Impl>(client, std::move(path), std::move(options))) {}

ChildrenCache::~ChildrenCache() { close(); }

void ChildrenCache::start() {
  Impl& impl = *impl_;
  std::lock_guard one_at_a_time(impl.closing);
  {
    std::lock_guard lock(impl.mutex);
    if (impl.closed)
      throw std::logic_error("ChildrenCache " + impl.path + ": start() after close()");
    if (impl.started) throw std::logic_error("ChildrenCache " + impl.path + ": started twice");
    impl.started = true;
  }
  // Every change of the connection reads it all again: a reply lost with
  // the link set no watch, and a new session has none of the old ones.
  impl.listener = impl.client.add_listener(
      [signal = impl.refresh.signal()](ConnectionState) { signal->wake(true); });
  impl.refresh.signal()->wake(true);
  impl.refresh.start([&impl](bool full) { return impl.read_once(full); },
                     kCacheReadAgainAfterFailure);
}

bool ChildrenCache::wait_until_initialized(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(impl_->mutex);
  return impl_->initialized_changed.wait_for(lock, timeout, [&] { return impl_->initialized; });
}

ChildMap ChildrenCache::snapshot() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->published;
}

void ChildrenCache::close() noexcept {
  Impl& impl = *impl_;
  std::lock_guard one_at_a_time(impl.closing);
  bool was_started = false;
  {
    std::lock_guard lock(impl.mutex);
    if (impl.closed) return;
    impl.closed = true;
    was_started = impl.started;
  }
  impl.open->store(false);
  if (!was_started) return;
  impl.refresh.stop();
  if (impl.listener) impl.client.remove_listener(*impl.listener);
}

const std::string& ChildrenCache::path() const noexcept { return impl_->path; }

}  // namespace zkr
