// CKeeper's requests (c_keeper.hpp), all but multi (c_keeper_multi.cpp): the
// conversions they need, the call to the matching zoo_a* function with a
// heap completion, and the answer to a call the C client refused at once.
// Apart because this is the only code that hands requests to the C client.
#include <stdexcept>
#include <string>
#include <utility>

#include "c_keeper_internals.hpp"
#include "keeper_arguments.hpp"

namespace zkr {
namespace ckeeper {
namespace {

// An error the C client returned from the zoo_a* call itself. ZINVALIDSTATE
// means the handle is dead; say why, as a request in flight would have heard.
Errc sync_error(zhandle_t* zh, int rc) {
  if (rc == ZINVALIDSTATE) {
    const int state = zoo_state(zh);
    if (state == ZOO_EXPIRED_SESSION_STATE) return Errc::session_expired;
    if (state == ZOO_AUTH_FAILED_STATE) return Errc::auth_failed;
  }
  return errc_from_int(rc);
}

}  // namespace

int c_mode(CreateMode mode) {
  switch (mode) {
    case CreateMode::persistent: return ZOO_PERSISTENT;
    case CreateMode::persistent_sequential: return ZOO_PERSISTENT_SEQUENTIAL;
    case CreateMode::ephemeral: return ZOO_EPHEMERAL;
    case CreateMode::ephemeral_sequential: return ZOO_EPHEMERAL_SEQUENTIAL;
    case CreateMode::container: return ZOO_CONTAINER;
    case CreateMode::persistent_with_ttl: return ZOO_PERSISTENT_WITH_TTL;
    case CreateMode::persistent_sequential_with_ttl: return ZOO_PERSISTENT_SEQUENTIAL_WITH_TTL;
  }
  throw std::invalid_argument("unknown CreateMode " + std::to_string(static_cast<int>(mode)));
}

// A zoo_a* call failed: its completion will not run, so answer now. Except
// that ZMARSHALLINGERROR can come after the completion was queued (an
// allocation failure in the C client): then we answer only if the completion
// has not claimed it yet, and leave freeing to the completion or to close().
// Returns the answer, for the caller to give once it holds no lock.
[[nodiscard]] std::function<void()> reject(zhandle_t* zh, Shared& shared, Pending* p, int rc) {
  const Errc error = sync_error(zh, rc);
  if (rc == ZMARSHALLINGERROR) {
    std::lock_guard lock(shared.mutex);
    if (!shared.pending.contains(p)) return {};  // its completion has it
    p->answered = true;
    return p->failure(error);
  }
  auto answer = p->failure(error);
  if (p->watch) drop(shared, p->watch);
  {
    std::lock_guard lock(shared.mutex);
    shared.pending.erase(p);
    shared.watchdog.on_withdrawn();
    if (shared.pending.empty()) shared.drained.notify_all();
  }
  delete p;
  return answer;
}

}  // namespace ckeeper

using namespace ckeeper;

void CKeeper::send_create(std::string path, std::string data, CreateMode mode,
                          CreateOptions options, ReplyHandler<Result<Created>> on_reply) {
  detail::check_create(path, data, mode, options);
  const int flags = c_mode(mode);
  const CAclList acl(options.acl ? *options.acl : shared_->default_acl);
  auto c = std::make_unique<Completion<Created>>(shared_.get(), path, std::move(on_reply));
  send_open(std::move(c), [&](Completion<Created>* raw) {
    const auto length = static_cast<int>(data.size());
    if (has_ttl(mode))
      return zoo_acreate2_ttl(handle_, path.c_str(), data.data(), length, acl.get(), flags,
                              options.ttl.count(), &on_created, raw);
    return zoo_acreate2(handle_, path.c_str(), data.data(), length, acl.get(), flags, &on_created,
                        raw);
  });
}

void CKeeper::send_remove(std::string path, Version version, ReplyHandler<Result<Empty>> on_reply) {
  detail::check_write_path(path);
  auto c = std::make_unique<Completion<Empty>>(shared_.get(), path, std::move(on_reply));
  send_open(std::move(c), [&](Completion<Empty>* raw) {
    return zoo_adelete(handle_, path.c_str(), version, &on_void, raw);
  });
}

// Reads may look at the reserved /zookeeper subtree (a tool listing the tree
// does); writes there are refused before they are sent.
void CKeeper::send_exists(std::string path, Watcher watcher, ReplyHandler<Result<Stat>> on_reply) {
  detail::check_read_path(path);
  auto c = std::make_unique<Completion<Stat>>(shared_.get(), path, std::move(on_reply));
  c->watch = arm(*shared_, path, std::move(watcher), /*exists_watch=*/true);
  WatchContext* w = c->watch;
  send_open(std::move(c), [&](Completion<Stat>* raw) {
    return zoo_awexists(handle_, path.c_str(), w ? &on_watch : nullptr, w, &on_stat, raw);
  });
}

void CKeeper::send_get(std::string path, Watcher watcher, ReplyHandler<Result<NodeData>> on_reply) {
  detail::check_read_path(path);
  auto c = std::make_unique<Completion<NodeData>>(shared_.get(), path, std::move(on_reply));
  c->watch = arm(*shared_, path, std::move(watcher), /*exists_watch=*/false);
  WatchContext* w = c->watch;
  send_open(std::move(c), [&](Completion<NodeData>* raw) {
    return zoo_awget(handle_, path.c_str(), w ? &on_watch : nullptr, w, &on_data, raw);
  });
}

void CKeeper::send_set(std::string path, std::string data, Version version,
                       ReplyHandler<Result<Stat>> on_reply) {
  detail::check_set(path, data);
  const auto length = static_cast<int>(data.size());
  auto c = std::make_unique<Completion<Stat>>(shared_.get(), path, std::move(on_reply));
  send_open(std::move(c), [&](Completion<Stat>* raw) {
    return zoo_aset(handle_, path.c_str(), data.data(), length, version, &on_stat, raw);
  });
}

void CKeeper::send_children(std::string path, Watcher watcher,
                            ReplyHandler<Result<Children>> on_reply) {
  detail::check_read_path(path);
  auto c = std::make_unique<Completion<Children>>(shared_.get(), path, std::move(on_reply));
  c->watch = arm(*shared_, path, std::move(watcher), /*exists_watch=*/false);
  WatchContext* w = c->watch;
  send_open(std::move(c), [&](Completion<Children>* raw) {
    return zoo_awget_children2(handle_, path.c_str(), w ? &on_watch : nullptr, w, &on_children,
                               raw);
  });
}

void CKeeper::send_sync(std::string path, ReplyHandler<Result<Empty>> on_reply) {
  detail::check_read_path(path);
  auto c = std::make_unique<Completion<Empty>>(shared_.get(), path, std::move(on_reply));
  send_open(std::move(c), [&](Completion<Empty>* raw) {
    return zoo_async(handle_, path.c_str(), &on_synced, raw);
  });
}

}  // namespace zkr
