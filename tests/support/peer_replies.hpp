// What the interop tests' lock peers (tests/interop: Curator's and kazoo's)
// answer, read the same way for both.
#pragma once

#include <string>
#include <string_view>

namespace zkr::test {

// The node of a reply "acquired NODE"; "" for any other reply.
inline std::string acquired_node(const std::string& reply) {
  constexpr std::string_view kAcquired = "acquired ";
  return reply.starts_with(kAcquired) ? reply.substr(kAcquired.size()) : "";
}

}  // namespace zkr::test
