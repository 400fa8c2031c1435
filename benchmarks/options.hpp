// Command-line options of the benchmarks, and the sizes they imply.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace zkr::bench {

// A bad command line; what() says what was wrong.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Options {
  std::string connect;                 // --connect, else $ZK_CONNECT
  std::vector<std::string> workloads;  // W1..W10, in run order
  bool quick = false;                  // tiny sizes: a smoke test
  bool json = false;
  bool strict = false;                 // a missed target also exits 1
  std::optional<std::string> out_dir;  // JSON lines, table and plots go there
  std::string root = "/zkr-bench";
  std::uint64_t max_keys = 1'000'000;          // cap on W4's N
  std::optional<std::vector<double>> rtts_ms;  // --rtt: added round trips for W1, W2
  // W2 and W5 take no lock: the control of their exclusion checks, which
  // must then report overlaps and lost updates (exit 1).
  bool no_lock = false;
  // --peers curator: Curator's recipes run W1, W2, W3, W5, W6, W7, W9 and W10 too.
  bool curator = false;
  bool help = false;

  bool wants(const std::string& workload) const;
};

// Durations and sizes of every workload, from --quick and --max-keys.
struct Plan {
  std::chrono::milliseconds w1_duration;  // the floor's and W1's each
  std::chrono::milliseconds w2_duration;
  unsigned w2_workers;
  std::vector<std::uint64_t> w3_keys;  // K, in sequence
  unsigned w3_threads;                 // threads, spread over the sessions
  unsigned w3_sessions;
  std::chrono::milliseconds w3_settle;  // wait before the last znode count
  std::vector<std::uint64_t> w4_keys;   // N
  // Cycles at each N: after a warm-up, at least w4_duration and w4_min_cycles
  // pairs (under N, then the control), at most w4_max_duration or w4_cycles.
  std::chrono::milliseconds w4_warmup;
  std::chrono::milliseconds w4_duration;
  std::chrono::milliseconds w4_max_duration;
  std::uint64_t w4_min_cycles;
  std::uint64_t w4_cycles;
  std::vector<std::uint64_t> w5_waiters;  // N
  std::uint64_t w5_handoffs;              // measured at each N, at most
  std::chrono::milliseconds w5_duration;  // at each N, at most
  std::vector<double> rtts_ms = {0};      // W1 and W2 at each added round trip (0: direct)
  std::uint64_t w8_keys = 1000;           // W8: keys, each with as many waiters queued
  std::uint64_t w8_waiters_per_key = 10;
  unsigned w9_participants = 3;                        // W9: each on a session of its own
  std::uint64_t w9_rounds = 100;                       // failovers timed, at most
  std::chrono::milliseconds w9_duration{30000};        // and no new round after this
  std::uint64_t w9_kill_rounds = 5;                    // kills of the leader's link
  std::chrono::milliseconds w9_session_timeout{2000};  // the killed leader's session
  unsigned w10_workers = 8;                            // W10: each on a session of its own
  std::uint64_t w10_adds_per_worker = 2000;            // adds, at most
  std::chrono::milliseconds w10_duration{20000};       // and no new add after this
  unsigned w10_retries = 100;                          // RetryNTimes(n, 0 ms), both sides
  std::uint64_t w10_changes = 1000;                    // W10b: member changes per round
  unsigned w10_members = 20;                           // names they go round
  std::uint64_t w10_cache_rounds = 5;                  // rounds, each timed once
};

Plan make_plan(const Options& options);

// Throws UsageError. Does not look at the environment except for ZK_CONNECT.
Options parse_options(const std::vector<std::string>& args);

std::string usage_text();

}  // namespace zkr::bench
