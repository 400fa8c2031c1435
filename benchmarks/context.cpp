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

std::uint64_t count_below(Keeper& keeper, const std::string& path, unsigned max_depth) {
  auto listed = keeper.try_children(path);
  if (listed.error() == Errc::no_node) return 0;
  const auto& names = listed.value().names;  // throws for other errors
  std::uint64_t count = 0;
  for (const auto& name : names) {
    // A LockFactory's layout record is meant to stay with its root.
    if (name == kLayoutNodeName) continue;
    ++count;
    if (max_depth > 0) count += count_below(keeper, join_path(path, name), max_depth - 1);
  }
  return count;
}

bool wait_for_children(Keeper& keeper, const std::string& dir, std::size_t n,
                       std::chrono::steady_clock::time_point deadline) {
  // The watch outlives this call if it never fires: it holds the state.
  struct State {
    std::mutex mutex;
    std::condition_variable fired;
    bool changed = false;
  };
  for (int rounds = 0; rounds < 1'000'000; ++rounds) {
    auto state = std::make_shared<State>();
    const Watcher watcher = [state](const WatchEvent&) {
      {
        std::lock_guard lock(state->mutex);
        state->changed = true;
      }
      state->fired.notify_all();
    };
    auto listed = keeper.try_children(dir, watcher);
    if (listed.ok() && listed.value().names.size() >= n) return true;
    if (listed.error() == Errc::no_node) {
      // A child watch is not set on an absent node; an exists watch is.
      if (keeper.exists(dir, watcher)) continue;
    } else if (!listed.ok()) {
      (void)listed.value();  // throws
    }
    std::unique_lock lock(state->mutex);
    if (!state->fired.wait_until(lock, deadline, [&] { return state->changed; })) return false;
  }
  return false;
}

}  // namespace zkr::bench
