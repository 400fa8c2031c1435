#include "yard.hpp"

#include <cstdio>
#include <sstream>

namespace trainyard {

std::string batch_path(const Options& o, int first) {
  char name[16];
  std::snprintf(name, sizeof name, "b%010d", first);
  return batches_path(o) + "/" + name;
}

// "done applied conflicts refused abandoned timeouts errors expired | wait wait ..."
std::string encode(const WorkerStats& s) {
  std::ostringstream out;
  out << (s.done ? 1 : 0) << ' ' << s.applied << ' ' << s.conflicts << ' ' << s.refused << ' '
      << s.abandoned << ' ' << s.timeouts << ' ' << s.errors << ' ' << s.expired << " |";
  for (auto us : s.lock_wait_us) out << ' ' << us;
  return out.str();
}

std::optional<WorkerStats> decode_stats(const std::string& data) {
  std::istringstream in(data);
  WorkerStats s;
  int done = 0;
  char bar = 0;
  if (!(in >> done >> s.applied >> s.conflicts >> s.refused >> s.abandoned >> s.timeouts >>
        s.errors >> s.expired >> bar) ||
      bar != '|')
    return std::nullopt;
  s.done = done != 0;
  for (std::int64_t us; in >> us;) s.lock_wait_us.push_back(us);
  return s;
}

}  // namespace trainyard
