#include "rss.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>

namespace zkr::bench {

std::uint64_t peak_rss_kib() {
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<std::uint64_t>(usage.ru_maxrss);  // KiB on Linux
}

std::uint64_t current_rss_kib() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)) / 1024;
}

}  // namespace zkr::bench
