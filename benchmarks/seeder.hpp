// Fills a lock root with many empty key directories, fast: requests are
// pipelined (a bounded window in flight per session) over several sessions.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "zkr/client.hpp"

namespace zkr::bench {

struct SeedOptions {
  std::size_t window = 1000;  // requests in flight per session
  CreateMode mode = CreateMode::container;
  std::string progress_label;  // "" for no progress lines
};

// Creates path_of(i) for every i < count, spread over the sessions; a node
// that already exists counts as created. path_of is called from several
// threads at once. Throws KeeperError for any other error (naming the path).
void create_nodes(const std::vector<Client*>& sessions, std::uint64_t count,
                  const std::function<std::string(std::uint64_t)>& path_of,
                  const SeedOptions& options);

}  // namespace zkr::bench
