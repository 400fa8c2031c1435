// SharedCount: a thread of its own reads the node whenever something may have
// changed (its watch fired, the connection changed, a read to repeat) and
// tells the listeners of each new value; writes go from the caller's thread.
#include "zkr/shared_count.hpp"

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "callback_thread.hpp"
#include "client_internals.hpp"
#include "counter_write.hpp"
#include "refresh_thread.hpp"
#include "zkr/cleanup.hpp"
#include "zkr/path.hpp"

namespace zkr {

namespace {

std::string checked_count_path(std::string path) {
  validate_path(path);
  if (path == "/") throw std::invalid_argument("SharedCount: the root cannot be a counter");
  return path;
}

// A failed read is repeated after this, unless something wakes us first.
constexpr auto kCountReadAgainAfterFailure = std::chrono::seconds(1);

}  // namespace

// The listeners, shared with the tasks posted to the callback thread: a task
// looks them up when it runs, so a listener removed (or the count closed)
// before then is not called.
struct CountListeners {
  std::mutex mutex;
  std::map<SharedCount::ListenerId, SharedCount::Listener> listeners;  // guarded by mutex
  SharedCount::ListenerId next = 1;                                    // guarded by mutex

  void tell(VersionedCount count) {
    std::vector<SharedCount::Listener> to_tell;
    {
      std::lock_guard lock(mutex);
      for (const auto& [id, listener] : listeners) to_tell.push_back(listener);
    }
    for (const auto& listener : to_tell) listener(count);
  }
};

struct SharedCount::Impl {
  Impl(Client& c, std::string p, std::int32_t s)
      : client(c), path(checked_count_path(std::move(p))), seed(s) {}

  const std::shared_ptr<detail::RefreshSignal>& wake() const { return refresh.signal(); }

  // One read with a watch. False when it failed and must be repeated.
  bool read_once() {
    const auto keeper = client.keeper();
    if (!keeper || !client.is_connected()) return true;  // the listener wakes us
    try {
      const auto watch = [signal = wake()](const WatchEvent&) { signal->wake(); };
      const auto got = keeper->try_get(path, watch);
      if (got.error() == Errc::no_node) {
        // Deleted: keep the last value, and watch for the node to come back.
        if (keeper->exists(path, watch)) wake()->wake();
        return true;
      }
      const auto& node = got.value();
      learn(node.stat, detail::decode_int32(path, node.data));
      return true;
    } catch (const CounterDataError& e) {
      detail::ClientInternals::log(client)->warn("shared count: {}", e.what());
      return true;  // the watch is set: a fixed value wakes us
    } catch (const KeeperError& e) {
      detail::ClientInternals::log(client)->debug("shared count {}: {}", path, e.what());
      return false;
    }
  }

  // Takes a value read or written if it is newer than the one we have, and
  // tells the listeners. Newer means a higher mzxid: the zxid orders every
  // write of the ensemble and is 64 bits wide, where the int32 version wraps
  // (CURATOR-688) and a re-made node starts its version again at 0.
  void learn(const Stat& stat, std::int32_t value) {
    const VersionedCount count{stat.version, value};
    {
      std::lock_guard lock(mutex);
      if (known && stat.mzxid <= mzxid) return;
      known = true;
      mzxid = stat.mzxid;
      czxid = stat.czxid;
      current = count;
    }
    if (const auto callbacks = detail::ClientInternals::callback_thread(client))
      callbacks->post([registry = registry, count] { registry->tell(count); });
  }

  void require_started() const {
    if (!started) throw std::logic_error("SharedCount " + path + ": not started");
  }

  Client& client;
  const std::string path;
  const std::int32_t seed;
  const std::shared_ptr<CountListeners> registry = std::make_shared<CountListeners>();

  mutable std::mutex mutex;
  bool started = false;    // guarded by mutex
  bool closed = false;     // guarded by mutex
  bool known = false;      // guarded by mutex: a value has been read
  VersionedCount current;  // guarded by mutex
  std::int64_t mzxid = 0;  // guarded by mutex: of `current`
  std::int64_t czxid = 0;  // guarded by mutex: of `current`

  std::mutex closing;  // start() and close() one at a time
  std::optional<Client::ListenerId> connection_listener;
  detail::RefreshThread refresh;  // reads whenever its signal is raised
};

SharedCount::SharedCount(Client& client, std::string path, std::int32_t seed)
    : impl_(std::make_unique<Impl>(client, std::move(path), seed)) {}

SharedCount::~SharedCount() { close(); }

void SharedCount::start() {
  Impl& impl = *impl_;
  std::lock_guard one_at_a_time(impl.closing);
  {
    std::lock_guard lock(impl.mutex);
    if (impl.closed) throw std::logic_error("SharedCount " + impl.path + ": start() after close()");
    if (impl.started) throw std::logic_error("SharedCount " + impl.path + ": started twice");
  }
  // The seed's create is safe to repeat: a second one finds the node
  // (ours or anyone's) and changes nothing.
  const auto first = impl.client.with_retry([&](Keeper& k) {
    auto made = k.try_create(impl.path, detail::encode_int32(impl.seed));
    if (made.error() == Errc::no_node) {
      create_marked_parents(k, impl.path);
      made = k.try_create(impl.path, detail::encode_int32(impl.seed));
    }
    if (!made.ok() && made.error() != Errc::node_exists) throw KeeperError(made.error(), impl.path);
    return k.get(impl.path);
  });
  impl.learn(first.stat, detail::decode_int32(impl.path, first.data));
  {
    std::lock_guard lock(impl.mutex);
    impl.started = true;
  }
  // Every change of the connection reads again: a watch may have been lost
  // with a request, and a value may have changed while we could not hear it.
  impl.connection_listener =
      impl.client.add_listener([signal = impl.wake()](ConnectionState) { signal->wake(); });
  impl.wake()->wake();  // the first read sets the watch
  impl.refresh.start([&impl](bool) { return impl.read_once(); }, kCountReadAgainAfterFailure);
}

std::int32_t SharedCount::get_count() const { return get_versioned_count().value; }

VersionedCount SharedCount::get_versioned_count() const {
  std::lock_guard lock(impl_->mutex);
  impl_->require_started();
  return impl_->current;
}

void SharedCount::set_count(std::int32_t value) {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->require_started();
  }
  // Not under the retry policy: a second unconditional set after a lost
  // reply could overwrite a value someone wrote in between.
  const auto keeper = impl_->client.keeper_when_connected();
  const auto stat = keeper->set(impl_->path, detail::encode_int32(value));
  impl_->learn(stat, value);
}

CounterOutcome SharedCount::try_set_count(VersionedCount previous, std::int32_t value) {
  Impl& impl = *impl_;
  detail::WriteBasis basis;
  {
    std::lock_guard lock(impl.mutex);
    impl.require_started();
    // The node as we know it at that version, for proving a lost write
    // unapplied; a version we do not hold is checked by the server alone.
    Stat stat;
    stat.version = previous.version;
    stat.czxid = impl.current.version == previous.version ? impl.czxid : -1;
    stat.mzxid = impl.current.version == previous.version ? impl.mzxid : -1;
    basis.stat = stat;
  }
  RetryBudget budget(impl.client.retry_policy(), impl.client.sleeper());
  for (;;) {
    const auto answer =
        detail::conditional_write(impl.client, impl.path, basis, detail::encode_int32(value), {});
    if (answer.fate == detail::WriteFate::applied) {
      impl.learn(answer.stat, value);
      return CounterOutcome::succeeded;
    }
    if (answer.fate == detail::WriteFate::unknown) return CounterOutcome::indeterminate;
    // Refused: a conflict, unless a re-read proved a lost write unapplied
    // with the node as it was; then the same compare-and-set may go again.
    const auto now = impl.client.with_retry([&](Keeper& k) -> std::optional<NodeData> {
      auto node = k.try_get(impl.path);
      if (node.error() == Errc::no_node) return std::nullopt;
      return std::move(node).value();  // throws the others, for the policy to judge
    });
    const bool unchanged =
        now && now->stat.czxid == basis.stat->czxid && now->stat.mzxid == basis.stat->mzxid;
    if (now) impl.learn(now->stat, detail::decode_int32(impl.path, now->data));
    if (!unchanged) return CounterOutcome::conflict;
    const auto step = budget.next();
    if (step.verdict != RetryBudget::Verdict::retry) return CounterOutcome::conflict;
    budget.sleep(step);
  }
}

SharedCount::ListenerId SharedCount::add_listener(Listener listener) {
  auto& registry = *impl_->registry;
  std::lock_guard lock(registry.mutex);
  const auto id = registry.next++;
  registry.listeners.emplace(id, std::move(listener));
  return id;
}

void SharedCount::remove_listener(ListenerId id) {
  auto& registry = *impl_->registry;
  std::lock_guard lock(registry.mutex);
  registry.listeners.erase(id);
}

void SharedCount::close() noexcept {
  Impl& impl = *impl_;
  std::lock_guard one_at_a_time(impl.closing);
  {
    std::lock_guard lock(impl.mutex);
    if (impl.closed) return;
    impl.closed = true;
  }
  {
    std::lock_guard lock(impl.registry->mutex);
    impl.registry->listeners.clear();
  }
  impl.refresh.stop();
  if (impl.connection_listener) impl.client.remove_listener(*impl.connection_listener);
}

const std::string& SharedCount::path() const noexcept { return impl_->path; }

}  // namespace zkr
