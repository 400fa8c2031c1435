// PersistentNode: a thread that looks at the path whenever something may have
// changed (a watch fired, the connection changed, new data, or a failed look
// to repeat) and makes the tree agree: creates our node when none is there,
// refuses another's, sets new data on ours.
#include "zkr/persistent_node.hpp"

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <stop_token>
#include <thread>
#include <utility>

#include <spdlog/spdlog.h>

#include "callback_thread.hpp"
#include "client_internals.hpp"
#include "zkr/path.hpp"

namespace zkr {

std::string_view to_string(PersistentNodeState state) noexcept {
  switch (state) {
    case PersistentNodeState::absent: return "absent";
    case PersistentNodeState::present: return "present";
    case PersistentNodeState::refused: return "refused";
    case PersistentNodeState::closed: return "closed";
  }
  return "unknown";
}

namespace {

std::string checked_node_path(std::string path) {
  validate_path(path);
  if (path == "/") throw std::invalid_argument("PersistentNode: the root cannot be kept");
  return path;
}

CreateMode checked_mode(CreateMode mode) {
  if (mode != CreateMode::ephemeral && mode != CreateMode::persistent)
    throw std::invalid_argument("PersistentNode: the mode must be ephemeral or persistent");
  return mode;
}

// A failed look is repeated after this, unless something wakes us first.
constexpr auto kLookAgainAfterFailure = std::chrono::seconds(1);

}  // namespace

// What watches and listeners reach: they may outlive the node.
struct NodeWakeup {
  std::mutex mutex;
  std::condition_variable_any changed;
  bool look = false;  // guarded by mutex
  void wake() {
    {
      std::lock_guard lock(mutex);
      look = true;
    }
    changed.notify_all();
  }
};

struct PersistentNode::Impl {
  Impl(Client& c, std::string p, std::string d, PersistentNodeOptions o)
      : client(c),
        path(checked_node_path(std::move(p))),
        mode(checked_mode(o.mode)),
        options(std::move(o)),
        data(std::move(d)) {}

  // The node's thread: a look each time one is asked for, until close().
  void run(const std::stop_token& stop) {
    for (;;) {
      {
        std::unique_lock lock(wakeup->mutex);
        if (!wakeup->changed.wait(lock, stop, [&] { return wakeup->look; })) return;
        wakeup->look = false;
      }
      if (look_once()) continue;
      std::unique_lock lock(wakeup->mutex);
      wakeup->changed.wait_for(lock, stop, kLookAgainAfterFailure, [&] { return wakeup->look; });
      wakeup->look = true;
    }
  }

  // One look, and what it calls for. False when it failed and must be
  // repeated (a connection or server error).
  bool look_once() {
    const auto keeper = client.keeper();
    if (!keeper || !client.is_connected()) return true;  // the listener wakes us
    try {
      const auto session = keeper->session_id();
      const auto stat = keeper->exists(path, [w = wakeup](const WatchEvent&) { w->wake(); });
      if (!stat) return create(*keeper);
      const bool ours = mode == CreateMode::ephemeral ? stat->ephemeral_owner == session
                                                      : stat->ephemeral_owner == 0;
      if (!ours) {
        refuse(*stat, session);
        return true;
      }
      return keep(*keeper, *stat);
    } catch (const KeeperError& e) {
      detail::ClientInternals::log(client)->debug("persistent node {}: {}", path, e.what());
      return false;
    }
  }

  bool create(Keeper& keeper) {
    std::string snapshot;
    {
      std::lock_guard lock(mutex);
      snapshot = data;
      data_to_write = false;
    }
    CreateOptions create_options;
    create_options.acl = options.acl;
    auto created = keeper.try_create(path, snapshot, mode, create_options);
    if (created.error() == Errc::no_node) {
      keeper.create_parents(path, CreateMode::container);
      wakeup->wake();
      return true;
    }
    if (created.error() == Errc::node_exists) {  // someone was first: look at it
      wakeup->wake();
      return true;
    }
    const auto& made = created.value();
    {
      std::lock_guard lock(mutex);
      if (mode == CreateMode::persistent) our_czxid = made.stat.czxid;
    }
    wakeup->wake();  // look again: that look sets the watch on our node
    return true;
  }

  bool keep(Keeper& keeper, const Stat& stat) {
    std::optional<std::string> to_write;
    {
      std::lock_guard lock(mutex);
      if (data_to_write) to_write = data;
      data_to_write = false;
    }
    if (to_write) {
      const auto set = keeper.try_set(path, *to_write, stat.version);
      if (!set.ok()) {  // changed or gone meanwhile: look again, and write then
        std::lock_guard lock(mutex);
        data_to_write = true;
        wakeup->wake();
        return set.error() == Errc::bad_version || set.error() == Errc::no_node;
      }
    }
    set_state(PersistentNodeState::present, std::nullopt);
    return true;
  }

  void refuse(const Stat& stat, std::int64_t session) {
    std::string why;
    if (stat.ephemeral_owner == 0)
      why = path +
            " is a persistent node we did not make; an ephemeral PersistentNode "
            "cannot take its place";
    else
      why = path + " is held by session 0x" + hex(stat.ephemeral_owner) + ", not ours (0x" +
            hex(session) + "); waiting for it to go";
    set_state(PersistentNodeState::refused, std::move(why));
  }

  static std::string hex(std::int64_t value) {
    char text[17];
    std::snprintf(text, sizeof text, "%llx", static_cast<unsigned long long>(value));
    return text;
  }

  void set_state(PersistentNodeState next, std::optional<std::string> why) {
    {
      std::lock_guard lock(mutex);
      refusal = std::move(why);
      if (state == next || state == PersistentNodeState::closed) return;
      state = next;
    }
    present_changed.notify_all();
    post_state(next);
  }

  void post_state(PersistentNodeState next) {
    if (!options.on_state) return;
    if (const auto callbacks = detail::ClientInternals::callback_thread(client))
      callbacks->post([on_state = options.on_state, next] { on_state(next); });
  }

  // Deletes our node if it is provably ours.
  void delete_if_ours() noexcept {
    try {
      const auto keeper = client.keeper();
      if (!keeper || !client.is_connected()) return;  // an ephemeral one goes with the session
      const auto stat = keeper->exists(path);
      if (!stat) return;
      std::optional<std::int64_t> made;
      {
        std::lock_guard lock(mutex);
        made = our_czxid;
      }
      const bool ours = mode == CreateMode::ephemeral
                            ? stat->ephemeral_owner == keeper->session_id()
                            : stat->ephemeral_owner == 0 && made && *made == stat->czxid;
      if (ours) (void)keeper->try_remove(path, stat->version);
    } catch (const std::exception& e) {
      detail::ClientInternals::log(client)->warn("persistent node {}: not deleted: {}", path,
                                                 e.what());
    }
  }

  Client& client;
  const std::string path;
  const CreateMode mode;
  const PersistentNodeOptions options;
  const std::shared_ptr<NodeWakeup> wakeup = std::make_shared<NodeWakeup>();

  mutable std::mutex mutex;
  mutable std::condition_variable present_changed;
  std::string data;            // guarded by mutex
  bool data_to_write = false;  // guarded by mutex: set_data() since the last write
  PersistentNodeState state = PersistentNodeState::absent;  // guarded by mutex
  std::optional<std::string> refusal;                       // guarded by mutex
  std::optional<std::int64_t> our_czxid;  // guarded by mutex: a persistent node we made
  bool started = false;                   // guarded by mutex

  std::mutex closing;  // one close() at a time
  std::optional<Client::ListenerId> listener;
  std::jthread thread;
};

PersistentNode::PersistentNode(Client& client, std::string path, std::string data,
                               PersistentNodeOptions options)
    : impl_(std::make_unique<Impl>(client, std::move(path), std::move(data), std::move(options))) {}

PersistentNode::~PersistentNode() { close(); }

void PersistentNode::start() {
  Impl& impl = *impl_;
  std::lock_guard one_at_a_time(impl.closing);
  {
    std::lock_guard lock(impl.mutex);
    if (impl.state == PersistentNodeState::closed)
      throw std::logic_error("PersistentNode " + impl.path + ": start() after close()");
    if (impl.started) throw std::logic_error("PersistentNode " + impl.path + ": started twice");
    impl.started = true;
    // A persistent node found at the path is adopted with our data: the
    // first look writes it (a create clears this).
    impl.data_to_write = impl.mode == CreateMode::persistent;
  }
  impl.listener = impl.client.add_listener([w = impl.wakeup](ConnectionState) { w->wake(); });
  impl.wakeup->wake();
  impl.thread = std::jthread([&impl](std::stop_token stop) { impl.run(stop); });
}

bool PersistentNode::wait_until_present(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(impl_->mutex);
  return impl_->present_changed.wait_for(
      lock, timeout, [&] { return impl_->state == PersistentNodeState::present; });
}

PersistentNodeState PersistentNode::state() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->state;
}

std::optional<std::string> PersistentNode::refusal() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->refusal;
}

void PersistentNode::set_data(std::string data) {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->data = std::move(data);
    impl_->data_to_write = true;
  }
  impl_->wakeup->wake();
}

std::string PersistentNode::data() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->data;
}

void PersistentNode::close() noexcept {
  Impl& impl = *impl_;
  std::lock_guard one_at_a_time(impl.closing);
  bool was_started = false;
  {
    std::lock_guard lock(impl.mutex);
    if (impl.state == PersistentNodeState::closed) return;
    impl.state = PersistentNodeState::closed;
    impl.refusal.reset();
    was_started = impl.started;
  }
  impl.present_changed.notify_all();
  if (!was_started) return;
  impl.thread.request_stop();
  if (impl.thread.joinable()) impl.thread.join();
  if (impl.listener) impl.client.remove_listener(*impl.listener);
  impl.delete_if_ours();
  impl.post_state(PersistentNodeState::closed);
}

const std::string& PersistentNode::path() const noexcept { return impl_->path; }

}  // namespace zkr
