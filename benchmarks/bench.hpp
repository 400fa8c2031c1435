// bench.hpp: the benchmarks behind `zkr bench` and zkr-bench.
//
//   zkr::bench::run({"--connect", "127.0.0.1:2181", "--workloads", "W1,W5", "--json"});
//
// Workloads (each measured against the "floor": the bare lock protocol on the
// ZooKeeper C client, run first in the same process):
//   W1 uncontended cycles      W2 eight sessions on one lock
//   W3 many distinct locks     W4 cost as the lock root fills with other keys
//   W5 hand-off down a queue of N waiters
// `--help` lists the options; docs/benchmarks.md and docs/bench/ describe the
// results.
#pragma once

#include <string>
#include <vector>

namespace zkr::bench {

// Exit codes of run().
inline constexpr int kExitOk = 0;           // ran; no check failed (targets: see --strict)
inline constexpr int kExitCheckFailed = 1;  // a correctness check failed (mutual exclusion,
                                            // leftover znodes), or with --strict a target missed
inline constexpr int kExitUsage = 2;        // bad option
inline constexpr int kExitRunFailed = 3;    // could not run: no ensemble, an error mid-run

// args: what follows `zkr bench` on the command line. Prints the table (stdout,
// or stderr with --json), JSON lines (stdout, with --json), progress (stderr).
int run(const std::vector<std::string>& args);

}  // namespace zkr::bench
