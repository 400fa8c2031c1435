// zkr/path.hpp: znode path rules, checked before anything is sent.
//
//   zkr::validate_path("/locks/a");          // ok
//   zkr::validate_path("locks/a");           // throws std::invalid_argument
//   zkr::join_path("/locks", "a") == "/locks/a"
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace zkr {

// The longest path we accept. The server has no fixed limit, but every request
// carries the path, and a path this long is always a caller's bug.
inline constexpr std::size_t kMaxPathLength = 1024;

// Throws std::invalid_argument, naming the path and the rule it breaks, when the
// path is: empty, relative, ends in '/', has an empty segment ("//"), a "." or
// ".." segment, a control character or NUL, is longer than kMaxPathLength, or is
// in the reserved /zookeeper subtree (unless allow_reserved).
void validate_path(std::string_view path, bool allow_reserved = false);

// Same rules, for a path that will get a sequence suffix: may end in a name
// fragment such as "/locks/a/lock-".
void validate_sequential_prefix(std::string_view path);

// Throws std::invalid_argument unless name is a valid single path segment.
void validate_node_name(std::string_view name);

std::string join_path(std::string_view parent, std::string_view child);
std::string_view parent_path(std::string_view path);  // "/a/b" -> "/a", "/a" -> "/"
std::string_view node_name(std::string_view path);    // "/a/b" -> "b"

}  // namespace zkr
