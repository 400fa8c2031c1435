// The only benchmark code that includes the ZooKeeper C client's header.
#include "floor.hpp"

#include <zookeeper/zookeeper.h>

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
void on_event(zhandle_t*, int type, int state, const char*, void* context) {
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

}  // namespace

struct Floor::Impl {
  Connection connection;
  zhandle_t* zh = nullptr;
  std::string parent;

  void create_if_missing(const std::string& path, int flags) {
    const int rc = zoo_create(zh, path.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, flags, nullptr, 0);
    if (rc != ZOK && rc != ZNODEEXISTS) throw std::runtime_error(error_text("creating", path, rc));
  }
  ~Impl() {
    if (!zh) return;
    (void)zoo_delete(zh, parent.c_str(), -1);  // best effort: the sweep of a later run takes it
    zookeeper_close(zh);
  }
};

Floor::Floor(const std::string& connect, const std::string& root) : impl_(std::make_unique<Impl>()) {
  // As quiet as the library's default (warn); the library sets this global
  // level again when it opens its own sessions.
  zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);
  impl_->zh = zookeeper_init(connect.c_str(), &on_event, 15000, nullptr, &impl_->connection, 0);
  if (!impl_->zh) throw std::runtime_error("floor: zookeeper_init failed for " + connect);
  {
    auto& c = impl_->connection;
    std::unique_lock lock(c.mutex);
    if (!c.changed.wait_for(lock, kConnectTimeout, [&] { return c.state == ZOO_CONNECTED_STATE; }))
      throw std::runtime_error("floor: no connection to " + connect + " within 15 s");
  }
  impl_->parent = root + "/floor";
  impl_->create_if_missing(root, ZOO_CONTAINER);
  impl_->create_if_missing(impl_->parent, ZOO_PERSISTENT);
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
    int rc = zoo_create(zh, prefix.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL,
                        created.data(), static_cast<int>(created.size()));
    if (rc != ZOK) throw std::runtime_error(error_text("creating", prefix, rc));
    String_vector children{};
    rc = zoo_get_children(zh, parent.c_str(), 0, &children);
    if (rc != ZOK) throw std::runtime_error(error_text("listing", parent, rc));
    deallocate_String_vector(&children);
    rc = zoo_delete(zh, created.data(), -1);
    if (rc != ZOK) throw std::runtime_error(error_text("deleting", created.data(), rc));
    samples.add(ms_between(t0, Clock::now()));
  }
  return cycles;
}

}  // namespace zkr::bench
