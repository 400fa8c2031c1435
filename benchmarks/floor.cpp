// The only benchmark code that includes the ZooKeeper C client's header.
#include "floor.hpp"

#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace zkr::bench {
namespace {

constexpr auto kConnectTimeout = std::chrono::seconds(15);

struct Connection {
  std::mutex mutex;
  std::condition_variable changed;
  int state = 0;  // the last session state the watcher saw
};

// Runs on the C client's event thread: record and signal, nothing more.
void on_floor_event(zhandle_t*, int type, int state, const char*, void* context) {
  if (type != ZOO_SESSION_EVENT) return;
  auto* connection = static_cast<Connection*>(context);
  {
    std::lock_guard lock(connection->mutex);
    connection->state = state;
  }
  connection->changed.notify_all();
}

std::string error_text(const std::string& what, const std::string& path, int rc) {
  return "floor: " + what + " " + path + ": " + zerror(rc);
}

// A server that stalls (ZOOKEEPER-4537, docs/connection.md) answers nothing,
// and after two thirds of the session timeout the C client gives up on it
// and moves to another: the request in flight fails, applied or not. The
// floor sends it again there, a few times, as any client must; a delete that
// then finds no node was applied the first time. Without this one stall
// ends the whole benchmark run.
bool link_lost(int rc) { return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT; }
constexpr int kLinkRetries = 3;

int delete_node(zhandle_t* zh, const char* path) {
  int rc = zoo_delete(zh, path, -1);
  for (int retry = 0; link_lost(rc) && retry < kLinkRetries; ++retry) {
    rc = zoo_delete(zh, path, -1);
    if (rc == ZNONODE) return ZOK;
  }
  return rc;
}

int floor_list_children(zhandle_t* zh, const char* path, String_vector* children) {
  int rc = zoo_get_children(zh, path, 0, children);
  for (int retry = 0; link_lost(rc) && retry < kLinkRetries; ++retry)
    rc = zoo_get_children(zh, path, 0, children);
  return rc;
}

// One session of the C client, connected.
struct Session {
  Connection connection;
  zhandle_t* zh = nullptr;

  explicit Session(const std::string& connect) {
    // As quiet as the library's default (warn); the library sets this global
    // level again when it opens its own sessions.
    zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);
    zh = zookeeper_init(connect.c_str(), &on_floor_event, 15000, nullptr, &connection, 0);
    if (!zh) throw std::runtime_error("floor: zookeeper_init failed for " + connect);
    // As the library's sessions do (c_keeper.cpp): by default the C client
    // resolves every host name again on each poll of its socket, which costs
    // a third of its CPU under load. The floor stands for the protocol, not
    // for that default.
    zoo_set_servers_resolution_delay(zh, 10'000);
    std::unique_lock lock(connection.mutex);
    if (!connection.changed.wait_for(lock, kConnectTimeout,
                                     [&] { return connection.state == ZOO_CONNECTED_STATE; })) {
      lock.unlock();
      zookeeper_close(zh);
      throw std::runtime_error("floor: no connection to " + connect + " within 15 s");
    }
  }
  ~Session() { zookeeper_close(zh); }  // joins the client's threads: no callback after this
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void create_if_missing(const std::string& path, int flags) {
    const int rc =
        zoo_create(zh, path.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, flags, nullptr, 0);
    if (rc != ZOK && rc != ZNODEEXISTS) throw std::runtime_error(error_text("creating", path, rc));
  }
};

// Counts watch events; a waiter waits for the count to pass what it saw.
struct WatchCount {
  std::mutex mutex;
  std::condition_variable changed;
  std::uint64_t events = 0;  // guarded by mutex

  std::uint64_t now() {
    std::lock_guard lock(mutex);
    return events;
  }
  bool wait_beyond(std::uint64_t seen, Clock::time_point deadline) {
    std::unique_lock lock(mutex);
    return changed.wait_until(lock, deadline, [&] { return events > seen; });
  }
};

// On the C client's event thread: count and signal.
void on_watch(zhandle_t*, int type, int, const char*, void* context) {
  if (type == ZOO_SESSION_EVENT) return;
  auto* count = static_cast<WatchCount*>(context);
  {
    std::lock_guard lock(count->mutex);
    ++count->events;
  }
  count->changed.notify_all();
}

}  // namespace

struct Floor::Impl {
  explicit Impl(const std::string& connect) : session(connect) {}
  ~Impl() {
    (void)zoo_delete(session.zh, parent.c_str(),
                     -1);  // best effort: the sweep of a later run takes it
  }
  Session session;
  zhandle_t* zh = session.zh;
  std::string parent;
};

Floor::Floor(const std::string& connect, const std::string& root)
    : impl_(std::make_unique<Impl>(connect)) {
  impl_->parent = root + "/floor";
  impl_->session.create_if_missing(root, ZOO_CONTAINER);
  impl_->session.create_if_missing(impl_->parent, ZOO_PERSISTENT);
}

Floor::~Floor() = default;

std::uint64_t Floor::cycle_for(std::chrono::milliseconds duration, std::uint64_t max_cycles,
                               Samples& samples) {
  zhandle_t* zh = impl_->zh;
  const std::string& parent = impl_->parent;
  const std::string prefix = parent + "/lock-";
  std::vector<char> created(prefix.size() + 32);
  const auto deadline = Clock::now() + duration;
  std::uint64_t cycles = 0;
  for (; cycles < max_cycles; ++cycles) {
    const auto t0 = Clock::now();
    if (t0 >= deadline) break;
    int rc = zoo_create(zh, prefix.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE,
                        ZOO_EPHEMERAL_SEQUENTIAL, created.data(), static_cast<int>(created.size()));
    if (rc != ZOK) throw std::runtime_error(error_text("creating", prefix, rc));
    String_vector children{};
    rc = floor_list_children(zh, parent.c_str(), &children);
    if (rc != ZOK) throw std::runtime_error(error_text("listing", parent, rc));
    deallocate_String_vector(&children);
    rc = delete_node(zh, created.data());
    if (rc != ZOK) throw std::runtime_error(error_text("deleting", created.data(), rc));
    samples.add(ms_between(t0, Clock::now()));
  }
  return cycles;
}

struct FloorLock::Impl {
  explicit Impl(const std::string& connect) : session(connect) {}
  WatchCount watches;  // declared before the session: it outlives the client's threads
  Session session;
  std::string dir;
  std::string ours;  // our node's path while queued or held
};

FloorLock::FloorLock(const std::string& connect, std::string dir, Grant grant)
    : impl_(std::make_unique<Impl>(connect)), grant_(grant) {
  impl_->dir = std::move(dir);
}

FloorLock::~FloorLock() = default;  // closing the session deletes a node left

void FloorLock::create_dir(const std::string& connect, const std::string& root,
                           const std::string& dir) {
  Session session(connect);
  session.create_if_missing(root, ZOO_CONTAINER);
  session.create_if_missing(dir, ZOO_PERSISTENT);
}

bool FloorLock::try_acquire_for(std::chrono::milliseconds timeout) {
  zhandle_t* zh = impl_->session.zh;
  const std::string& dir = impl_->dir;
  const auto deadline = Clock::now() + timeout;
  const std::string prefix = dir + "/lock-";
  std::vector<char> created(prefix.size() + 32);
  Stat stat{};
  int rc =
      zoo_create2(zh, prefix.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL,
                  created.data(), static_cast<int>(created.size()), &stat);
  if (rc != ZOK) throw std::runtime_error(error_text("creating", prefix, rc));
  impl_->ours = created.data();
  token_ = stat.czxid;
  const std::string name = impl_->ours.substr(dir.size() + 1);
  for (int round = 0; round < 1'000'000; ++round) {  // each round waits for an event
    String_vector children{};
    rc = floor_list_children(zh, dir.c_str(), &children);
    if (rc != ZOK) throw std::runtime_error(error_text("listing", dir, rc));
    std::vector<std::string> names(children.data, children.data + children.count);
    deallocate_String_vector(&children);
    std::sort(names.begin(), names.end());  // one prefix: the sequence orders them
    const auto at = std::lower_bound(names.begin(), names.end(), name);
    if (at == names.end() || *at != name)
      throw std::runtime_error("floor: our node " + name + " is gone");
    if (at == names.begin()) return true;
    const std::string predecessor = dir + "/" + *std::prev(at);
    const std::uint64_t seen = impl_->watches.now();
    rc = zoo_wexists(zh, predecessor.c_str(), &on_watch, &impl_->watches, &stat);
    if (rc == ZNONODE) continue;  // gone already: list again
    if (rc != ZOK) throw std::runtime_error(error_text("watching", predecessor, rc));
    if (!impl_->watches.wait_beyond(seen, deadline)) break;
    if (grant_ == Grant::event_alone) return true;
  }
  (void)zoo_delete(zh, impl_->ours.c_str(), -1);
  impl_->ours.clear();
  return false;
}

void FloorLock::release() {
  if (impl_->ours.empty()) return;
  const std::string ours = std::move(impl_->ours);
  impl_->ours.clear();
  if (grant_ == Grant::event_alone) {
    // Sent, not awaited: the session's next create is ordered after it.
    const int rc = zoo_adelete(
        impl_->session.zh, ours.c_str(), -1, [](int, const void*) {}, nullptr);
    if (rc != ZOK) throw std::runtime_error(error_text("deleting", ours, rc));
    return;
  }
  const int rc = delete_node(impl_->session.zh, ours.c_str());
  if (rc != ZOK) throw std::runtime_error(error_text("deleting", ours, rc));
}

}  // namespace zkr::bench
