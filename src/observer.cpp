// The names of the observer's enums (zkr/observer.hpp), as metrics label them.
#include "zkr/observer.hpp"

namespace zkr {

std::string_view to_string(Recipe recipe) noexcept {
  switch (recipe) {
    case Recipe::mutex: return "mutex";
    case Recipe::read: return "read";
    case Recipe::write: return "write";
    case Recipe::semaphore: return "semaphore";
    case Recipe::latch: return "latch";
    case Recipe::client: return "client";
  }
  return "unknown";
}

std::string_view to_string(WaitOutcome outcome) noexcept {
  switch (outcome) {
    case WaitOutcome::granted: return "granted";
    case WaitOutcome::timed_out: return "timed_out";
    case WaitOutcome::cancelled: return "cancelled";
    case WaitOutcome::failed: return "failed";
  }
  return "unknown";
}

std::string_view to_string(HoldOutcome outcome) noexcept {
  switch (outcome) {
    case HoldOutcome::released: return "released";
    case HoldOutcome::lost: return "lost";
  }
  return "unknown";
}

std::string_view to_string(Request request) noexcept {
  switch (request) {
    case Request::create: return "create";
    case Request::remove: return "delete";
    case Request::get: return "get";
    case Request::exists: return "exists";
    case Request::children: return "children";
  }
  return "unknown";
}

}  // namespace zkr
