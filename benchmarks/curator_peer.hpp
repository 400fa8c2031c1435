// Apache Curator's recipes as a third implementation in the same run (`zkr
// bench --peers curator`): InterProcessMutex (W1-W3, W5),
// InterProcessReadWriteLock (W6), InterProcessSemaphoreV2 and
// InterProcessSemaphoreMutex (W7), LeaderLatch (W9),
// DistributedAtomicLong and CuratorCache (W10). benchmarks/curator/CuratorBench.java,
// compiled with javac against Debian's Curator 5.4 jars (/usr/share/java, as
// the interop test finds them) and driven one command per line, so that its
// slices interleave with the floor's and ours.
//
//   CuratorBuild build;                       // javac once, into a temporary directory
//   CuratorPeer peer(build, connect, 8);      // a JVM with 8 sessions
//   auto w1 = peer.w1("/zkr-bench/curator-w1/lock", 1000ms);
#pragma once

#include <sys/types.h>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace zkr::bench {

// The compiled peer. Throws RunError saying what is missing (javac, java, a
// jar) or javac's failure.
class CuratorBuild {
 public:
  CuratorBuild();
  ~CuratorBuild();  // removes the temporary directory
  CuratorBuild(const CuratorBuild&) = delete;
  CuratorBuild& operator=(const CuratorBuild&) = delete;

  const std::string& java() const noexcept { return java_; }
  const std::string& classpath() const noexcept { return classpath_; }
  const std::string& dir() const noexcept { return dir_; }

 private:
  std::string java_, classpath_, dir_;
};

class CuratorPeer {
 public:
  // Starts the JVM and waits (60 s at most) for its sessions; RunError if not.
  CuratorPeer(const CuratorBuild& build, const std::string& connect, unsigned sessions);
  // quit, then SIGKILL if it has not exited within 10 s.
  ~CuratorPeer();
  CuratorPeer(const CuratorPeer&) = delete;
  CuratorPeer& operator=(const CuratorPeer&) = delete;

  struct W1 {
    std::uint64_t cycles = 0;
    std::vector<double> latencies_ms;
  };
  W1 w1(const std::string& path, std::chrono::milliseconds duration);

  // W3: keys distinct locks under root, once each, by threads over the
  // peer's sessions; at most duration.
  W1 w3(const std::string& root, std::uint64_t keys, unsigned threads,
        std::chrono::milliseconds duration);

  struct W5 {
    std::uint64_t handoffs = 0;
    double seconds = 0;  // from the first release to the last measured grant
    std::vector<double> handoffs_ms;
  };
  W5 w5(const std::string& path, std::uint64_t waiters, std::uint64_t handoffs,
        std::chrono::milliseconds duration);

  struct W2 {
    std::uint64_t acquisitions = 0;
    std::int64_t counter = 0;
    std::vector<double> waits_ms;
    std::string interval_file;  // the holds, in the checker's format
  };
  W2 w2(const std::string& path, unsigned workers, std::chrono::milliseconds duration);

  // W6: as W2 on a read/write lock, every write_every-th hold of each worker
  // a write; the holds of kind "read" and "write".
  struct W6 {
    std::uint64_t reads = 0, writes = 0;
    std::int64_t counter = 0;
    std::vector<double> read_waits_ms, write_waits_ms;
    std::string interval_file;
  };
  W6 w6(const std::string& path, unsigned workers, unsigned write_every,
        std::chrono::milliseconds duration);

  // W7: workers on their own sessions, each hold recorded (token 0: W7 looks
  // only at how many held at once).
  struct W7 {
    std::uint64_t acquisitions = 0;
    std::vector<double> waits_ms;
    std::string interval_file;
  };
  // InterProcessSemaphoreV2 of `leases`, each hold `reads` exists() long.
  W7 w7_semaphore(const std::string& path, unsigned workers, std::int32_t leases, int reads,
                  std::chrono::milliseconds duration);
  // InterProcessSemaphoreMutex.
  W7 w7_mutex(const std::string& path, unsigned workers, std::chrono::milliseconds duration);

  // W9: LeaderLatch participants, each on its own session; the leader closes
  // once the others are queued, and joins again; failovers timed from the
  // close() call to the next leader's await returning.
  struct W9 {
    std::uint64_t elections = 0;
    std::uint64_t violations = 0;  // terms begun while another was held
    double seconds = 0;
    std::vector<double> failovers_ms;
  };
  W9 w9_close(const std::string& path, std::size_t participants, std::uint64_t rounds,
              std::chrono::milliseconds duration);
  // W9's kill, around the caller cutting the victim's link: a new session
  // through `via` (the victim's proxies) joins the latch at path and leads,
  // participants - 1 of the peer's sessions queue behind it (standbys).
  void w9_victim(const std::string& via, const std::string& path,
                 std::chrono::milliseconds session_timeout, std::size_t participants);
  // CLOCK_MONOTONIC ns when a standby's await returned; RunError if none
  // led within `wait`. The standbys close.
  std::int64_t w9_standby_wait(std::chrono::milliseconds wait);
  // The victim's latch and session closed (once its link is back).
  void w9_victim_close();

  // W10: workers, each on its own session, increment one
  // DistributedAtomicLong under RetryNTimes(retries, 0 ms); each success
  // timed from the call to its return.
  struct W10 {
    std::uint64_t succeeded = 0;
    std::uint64_t failed = 0;     // ran out of retries
    std::uint64_t conflicts = 0;  // versioned writes refused
    double seconds = 0;
    std::vector<double> adds_ms;
  };
  W10 w10_counter(const std::string& path, unsigned workers, std::uint64_t adds_per_worker,
                  unsigned retries, std::chrono::milliseconds duration);

  // W10b, one round in three steps, so that the caller counts the servers'
  // requests around the middle one: the group made and a CuratorCache on
  // it initialized; the member changes made by another session, and the ms
  // from the last reply until the cache holds the final members; whether
  // the cache then equals the servers' tree (the round closed, its nodes
  // deleted).
  void w10_cache_start(const std::string& group);
  double w10_cache_run(std::uint64_t changes, unsigned members);
  bool w10_cache_check();

 private:
  // Both W7 commands: their words up to the duration, which it appends with
  // the interval file.
  W7 w7(const std::string& command_words, std::chrono::milliseconds duration);
  // Sends one command line; returns the reply's words after "done". RunError
  // on "error ...", end of output, or no reply by the deadline.
  std::vector<std::string> command(const std::string& line, std::chrono::milliseconds timeout);
  std::string read_line(std::chrono::steady_clock::time_point deadline);
  // A new file for the peer to write holds to, removed with the peer.
  std::string interval_file();

  const CuratorBuild& build_;
  pid_t pid_ = -1;
  int to_peer_ = -1, from_peer_ = -1;
  std::string pending_;  // read but not yet returned
  unsigned next_file_ = 0;
};

}  // namespace zkr::bench
