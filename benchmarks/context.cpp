#include "context.hpp"

#include "zkr/lock_factory.hpp"

#include <condition_variable>
#include <mutex>

#include "zkr/path.hpp"

namespace zkr::bench {

std::unique_ptr<Client> Context::connect() const {
  ClientOptions client_options;
  client_options.connect_string = session_connect();
  std::unique_ptr<Client> client;
  try {
    client = std::make_unique<Client>(client_options);
  } catch (const std::invalid_argument& e) {
    throw RunError(std::string("bad --connect '") + options.connect + "': " + e.what());
  }
  if (!client->block_until_connected(std::chrono::seconds(15)))
    throw RunError("cannot connect to ZooKeeper at " + options.connect + " within 15 s");
  return client;
}

std::vector<std::string> paths_below(Keeper& keeper, const std::string& path, unsigned max_depth) {
  auto listed = keeper.try_children(path);
  if (listed.error() == Errc::no_node) return {};
  const auto& names = listed.value().names;  // throws for other errors
  std::vector<std::string> paths;
  for (const auto& name : names) {
    // A LockFactory's layout record is meant to stay with its root.
    if (name == kLayoutNodeName) continue;
    paths.push_back(join_path(path, name));
    if (max_depth > 0) {
      auto below = paths_below(keeper, paths.back(), max_depth - 1);
      paths.insert(paths.end(), below.begin(), below.end());
    }
  }
  return paths;
}

std::uint64_t count_below(Keeper& keeper, const std::string& path, unsigned max_depth) {
  return paths_below(keeper, path, max_depth).size();
}

namespace {

// A one-shot watch and the wait for it. The watch outlives the wait if it
// never fires: it holds the state.
class WatchLatch {
 public:
  WatchLatch() : state_(std::make_shared<State>()) {}
  Watcher watcher() const {
    return [state = state_](const WatchEvent&) {
      {
        std::lock_guard lock(state->mutex);
        state->changed = true;
      }
      state->fired.notify_all();
    };
  }
  bool wait_until(std::chrono::steady_clock::time_point deadline) const {
    std::unique_lock lock(state_->mutex);
    return state_->fired.wait_until(lock, deadline, [&] { return state_->changed; });
  }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable fired;
    bool changed = false;
  };
  std::shared_ptr<State> state_;
};

}  // namespace

bool wait_for_children(Keeper& keeper, const std::string& dir, std::size_t n,
                       std::chrono::steady_clock::time_point deadline) {
  for (int rounds = 0; rounds < 1'000'000; ++rounds) {
    const WatchLatch latch;
    auto listed = keeper.try_children(dir, latch.watcher());
    if (listed.ok() && listed.value().names.size() >= n) return true;
    if (listed.error() == Errc::no_node) {
      // A child watch is not set on an absent node; an exists watch is.
      if (keeper.exists(dir, latch.watcher())) continue;
    } else if (!listed.ok()) {
      (void)listed.value();  // throws
    }
    if (!latch.wait_until(deadline)) return false;
  }
  return false;
}

bool wait_gone(Keeper& keeper, const std::string& path,
               std::chrono::steady_clock::time_point deadline) {
  for (int rounds = 0; rounds < 1'000'000; ++rounds) {
    const WatchLatch latch;
    if (!keeper.exists(path, latch.watcher())) return true;
    if (!latch.wait_until(deadline)) return false;
  }
  return false;
}

}  // namespace zkr::bench
