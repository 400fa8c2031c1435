// zkr/lost_reason.hpp: why a held lock can no longer be trusted, as a grant
// (Grant, zkr/lock.hpp) reports it.
#pragma once

#include <string_view>

namespace zkr {

// Why a held lock can no longer be trusted.
enum class LostReason {
  none,
  suspended,     // the link dropped (only with SuspendedPolicy::lost)
  session_lost,  // the session expired or was given up
  node_deleted,  // our lock node was deleted by someone else
};
std::string_view to_string(LostReason reason) noexcept;

}  // namespace zkr
