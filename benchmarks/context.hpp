// What every workload gets: the options, the plan of sizes, the reporter, and
// sessions to the ensemble.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "options.hpp"
#include "report.hpp"
#include "zkr/client.hpp"

namespace zkr::bench {

class CuratorPeer;

// The run cannot go on (no ensemble, an unexpected error): exit code 3.
class RunError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Context {
  const Options& options;
  const Plan& plan;
  Reporter& reporter;
  // Where the workload's sessions connect: the ensemble, or delay proxies in
  // front of it (added_rtt_ms > 0). The servers' counters (mntr) are always
  // read from options.connect.
  std::string via = {};
  double added_rtt_ms = 0;
  // With --peers curator: a JVM of Curator sessions to session_connect().
  CuratorPeer* curator = nullptr;

  const std::string& session_connect() const { return via.empty() ? options.connect : via; }
  // A new Client (one session) to session_connect(), connected, or RunError.
  std::unique_ptr<Client> connect() const;
  // root + "/" + name: each workload works under a directory of its own.
  std::string path(const std::string& name) const { return options.root + "/" + name; }
};

// Znodes strictly below path (0 if path is absent), but LockFactory layout
// records, which stay by design. For small trees: it lists every directory,
// at most max_depth levels down.
std::uint64_t count_below(Keeper& keeper, const std::string& path, unsigned max_depth = 4);
// The same znodes, by path, parents before their children.
std::vector<std::string> paths_below(Keeper& keeper, const std::string& path,
                                     unsigned max_depth = 4);

// Waits, on a child watch, until dir has at least n children. False at the
// deadline.
bool wait_for_children(Keeper& keeper, const std::string& dir, std::size_t n,
                       std::chrono::steady_clock::time_point deadline);

// Waits, on an exists watch, until path is absent. False at the deadline.
bool wait_gone(Keeper& keeper, const std::string& path,
               std::chrono::steady_clock::time_point deadline);

}  // namespace zkr::bench
