// How zkr writes a session id: in hex, as ZooKeeper's own logs and four-letter
// commands do, so that a reader can find the session there.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace zkr::cli {

inline std::string session_hex(std::int64_t id) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(id));
  return buffer;
}

}  // namespace zkr::cli
