// What the train yard's orchestrator and workers share: options, the znode
// layout of a run, and the statistics a worker reports.
//
// Layout of one run (a fresh root per run, removed at the end):
//   /zkr-trainyard/<run>/trains/t<i>      "seq location"
//   /zkr-trainyard/<run>/locations/l<i>   "created deleted arrived departed"
//   /zkr-trainyard/<run>/workers/w<i>     the worker's statistics (see WorkerStats)
//   /zkr-trainyard/<run>/cursor           what is published: "next epoch slot"
//   /zkr-trainyard/<run>/batches/b<first>  one per publish: "first count epoch"
//   /zkr-trainyard/<run>/dispatchers/d<slot>-<pid>  a candidate's DispatcherStats
//   /zkr-trainyard-locks/<run>/train-<i>, loc-<i>   lock directories (containers,
//                                                   reaped by the server)
//   /zkr-trainyard-locks/<run>/dispatcher  the dispatchers' LeaderLatch (a container)
#pragma once

#include <chrono>
#include <cstdint>
#include <future>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "stream.hpp"
#include "zkr/keeper.hpp"

namespace trainyard {

// The bound on one read or write of the run's records.
inline constexpr std::chrono::seconds kRequestTimeout{10};
// A wait for a watch is cut at this, and the state read again: a write the
// ensemble lost in its chaos sets off no watch.
inline constexpr std::chrono::seconds kRecheckEvery{1};

// The node a read answers, within kRequestTimeout; throws what the read
// failed with.
inline zkr::NodeData await_node(std::future<zkr::Result<zkr::NodeData>> reply,
                                const std::string& path) {
  return zkr::await_reply(std::move(reply), kRequestTimeout, path).value();
}

inline constexpr int kMaxWorkers = 64;
// Dispatcher candidates: one leads and publishes, the others stand by.
inline constexpr int kDispatchers = 3;
// The leader publishes batches of kBatchSize messages while fewer than
// kPublishWindow published messages are not yet applied: the stream is
// handed out as the workers take it, so a failover leaves them idle.
inline constexpr int kBatchSize = 25;
inline constexpr int kPublishWindow = 200;

struct Options {
  std::string connect;  // ZooKeeper connect string
  StreamConfig stream;
  int workers = 4;
  bool locks = true;                  // false: --no-locks, unversioned read-modify-write
  bool chaos = false;                 // kill and restart a server, expire a worker's session
  std::chrono::seconds timeout{300};  // the whole run
  // Set only in a worker process.
  int worker = -1;
  int dispatcher = -1;  // set only in a dispatcher candidate: its slot
  std::string run;      // "run-<pid>-<ms>"
};

inline std::string run_root(const Options& o) { return "/zkr-trainyard/" + o.run; }
inline std::string lock_root(const Options& o) { return "/zkr-trainyard-locks/" + o.run; }
inline std::string train_path(const Options& o, int t) {
  return run_root(o) + "/trains/t" + std::to_string(t);
}
inline std::string location_path(const Options& o, int l) {
  return run_root(o) + "/locations/l" + std::to_string(l);
}
inline std::string worker_path(const Options& o, int w) {
  return run_root(o) + "/workers/w" + std::to_string(w);
}
inline std::string cursor_path(const Options& o) { return run_root(o) + "/cursor"; }
inline std::string batches_path(const Options& o) { return run_root(o) + "/batches"; }
// Zero-padded, so that a listing sorts in stream order.
std::string batch_path(const Options& o, int first);
inline std::string dispatchers_path(const Options& o) { return run_root(o) + "/dispatchers"; }
inline std::string latch_path(const Options& o) { return lock_root(o) + "/dispatcher"; }

// What a worker saw, written to its znode about once a second and at the end.
struct WorkerStats {
  bool done = false;
  std::int64_t applied = 0;    // messages this worker applied
  std::int64_t conflicts = 0;  // writes refused for a concurrent modification (bad version)
  std::int64_t refused = 0;    // writes refused because a lock was lost
  std::int64_t abandoned = 0;  // attempts given up for a lost lock before writing
  std::int64_t timeouts = 0;   // lock acquisitions that timed out (then retried)
  std::int64_t errors = 0;     // attempts that failed on a connection error (then retried)
  std::int64_t expired = 0;    // sessions this worker expired on purpose (--chaos)
  std::vector<std::int64_t> lock_wait_us;  // one per acquisition
};
std::string encode(const WorkerStats& stats);
std::optional<WorkerStats> decode_stats(const std::string& data);

// The worker's main: applies its share of the published stream, reports,
// returns the exit code.
int run_worker(const Options& options);
// A dispatcher candidate's main: publishes the stream while it leads, until
// all of it is published; returns the exit code.
int run_dispatcher(const Options& options);

}  // namespace trainyard
