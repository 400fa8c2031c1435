// The servers' truth about lock nodes: when each was created and deleted, read
// from the ensemble's own transaction logs after the run, so that the checker
// judges holds by the servers' truth rather than by what workers said.
//
// Why the transaction logs and not a watching session: every change the
// ensemble committed is in them, with its zxid, its session and the leader's
// clock; a watcher misses nodes that live less than a round trip, and learns
// of a deletion only after the fact, with no zxid. Why our own reader and not
// ZooKeeper's LogFormatter/TxnLogToolkit: those print the time to the second,
// and the checker needs the millisecond; the format is small and fixed (jute,
// big-endian; see FileTxnLog and the .jute records of ZooKeeper 3.x).
//
// A node's life ends with a delete (alone or in a multi) or with the close of
// the session that owns it (expiry included): ephemeral nodes get no delete
// record of their own. A transaction is taken as committed when a majority of
// the servers logged it: every committed one was, and a leader cut off from
// the others may log proposals no quorum ever saw (they are counted as
// unconfirmed and left out). Copies of one zxid that disagree with no
// majority are a problem of the record.
//
//   auto record = zkr::chaos::read_txn_logs(txn_log_files(dir), "/chaos/locks/");
//   for (const auto& life : record.lives) ... life.path, life.created, life.deleted
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "event_log.hpp"

namespace zkr::chaos {

struct NodeLife {
  std::string path;
  std::int64_t czxid = 0;
  std::int64_t created =
      0;                   // ns; the leader's wall clock in the logs, CLOCK_MONOTONIC once shifted
  std::int64_t owner = 0;  // ephemeral owner session, 0 if persistent
  std::int64_t dzxid = 0;  // 0 while alive
  std::optional<std::int64_t> deleted;  // ns, same clock as `created`
  std::string end;                      // "delete" or "session_closed"; "" while alive
  std::int64_t deleter = 0;             // the session whose delete or close ended it
};

// Whether the node existed when the transaction `zxid` was applied.
inline bool alive_at(const NodeLife& life, std::int64_t zxid) {
  return life.czxid < zxid && (life.dzxid == 0 || life.dzxid > zxid);
}

// The last component of a node's path, and the path of its parent.
inline std::string name_of(const std::string& path) { return path.substr(path.rfind('/') + 1); }
inline std::string dir_of(const std::string& path) { return path.substr(0, path.rfind('/')); }

struct ServerRecord {
  std::vector<NodeLife> lives;    // in czxid order
  std::int64_t transactions = 0;  // committed (logged by a majority)
  std::int64_t unconfirmed = 0;   // logged by fewer servers: never committed
  std::int64_t last_zxid = 0;
  std::vector<std::string> problems;
};

// Reads every transaction of the given log files (log.<zxid> of each server's
// dataDir/version-2; one list per server) and keeps the lives of the nodes whose path starts with
// `prefix` and whose name is a lock node's (is_lock_node_name). Times are
// wall-clock ns (ms precision).
// Whether the last name of `path` is a contender's node of one of the
// library's locks: a mutex's or a semaphore's internal mutex's ("-lock-"), a
// read/write lock's ("-__READ__", "-__WRIT__") or a semaphore's lease
// ("-lease-"). The checker judges grants by these nodes' lives.
bool is_lock_node_name(std::string_view path);

ServerRecord read_txn_logs(const std::vector<std::vector<std::string>>& servers,
                           const std::string& prefix);

// DIR/data-*/version-2/log.*: the logs of an ensemble made by scripts/ensemble, by server.
std::vector<std::vector<std::string>> txn_log_files(const std::string& ensemble_dir);

// One life as a record's fields ("life" lines of RUN/server-record.txt), and back.
Fields life_fields(const NodeLife& life);
NodeLife parse_life(const Event& event);
std::vector<NodeLife> read_server_record(const std::string& path);

}  // namespace zkr::chaos
