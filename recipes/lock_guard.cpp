// A grant owned by an object: given back through the Client while it lives.
#include "zkr/lock_guard.hpp"

#include <stdexcept>
#include <utility>

#include "client_internals.hpp"
#include "grant_state.hpp"
#include "lock_internals.hpp"
#include "zkr/lock.hpp"

namespace zkr {

LockGuard::LockGuard() noexcept = default;

LockGuard::LockGuard(std::shared_ptr<detail::GrantState> state,
                     std::shared_ptr<detail::ClientLifeline> lifeline, Client& client) noexcept
    : state_(std::move(state)), lifeline_(std::move(lifeline)), client_(&client) {}

LockGuard::~LockGuard() { (void)unlock(); }

LockGuard::LockGuard(LockGuard&& other) noexcept
    : state_(std::move(other.state_)),
      lifeline_(std::move(other.lifeline_)),
      client_(std::exchange(other.client_, nullptr)) {}

LockGuard& LockGuard::operator=(LockGuard&& other) noexcept {
  if (this != &other) {
    (void)unlock();
    state_ = std::move(other.state_);
    lifeline_ = std::move(other.lifeline_);
    client_ = std::exchange(other.client_, nullptr);
  }
  return *this;
}

Grant LockGuard::grant() const {
  if (!state_) throw std::logic_error("LockGuard::grant(): the guard owns no grant");
  return Grant(state_);
}

bool LockGuard::unlock() noexcept {
  const auto state = std::exchange(state_, nullptr);
  if (!state) return false;
  // The Client may be gone (then its session, and our node, went with it).
  detail::ClientLifeline::Visit visit(*lifeline_);
  if (visit) detail::release_node(*client_, state);
  else state->mark_released();
  return true;
}

}  // namespace zkr
