#include "client_internals.hpp"

namespace zkr::detail {

void ClientLifeline::close() noexcept {
  std::lock_guard lock(mutex_);
  closed_ = true;
}

bool ClientLifeline::wait_for_visits(std::chrono::milliseconds timeout) noexcept {
  std::unique_lock lock(mutex_);
  return idle_.wait_for(lock, timeout, [&] { return visits_ == 0; });
}

bool ClientLifeline::enter() noexcept {
  std::lock_guard lock(mutex_);
  if (closed_) return false;
  ++visits_;
  return true;
}

void ClientLifeline::leave() noexcept {
  {
    std::lock_guard lock(mutex_);
    --visits_;
  }
  idle_.notify_all();
}

}  // namespace zkr::detail
