// PersistentNode: a thread that looks at the path whenever something may have
// changed (a watch fired, the connection changed, new data, or a failed look
// to repeat) and makes the tree agree: creates our node when none is there,
// refuses another's, sets new data on ours.
#include "zkr/persistent_node.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "callback_thread.hpp"
#include "client_internals.hpp"
#include "owned_delete.hpp"
#include "refresh_thread.hpp"
#include "zkr/cleanup.hpp"
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
// close()'s delete: tries within the session timeout (each waits for a
// connection), so that a reply that comes back at once with an error cannot spin.
constexpr int kDeleteAttempts = 20;

}  // namespace

struct PersistentNode::Impl {
  Impl(Client& c, std::string p, std::string d, PersistentNodeOptions o)
      : client(c),
        path(checked_node_path(std::move(p))),
        mode(checked_mode(o.mode)),
        options(std::move(o)),
        data(std::move(d)) {}

  const std::shared_ptr<detail::RefreshSignal>& wake() const { return refresh.signal(); }

  // One look, and what it calls for. False when it failed and must be
  // repeated (a connection or server error).
  bool look_once() {
    const auto keeper = client.keeper();
    if (!keeper || !client.is_connected()) return true;  // the listener wakes us
    try {
      const auto session = keeper->session_id();
      const auto epoch = client.session_epoch();
      const auto stat =
          keeper->exists(path, [signal = wake()](const WatchEvent&) { signal->wake(); });
      if (!stat) return create(*keeper, epoch);
      const bool ours = mode == CreateMode::ephemeral ? stat->ephemeral_owner == session
                                                      : stat->ephemeral_owner == 0;
      if (!ours) {
        refuse(*stat, session);
        return true;
      }
      // An ephemeral node of our session is ours whatever made it: this is
      // how a create whose reply was lost is proven ours. A persistent one
      // is proven only by our create's reply (create()).
      if (mode == CreateMode::ephemeral) prove({session, stat->czxid}, epoch);
      return keep(*keeper, *stat);
    } catch (const KeeperError& e) {
      detail::ClientInternals::log(client)->debug("persistent node {}: {}", path, e.what());
      return false;
    }
  }

  void prove(detail::Ownership owner, std::uint64_t epoch) {
    std::lock_guard lock(mutex);
    proof = owner;
    proof_epoch = epoch;
  }

  // Creates our node at version 1: a create and a set of the same data in
  // one transaction (one write, as a plain create). ZooKeeper conditions a
  // write or delete only on the data version, and a node someone makes at
  // the path in place of ours starts at 0: so our versioned set_data() and
  // close() can never hit theirs, in the round trip between our look and our
  // write, as they could if ours were at 0 too. The set's reply carries the
  // node's stat, and so the czxid that proves it ours.
  bool create(Keeper& keeper, std::uint64_t epoch) {
    std::string snapshot;
    {
      std::lock_guard lock(mutex);
      snapshot = data;
      data_to_write = false;
    }
    CreateOptions create_options;
    create_options.acl = options.acl;
    std::vector<Op> ops;
    ops.emplace_back(op::Create{path, snapshot, mode, create_options});
    ops.emplace_back(op::Set{path, snapshot, 0});
    const auto created = keeper.try_multi(std::move(ops));
    if (is_connection_error(created.error) && mode == CreateMode::persistent) {
      // It may have been applied: a node found later is adopted, and (its
      // czxid unknown) cannot be proven ours at close().
      std::lock_guard lock(mutex);
      create_in_doubt = true;
    }
    if (created.error == Errc::no_node) {
      create_marked_parents(keeper, path);
      wake()->wake();
      return true;
    }
    if (created.error == Errc::node_exists) {  // someone was first: look at it
      wake()->wake();
      return true;
    }
    if (!created.ok()) throw KeeperError(created.error, path);  // the look is repeated
    const Stat& made = created.results.at(1).stat;
    prove({mode == CreateMode::ephemeral ? keeper.session_id() : 0, made.czxid}, epoch);
    wake()->wake();  // look again: that look sets the watch on our node
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
        wake()->wake();
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

  // Deletes our node if it is provably ours (owned_delete.hpp: read, then
  // delete with the version read), through drops and a new session, for up
  // to one session timeout. An ephemeral node still there then is handed to
  // the Client's background remover (it goes with its session anyway); a
  // persistent one is left, and logged.
  void delete_if_ours() noexcept {
    std::optional<detail::Ownership> owner;
    std::uint64_t epoch = 0;
    bool doubt = false;
    {
      std::lock_guard lock(mutex);
      owner = proof;
      epoch = proof_epoch;
      doubt = create_in_doubt;
    }
    const auto log = detail::ClientInternals::log(client);
    if (!owner) {
      if (doubt)
        log->warn(
            "persistent node {} left: the reply to our create was lost, so it cannot be "
            "proven ours",
            path);
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + client.options().session_timeout;
    std::string why = "no connection within the session timeout";
    for (int attempt = 0; attempt < kDeleteAttempts; ++attempt) {
      try {
        const auto session = client.session_when_connected(deadline);
        if (owner->session_id != 0 && session.epoch != epoch) return;  // gone with its session
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left <= std::chrono::milliseconds::zero()) break;
        const auto removal = detail::remove_if_ours_now(session.keeper, path, *owner, log, left);
        if (removal.ok()) return;  // deleted, gone, or not ours (left alone, logged)
        why = std::string(errc_name(removal.error()));
        if (!is_connection_error(removal.error()) && removal.error() != Errc::session_expired)
          break;
      } catch (const std::exception& e) {
        why = e.what();
        if (std::chrono::steady_clock::now() >= deadline) break;
        const auto* error = dynamic_cast<const KeeperError*>(&e);
        if (!error || error->errc() == Errc::closing || error->errc() == Errc::auth_failed) break;
      }
    }
    if (owner->session_id != 0) {
      detail::ClientInternals::remove_in_background(client, path, epoch, false, owner->czxid);
      return;
    }
    log->warn("persistent node {} left: not deleted: {}", path, why);
  }

  Client& client;
  const std::string path;
  const CreateMode mode;
  const PersistentNodeOptions options;

  mutable std::mutex mutex;
  mutable std::condition_variable present_changed;
  std::string data;            // guarded by mutex
  bool data_to_write = false;  // guarded by mutex: set_data() since the last write
  PersistentNodeState state = PersistentNodeState::absent;  // guarded by mutex
  std::optional<std::string> refusal;                       // guarded by mutex
  // guarded by mutex: what proves a node at the path ours, and the session
  // epoch of an ephemeral one; unset until our create's reply (or, for an
  // ephemeral node, a look that found it ours) came.
  std::optional<detail::Ownership> proof;
  std::uint64_t proof_epoch = 0;
  bool create_in_doubt = false;  // guarded by mutex: a persistent create's reply was lost
  bool started = false;          // guarded by mutex

  std::mutex closing;  // one close() at a time
  std::optional<Client::ListenerId> listener;
  detail::RefreshThread refresh;  // looks whenever its signal is raised
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
  impl.listener =
      impl.client.add_listener([signal = impl.wake()](ConnectionState) { signal->wake(); });
  impl.wake()->wake();
  impl.refresh.start([&impl](bool) { return impl.look_once(); }, kLookAgainAfterFailure);
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
  impl_->wake()->wake();
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
  impl.refresh.stop();
  if (impl.listener) impl.client.remove_listener(*impl.listener);
  impl.delete_if_ours();
  impl.post_state(PersistentNodeState::closed);
}

const std::string& PersistentNode::path() const noexcept { return impl_->path; }

}  // namespace zkr
