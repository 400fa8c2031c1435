// Memory of this process, in KiB.
#pragma once

#include <cstdint>

namespace zkr::bench {

// Peak resident set size so far (getrusage's ru_maxrss): it never goes down.
std::uint64_t peak_rss_kib();
// Resident set size now (/proc/self/statm); 0 if unreadable.
std::uint64_t current_rss_kib();

}  // namespace zkr::bench
