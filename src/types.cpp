#include "zkr/types.hpp"

namespace zkr {

bool is_sequential(CreateMode m) noexcept {
  return m == CreateMode::persistent_sequential || m == CreateMode::ephemeral_sequential ||
         m == CreateMode::persistent_sequential_with_ttl;
}

bool is_ephemeral(CreateMode m) noexcept {
  return m == CreateMode::ephemeral || m == CreateMode::ephemeral_sequential;
}

bool has_ttl(CreateMode m) noexcept {
  return m == CreateMode::persistent_with_ttl || m == CreateMode::persistent_sequential_with_ttl;
}

std::string_view to_string(SessionState s) noexcept {
  switch (s) {
    case SessionState::connecting: return "connecting";
    case SessionState::connected: return "connected";
    case SessionState::connected_read_only: return "connected_read_only";
    case SessionState::expired: return "expired";
    case SessionState::auth_failed: return "auth_failed";
    case SessionState::closed: return "closed";
  }
  return "unknown";
}

AclList open_acl_unsafe() { return {Acl{Acl::all, "world", "anyone"}}; }
AclList creator_all_acl() { return {Acl{Acl::all, "auth", ""}}; }
AclList read_acl_unsafe() { return {Acl{Acl::read, "world", "anyone"}}; }

std::size_t MultiResult::failed_index() const noexcept {
  for (std::size_t i = 0; i < results.size(); ++i) {
    // The server marks the operations it rolled back with runtime_inconsistency;
    // the one that failed carries its own code.
    if (results[i].error != Errc::ok && results[i].error != Errc::runtime_inconsistency) return i;
  }
  return results.size();
}

}  // namespace zkr
