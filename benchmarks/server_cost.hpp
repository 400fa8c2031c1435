// What a workload costs the servers, counted by the servers: requests
// (zk_packets_received, summed over every local server: each request is one
// packet at the server its session is connected to) and writes (the leader's
// zxid, from srvr: every transaction that went through the quorum, an error
// transaction such as a create that found the node or a refused delete
// included). Measured around the timed part of a workload only, so that
// connects and setup do not count; pings are the noise (one per idle session
// every third of its timeout).
//
//   CostMeter cost(ctx.options.connect);
//   cost.begin(); ...cycles...; cost.end(cycles);
//   record.requests_per_op = cost.requests_per_op();
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace zkr::bench {

struct ServerCounters {
  std::int64_t packets_received = 0;  // summed over the servers
  std::int64_t leader_zxid = 0;
  std::int64_t leader_fsyncs = 0;  // zk_cnt_fsynctime: 0 growth means forceSync=no
};

// One reading of the local servers' counters, or why there is none: a server
// did not answer (down, not local, the four-letter words not allowed, or too
// slow on a loaded machine, which is why a reading is tried a few times), or
// no server was the leader (an election under way).
struct CounterReading {
  std::optional<ServerCounters> counters;
  std::string problem;  // set when counters is empty
};
CounterReading read_server_counters(const std::string& connect);

// Whether the servers fsync their transaction log, as ZooKeeper does by
// default (forceSync=yes), told by the leader's own count of fsyncs between
// two readings (a run's first and last): a benchmark on servers that skip
// it measures a faster, unsafe setting. Unknown, with the reason, when a
// reading failed.
std::string durability_line(const CounterReading& before, const CounterReading& after);

// Accumulates the counters' growth over several timed spans (W1's slices).
// A span in which a reading failed or the leader changed (a new epoch) is
// left out, and stderr says why (once per reason); the cost is per operation
// of the spans kept.
class CostMeter {
 public:
  explicit CostMeter(std::string connect) : connect_(std::move(connect)) {}
  void begin();
  void end(std::uint64_t ops);  // the operations done since begin()
  std::optional<double> requests_per_op() const;
  std::optional<double> writes_per_op() const;
  std::int64_t fsyncs() const noexcept { return fsyncs_; }

 private:
  std::string connect_;
  CounterReading start_;
  std::string last_problem_;  // said on stderr already
  std::int64_t packets_ = 0, writes_ = 0, fsyncs_ = 0;
  std::uint64_t ops_ = 0;
};

}  // namespace zkr::bench
