// zkr-test-lock_worker: one process of a lock stress test
// (tests/integration/lock_stress_test.cpp).
//
//   zkr-test-lock_worker CONNECT LOCK_PATH KIND THREADS ACQUISITIONS SECONDS COUNTER_PATH OUTPUT
//                        [--acquire-timeout-ms=N [--patient-threads=P]] [--faults]
//                        [--reports=FILE]
//
// One Client (one session) shared by THREADS threads, as a real service would
// run; each thread has its own lock object of KIND on LOCK_PATH:
//   mutex      InterProcessMutex
//   semaphore  NonReentrantMutex
//   readwrite  InterProcessReadWriteLock: every third acquisition takes the
//              write side (and increments), the others the read side (and
//              read the counter, holding a round trip long); read holds are
//              recorded with kind "read", write holds with kind "write"
//   none       no lock at all: the deliberately broken lock, to prove that the
//              checker sees what a broken lock does
// Each thread acquires ACQUISITIONS times or until SECONDS have passed,
// whichever comes first. While holding, it increments the counter znode
// COUNTER_PATH by an unprotected read-modify-write (get, then set with no
// version check), so that only the lock keeps updates from being lost.
//
// Options:
//   --acquire-timeout-ms=N  each acquire gives up after N ms (default 10 s,
//                           which a fair lock never needs on a healthy
//                           ensemble; a short one makes waiters leave the
//                           queue all the time)
//   --patient-threads=P     with --acquire-timeout-ms, the first P threads
//                           keep the default timeout: they stay in the queue
//                           and walk past the nodes the others leave, and
//                           each worker is sure to hold the lock however
//                           slow the servers are
//   --reports=FILE          timeout reports (see report_timeout) go to FILE,
//                           not stderr: a test prints them after its verdict;
//                           the summary line below ends the file too
//   --faults                servers are being killed: a hold whose grant says
//                           lost (the link dropped) is counted, not an error
//
// SIGTERM makes every thread stop after its current acquire, as if the time
// bound had passed: a test that injects faults stops the workers when done.
//
// At the end it writes one line per acquisition to OUTPUT, in the format of
// testkit/checker/exclusion_checker.hpp, prints a one-line summary on stdout, and
// exits 0, or 1 after errors (printed on stderr), or 64 for bad arguments.
// The library logs through ZKR_LOG_LEVEL (warn by default).
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "exclusion_checker.hpp"
#include "support/waits.hpp"
#include "zkr/client.hpp"
#include "zkr/lock.hpp"
#include "zkr/path.hpp"
#include "zkr/read_write_lock.hpp"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using zkr::exclusion::HolderInterval;

// Bounds each acquire by default: with fair locks a waiter is served within
// one turn of every process ahead of it, far less than this on a healthy
// ensemble.
constexpr milliseconds kDefaultAcquireTimeout = 10s;
constexpr milliseconds kConnectTimeout = 30s;
// How long background deletes (after a timed-out acquire) may take to finish
// before a node of ours left in the lock directory counts as leaked.
constexpr milliseconds kLeakWait = 10s;

// Raised by SIGTERM; threads look at it between acquisitions.
std::atomic<bool> stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");

extern "C" void on_sigterm(int) { stop_requested.store(true); }

struct Config {
  std::string connect;
  std::string lock_path;
  std::string kind;
  int threads = 0;
  int acquisitions = 0;
  int seconds = 0;
  std::string counter_path;
  std::string output;
  milliseconds acquire_timeout = kDefaultAcquireTimeout;
  int patient_threads = 0;  // threads that keep kDefaultAcquireTimeout
  bool faults = false;
  std::string reports{};  // file for timeout reports; empty: stderr
};

int positive(const std::string& text, const char* name) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value <= 0)
    throw std::invalid_argument(std::string(name) + " must be a positive integer, got '" + text +
                                "'");
  return value;
}

Config parse_args(int argc, char** argv) {
  Config config;
  std::string threads, acquisitions, seconds, timeout_ms, patient;
  CLI::App app;
  app.set_help_flag();  // the usage line in main() is the help
  app.add_option("CONNECT", config.connect)->required();
  app.add_option("LOCK_PATH", config.lock_path)->required();
  app.add_option("KIND", config.kind)->required();
  app.add_option("THREADS", threads)->required();
  app.add_option("ACQUISITIONS", acquisitions)->required();
  app.add_option("SECONDS", seconds)->required();
  app.add_option("COUNTER_PATH", config.counter_path)->required();
  app.add_option("OUTPUT", config.output)->required();
  app.add_option("--acquire-timeout-ms", timeout_ms);
  app.add_option("--patient-threads", patient);
  app.add_flag("--faults", config.faults);
  app.add_option("--reports", config.reports);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    throw std::invalid_argument(e.what());
  }
  config.threads = positive(threads, "THREADS");
  config.acquisitions = positive(acquisitions, "ACQUISITIONS");
  config.seconds = positive(seconds, "SECONDS");
  if (app.count("--acquire-timeout-ms") != 0)
    config.acquire_timeout = milliseconds(positive(timeout_ms, "--acquire-timeout-ms"));
  if (app.count("--patient-threads") != 0) {
    if (app.count("--acquire-timeout-ms") == 0)
      throw std::invalid_argument("--patient-threads needs --acquire-timeout-ms");
    config.patient_threads = positive(patient, "--patient-threads");
    if (config.patient_threads > config.threads)
      throw std::invalid_argument("--patient-threads must be at most THREADS (" + threads +
                                  "), got " + patient);
  }
  if (app.count("--reports") != 0 && config.reports.empty())
    throw std::invalid_argument("--reports needs a FILE");
  if (config.kind != "mutex" && config.kind != "semaphore" && config.kind != "readwrite" &&
      config.kind != "none")
    throw std::invalid_argument("KIND must be mutex, semaphore, readwrite or none, got '" +
                                config.kind + "'");
  zkr::validate_path(config.lock_path);
  zkr::validate_path(config.counter_path);
  return config;
}

// CLOCK_MONOTONIC, named explicitly: the checker compares the clocks of
// several processes, which only this clock (one per machine) allows.
std::int64_t monotonic_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

std::string hex(std::int64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "%llx", static_cast<unsigned long long>(value));
  return text;
}

// The broken lock: grants at once and excludes nobody.
class NoLock {
 public:
  NoLock(zkr::Client&, const std::string&) {}
  bool try_acquire_for(milliseconds) { return true; }
  bool release() noexcept { return true; }
};

// Both sides of one read/write lock in turn: every third acquisition writes.
class ReadWriteTurns {
 public:
  ReadWriteTurns(zkr::Client& client, const std::string& path) : lock_(client, path) {}
  bool try_acquire_for(milliseconds timeout) {
    reading_ = turn_++ % 3 != 0;
    side_ = reading_ ? &lock_.read_lock() : &lock_.write_lock();
    return side_->try_acquire_for(timeout);
  }
  bool release() noexcept { return side_->release(); }
  zkr::Grant grant() const { return side_->grant(); }
  bool reading() const { return reading_; }

 private:
  zkr::InterProcessReadWriteLock lock_;
  zkr::InterProcessReadWriteLock::Side* side_ = nullptr;
  bool reading_ = false;
  unsigned turn_ = 0;
};

template <class Lock>
bool reading(const Lock& lock) {
  if constexpr (std::is_same_v<Lock, ReadWriteTurns>) return lock.reading();
  else return false;
}

template <class Lock>
std::string kind_of(const Lock& lock, const Config& config) {
  if constexpr (std::is_same_v<Lock, ReadWriteTurns>) return lock.reading() ? "read" : "write";
  else return config.kind;
}

template <class Lock>
std::int64_t token_of(const Lock& lock) {
  if constexpr (std::is_same_v<Lock, NoLock>) return 0;
  else return lock.grant().fencing_token();
}

template <class Lock>
bool lost(const Lock& lock) {
  if constexpr (std::is_same_v<Lock, NoLock>) return false;
  else return lock.grant().lost();
}

// The unprotected read-modify-write. Both steps are retried: the get is a
// read, and the set writes an absolute value, so repeating one whose reply
// was lost writes the same value again (only the lock keeps the value right).
void increment(zkr::Client& client, const std::string& path) {
  const auto data = client.with_retry([&](zkr::Keeper& keeper) { return keeper.get(path).data; });
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(data.data(), data.data() + data.size(), value);
  if (error != std::errc() || end != data.data() + data.size())
    throw std::runtime_error("counter " + path + " holds '" + data + "', not an integer");
  client.with_retry(
      [&](zkr::Keeper& keeper) { return keeper.set(path, std::to_string(value + 1)); });
}

// The sequence after a queue node's last marker ("lock-", "__READ__",
// "__WRIT__"): what the queue is ordered by.
std::string sequence_of(const std::string& name) {
  const auto dash = name.find_last_not_of("0123456789");
  return dash == std::string::npos ? name : name.substr(dash + 1);
}

// One server's view of the queue, from a session of its own on that server
// alone, after a sync (so a follower that only lags catches up first): servers
// that still disagree then have diverged, which no client can work around.
std::string server_view(const std::string& host, const std::string& dir) {
  try {
    zkr::ClientOptions options;
    options.connect_string = host;
    options.session_timeout = 4s;
    options.connection_timeout = 3s;
    zkr::Client client(options);
    if (!client.block_until_connected(3s)) return "no connection";
    auto keeper = client.keeper_when_connected();
    keeper->sync(dir, 3s);
    auto listed = keeper->try_children(dir);
    if (!listed.ok()) return std::string(zkr::errc_name(listed.error()));
    auto names = listed.value().names;
    std::sort(names.begin(), names.end(),
              [](const auto& a, const auto& b) { return sequence_of(a) < sequence_of(b); });
    std::string text;
    for (const auto& name : names) text += " " + sequence_of(name);
    // The directory's child changes as this server counts them, and the
    // zxid of the last: its high half is the epoch of the leader that made
    // it, so servers that diverged show which leaders they followed.
    const auto& stat = listed.value().stat;
    return (names.empty() ? "empty" : text.substr(1)) + " (cversion " +
           std::to_string(stat.cversion) + ", pzxid 0x" + hex(stat.pzxid) + ")";
  } catch (const std::exception& e) {
    return e.what();
  }
}

// A fair lock should serve every waiter long before the default timeout: say
// who was in the queue, holder first, so that a stall can be traced to a
// process and thread (each node's data names them) and a session (a node of
// a session its Client gave up lives until the servers expire it), and what
// each server says (a server that diverged shows nodes the others do not).
void report_timeout(zkr::Client& client, const Config& config, std::int64_t asked_ns) {
  const auto& dir = config.lock_path;
  std::string text = "lock_worker pid " + std::to_string(::getpid()) + " thread " +
                     std::to_string(::gettid()) + ": acquire asked at " + std::to_string(asked_ns) +
                     " ns timed out at " + std::to_string(monotonic_ns()) + " ns; queue now:";
  try {
    auto keeper = client.keeper_when_connected();
    text += " (our session 0x" + hex(keeper->session_id()) + ")";
    auto listed = keeper->try_children(dir);
    if (listed.ok()) {
      auto names = listed.value().names;
      std::sort(names.begin(), names.end(),
                [](const auto& a, const auto& b) { return sequence_of(a) < sequence_of(b); });
      for (const auto& name : names) {
        auto node = keeper->try_get(zkr::join_path(dir, name));
        auto data = node.ok() ? node.value().data : std::string("(gone)");
        std::replace(data.begin(), data.end(), '\n', ' ');
        text += "\n  " + name + " " + data;
        if (node.ok()) text += " session=0x" + hex(node.value().stat.ephemeral_owner);
      }
    }
  } catch (const std::exception& e) {
    text += std::string(" (cannot list: ") + e.what() + ")";
  }
  const auto& connect = config.connect;
  for (std::size_t begin = 0; begin <= connect.size();) {
    const auto comma = std::min(connect.find(',', begin), connect.size());
    const auto host = connect.substr(begin, comma - begin);
    if (!host.empty()) text += "\n  server " + host + " after a sync: " + server_view(host, dir);
    begin = comma + 1;
  }
  if (config.reports.empty()) {
    std::cerr << text + "\n";
    return;
  }
  static std::mutex mutex;  // threads report at once when a stall ends
  std::lock_guard lock(mutex);
  std::ofstream(config.reports, std::ios::app) << text << '\n';
}

struct ThreadResult {
  std::vector<HolderInterval> intervals;
  int timeouts = 0;  // acquires that gave up before the time bound
  int lost = 0;      // holds whose grant said lost before the release
  bool hit_time_bound = false;
  std::vector<std::string> errors;
};

template <class Lock>
void run_thread(zkr::Client& client, const Config& config, milliseconds acquire_timeout,
                Clock::time_point deadline, ThreadResult& result) {
  const std::int64_t pid = ::getpid();
  const std::int64_t thread = ::gettid();
  try {
    Lock lock(client, config.lock_path);
    while (result.intervals.size() < static_cast<std::size_t>(config.acquisitions)) {
      const auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now());
      if (left <= 0ms || stop_requested.load()) {
        result.hit_time_bound = true;
        break;
      }
      const auto asked = monotonic_ns();
      if (!lock.try_acquire_for(std::min(acquire_timeout, left))) {
        if (Clock::now() < deadline) {
          ++result.timeouts;
          // Expected with a short timeout; a stall worth tracing otherwise.
          if (acquire_timeout == kDefaultAcquireTimeout) report_timeout(client, config, asked);
        }
        continue;
      }
      HolderInterval interval{pid, thread,         monotonic_ns(),
                              0,   token_of(lock), kind_of(lock, config)};
      try {
        if (reading(lock))
          (void)client.with_retry([&](zkr::Keeper& k) { return k.get(config.counter_path); });
        else increment(client, config.counter_path);
      } catch (const std::exception& e) {
        result.errors.push_back(std::string("increment: ") + e.what());
      }
      if (lost(lock)) ++result.lost;
      interval.exit_ns = monotonic_ns();
      lock.release();
      result.intervals.push_back(interval);
      if (!result.errors.empty()) break;
    }
  } catch (const std::exception& e) {
    result.errors.push_back(std::string("lock: ") + e.what());
  }
}

// Lock nodes of our session still in the lock directory once every thread
// has released: each would block the queue until the session ends.
std::vector<std::string> leaked_nodes(zkr::Client& client, const std::string& dir) {
  auto keeper = client.keeper_when_connected();
  const auto session = keeper->session_id();
  std::vector<std::string> ours;
  const bool none_left = zkr::test::wait_children(
      *keeper, dir,
      [&](const std::vector<std::string>& names) {
        ours.clear();
        for (const auto& name : names) {
          const auto stat = keeper->exists(zkr::join_path(dir, name));
          if (stat && stat->ephemeral_owner == session) ours.push_back(name);
        }
        return ours.empty();
      },
      kLeakWait);
  return none_left ? std::vector<std::string>{} : ours;
}

int run(const Config& config) {
  zkr::ClientOptions options;
  options.connect_string = config.connect;
  // Patient enough to ride out a leader election on a loaded machine.
  options.retry_policy = std::make_shared<zkr::BoundedExponentialBackoffRetry>(100ms, 1s, 30s);
  zkr::Client client(options);
  if (!client.block_until_connected(kConnectTimeout)) {
    std::cerr << "lock_worker: no connection to " << config.connect << " within "
              << kConnectTimeout.count() << " ms\n";
    return 1;
  }

  const auto start = Clock::now();
  const auto deadline = start + std::chrono::seconds(config.seconds);
  std::vector<ThreadResult> results(static_cast<std::size_t>(config.threads));
  {
    std::vector<std::jthread> threads;
    for (std::size_t i = 0; i < results.size(); ++i) {
      const auto timeout = std::cmp_less(i, config.patient_threads) ? kDefaultAcquireTimeout
                                                                    : config.acquire_timeout;
      threads.emplace_back([&, timeout, &result = results[i]] {
        if (config.kind == "mutex")
          run_thread<zkr::InterProcessMutex>(client, config, timeout, deadline, result);
        else if (config.kind == "semaphore")
          run_thread<zkr::NonReentrantMutex>(client, config, timeout, deadline, result);
        else if (config.kind == "readwrite")
          run_thread<ReadWriteTurns>(client, config, timeout, deadline, result);
        else run_thread<NoLock>(client, config, timeout, deadline, result);
      });
    }
  }
  const auto elapsed = std::chrono::duration_cast<milliseconds>(Clock::now() - start);

  std::vector<std::string> errors;
  std::vector<HolderInterval> intervals;
  int timeouts = 0;
  int lost = 0;
  bool hit_time_bound = false;
  for (const auto& result : results) {
    intervals.insert(intervals.end(), result.intervals.begin(), result.intervals.end());
    errors.insert(errors.end(), result.errors.begin(), result.errors.end());
    timeouts += result.timeouts;
    lost += result.lost;
    hit_time_bound = hit_time_bound || result.hit_time_bound;
  }
  if (lost > 0 && !config.faults)
    errors.push_back(std::to_string(lost) + " holds were lost while held");
  if (config.kind != "none") {
    try {
      const auto leaked =
          client.with_retry([&](zkr::Keeper&) { return leaked_nodes(client, config.lock_path); });
      for (const auto& name : leaked)
        errors.push_back("lock node " + name + " of our session left after every release");
    } catch (const std::exception& e) {
      errors.push_back(std::string("looking for leaked lock nodes: ") + e.what());
    }
  }

  std::ofstream out(config.output);
  for (const auto& interval : intervals) out << zkr::exclusion::format_interval(interval) << '\n';
  out.close();
  if (!out) errors.push_back("cannot write " + config.output);

  std::ostringstream summary;
  summary << "lock_worker pid " << ::getpid() << ": " << config.kind << ", " << intervals.size()
          << " acquisitions in " << elapsed.count() << " ms, " << timeouts << " timeouts, " << lost
          << " holds lost" << (hit_time_bound ? ", stopped by the time bound or SIGTERM" : "")
          << ", " << errors.size() << " errors\n";
  std::cout << summary.str() << std::flush;
  if (!config.reports.empty()) std::ofstream(config.reports, std::ios::app) << summary.str();
  for (const auto& error : errors)
    std::cerr << "lock_worker pid " << ::getpid() << ": " << error << '\n';
  return errors.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Config config;
  try {
    config = parse_args(argc, argv);
  } catch (const std::invalid_argument& e) {
    std::cerr
        << "lock_worker: " << e.what()
        << "\nusage: zkr-test-lock_worker CONNECT LOCK_PATH mutex|semaphore|readwrite|none THREADS "
           "ACQUISITIONS SECONDS COUNTER_PATH OUTPUT [--acquire-timeout-ms=N "
           "[--patient-threads=P]] "
           "[--faults] [--reports=FILE]\n";
    return 64;
  }
  // SA_RESTART: a thread that takes the signal in a system call goes on.
  struct sigaction action {};
  action.sa_handler = on_sigterm;
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGTERM, &action, nullptr);
  try {
    return run(config);
  } catch (const std::exception& e) {
    std::cerr << "lock_worker: " << e.what() << '\n';
    return 1;
  }
}
