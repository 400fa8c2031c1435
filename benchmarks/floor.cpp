// The only benchmark code that includes the ZooKeeper C client's header.
#include "floor.hpp"

#include <zookeeper/zookeeper.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "progress.hpp"

namespace zkr::bench {
namespace {

constexpr auto kConnectTimeout = std::chrono::seconds(15);

struct Connection {
  std::mutex mutex;
  std::condition_variable changed;
  int state = 0;  // the last session state the watcher saw
};

// Runs on the C client's event thread: record and signal, nothing more.
void on_event(zhandle_t*, int type, int state, const char*, void* context) {
  if (type != ZOO_SESSION_EVENT) return;
  auto* connection = static_cast<Connection*>(context);
  {
    std::lock_guard lock(connection->mutex);
    connection->state = state;
  }
  connection->changed.notify_all();
}

struct HandleCloser {
  void operator()(zhandle_t* handle) const { zookeeper_close(handle); }
};
using Handle = std::unique_ptr<zhandle_t, HandleCloser>;

std::string error_text(const std::string& what, const std::string& path, int rc) {
  return what + " " + path + ": " + zerror(rc);
}

void create_if_missing(zhandle_t* zh, const std::string& path, int flags) {
  const int rc = zoo_create(zh, path.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, flags, nullptr, 0);
  if (rc != ZOK && rc != ZNODEEXISTS) throw std::runtime_error(error_text("floor: creating", path, rc));
}

}  // namespace

FloorResult run_floor(const std::string& connect, const std::string& root,
                      std::chrono::milliseconds duration, std::uint64_t max_cycles) {
  // As quiet as the library's default (warn); the library sets this global
  // level again when it opens its own sessions.
  zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);
  Connection connection;
  Handle zh(zookeeper_init(connect.c_str(), &on_event, 15000, nullptr, &connection, 0));
  if (!zh) throw std::runtime_error("floor: zookeeper_init failed for " + connect);
  {
    std::unique_lock lock(connection.mutex);
    if (!connection.changed.wait_for(lock, kConnectTimeout,
                                     [&] { return connection.state == ZOO_CONNECTED_STATE; }))
      throw std::runtime_error("floor: no connection to " + connect + " within 15 s");
  }

  const std::string parent = root + "/floor";
  create_if_missing(zh.get(), root, ZOO_CONTAINER);
  create_if_missing(zh.get(), parent, ZOO_PERSISTENT);

  const std::string prefix = parent + "/lock-";
  std::vector<char> created(prefix.size() + 32);
  FloorResult result;
  Progress progress("floor cycles", 0);
  const auto start = Clock::now();
  const auto deadline = start + duration;
  for (; result.cycles < max_cycles; ++result.cycles) {
    const auto t0 = Clock::now();
    if (t0 >= deadline) break;
    int rc = zoo_create(zh.get(), prefix.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE,
                        ZOO_EPHEMERAL_SEQUENTIAL, created.data(), static_cast<int>(created.size()));
    if (rc != ZOK) throw std::runtime_error(error_text("floor: creating", prefix, rc));
    String_vector children{};
    rc = zoo_get_children(zh.get(), parent.c_str(), 0, &children);
    if (rc != ZOK) throw std::runtime_error(error_text("floor: listing", parent, rc));
    deallocate_String_vector(&children);
    rc = zoo_delete(zh.get(), created.data(), -1);
    if (rc != ZOK) throw std::runtime_error(error_text("floor: deleting", created.data(), rc));
    result.cycle_ms.add(ms_between(t0, Clock::now()));
    progress.update(result.cycles);
  }
  result.seconds = seconds_since(start);
  const int rc = zoo_delete(zh.get(), parent.c_str(), -1);
  if (rc != ZOK && rc != ZNONODE) throw std::runtime_error(error_text("floor: deleting", parent, rc));
  return result;
}

}  // namespace zkr::bench
