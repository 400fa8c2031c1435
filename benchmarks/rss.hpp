// Memory of this process, in KiB, and its threads.
#pragma once

#include <cstdint>

namespace zkr::bench {

// Peak resident set size so far (getrusage's ru_maxrss): it never goes down.
std::uint64_t peak_rss_kib();
// Resident set size now (/proc/self/statm); 0 if unreadable.
std::uint64_t current_rss_kib();
// Threads of this process now (/proc/self/status, Threads:); 0 if unreadable.
std::uint64_t thread_count();

}  // namespace zkr::bench
