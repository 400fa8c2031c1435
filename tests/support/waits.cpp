#include "support/waits.hpp"

#include <memory>

namespace zkr::test {
namespace {

using Clock = std::chrono::steady_clock;

// Re-arms a watch after each event until the check passes or time runs out.
// `look` sets a one-shot watch that opens the given latch, and says whether
// the state is reached.
bool watch_until(const std::function<bool(const std::shared_ptr<Latch>&)>& look,
                 std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    auto changed = std::make_shared<Latch>();
    if (look(changed)) return true;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left <= std::chrono::milliseconds(0) || !changed->wait(left)) return false;
  }
}

}  // namespace

bool wait_children(Keeper& keeper, const std::string& dir, const ChildrenPredicate& pred,
                   std::chrono::milliseconds timeout) {
  return watch_until(
      [&](const std::shared_ptr<Latch>& changed) {
        auto listed = keeper.try_children(dir, [changed](const WatchEvent&) { changed->open(); });
        if (listed.error() == Errc::no_node) {
          // No dir: watch for its creation, and judge the empty list. If it
          // was created since the listing, the watch set is on its data,
          // which may never change: look again at once.
          if (keeper.exists(dir, [changed](const WatchEvent&) { changed->open(); }))
            changed->open();
          return pred({});
        }
        return pred(listed.value().names);
      },
      timeout);
}

bool wait_node(Keeper& keeper, const std::string& path, const NodePredicate& pred,
               std::chrono::milliseconds timeout) {
  return watch_until(
      [&](const std::shared_ptr<Latch>& changed) {
        // The exists watch fires on a create, a data change and a delete.
        if (!keeper.exists(path, [changed](const WatchEvent&) { changed->open(); }))
          return pred(std::nullopt);
        auto read = keeper.try_get(path);
        if (read.error() == Errc::no_node) return pred(std::nullopt);
        return pred(std::move(read).value());
      },
      timeout);
}

bool wait_gone(Keeper& keeper, const std::string& path, std::chrono::milliseconds timeout) {
  return watch_until(
      [&](const std::shared_ptr<Latch>& changed) {
        return !keeper.exists(path, [changed](const WatchEvent&) { changed->open(); });
      },
      timeout);
}

void Latch::open() {
  // Notify under the lock: a waiter that sees open_ may return and destroy
  // the latch (often on its stack) at once, so cv_ must not be touched after
  // the mutex is released. TSan caught notify_all() on a destroyed latch.
  std::lock_guard lock(mutex_);
  open_ = true;
  cv_.notify_all();
}

bool Latch::wait(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return cv_.wait_for(lock, timeout, [&] { return open_; });
}

bool Latch::is_open() const {
  std::lock_guard lock(mutex_);
  return open_;
}

}  // namespace zkr::test
