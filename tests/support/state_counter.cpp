#include "support/state_counter.hpp"

namespace zkr::test {

void StateCounter::on(ConnectionState s) {
  {
    std::lock_guard lock(mutex_);
    ++counts_[s];
    last_ = s;
  }
  changed_.notify_all();
}

int StateCounter::count(ConnectionState s) {
  std::lock_guard lock(mutex_);
  return counts_[s];
}

bool StateCounter::wait_more(ConnectionState s, int than) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, bound_, [&] { return counts_[s] > than; });
}

bool StateCounter::announced_after(ConnectionState s, const std::function<void()>& cause) {
  const int before = count(s);
  cause();
  return wait_more(s, before);
}

bool StateCounter::caught_up() {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, bound_, [&] {
    return !last_ || last_ == ConnectionState::connected || last_ == ConnectionState::reconnected;
  });
}

}  // namespace zkr::test
