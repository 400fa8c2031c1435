// The train yard's orchestrator: lays out a run, starts the dispatcher
// candidates and the workers, shows progress, injects chaos, checks the
// invariants, prints the summary and removes everything it created.
#include "orchestrator.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "check.hpp"
#include "dispatch.hpp"
#include "dispatch_pool.hpp"
#include "process.hpp"
#include "zkr/client.hpp"

namespace trainyard {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr auto kProgressEvery = 1s;
// The dispatcher candidates end once the stream is all published, which it
// is before the last worker ends: this is only for a candidate that hangs.
constexpr auto kDispatchersEnd = 30s;

// Pipelined blocking requests: all sent, then all awaited.
template <class T>
std::vector<zkr::Result<T>> await_all(std::vector<std::future<zkr::Result<T>>>& replies) {
  std::vector<zkr::Result<T>> results;
  for (auto& r : replies) {
    auto result = zkr::await_reply(std::move(r), kRequestTimeout);
    if (result.error() == zkr::Errc::operation_timeout)
      throw zkr::KeeperError(zkr::Errc::operation_timeout, "", "pipelined request");
    results.push_back(std::move(result));
  }
  return results;
}

std::int64_t percentile(std::vector<std::int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto i = static_cast<std::size_t>(q * static_cast<double>(sorted.size() - 1));
  return sorted[i];
}

class Orchestrator {
 public:
  explicit Orchestrator(Options options) : options_(std::move(options)) {
    options_.run = "run-" + std::to_string(getpid()) + "-" +
                   std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count());
  }

  // From the signal thread: stop the workers, clean up, exit 128 + signal.
  void interrupt(int signal) {
    std::lock_guard lock(mutex_);
    interrupted_ = signal;
    changed_.notify_all();
  }

  int run() {
    zkr::ClientOptions co;
    co.connect_string = options_.connect;
    co.session_timeout = 10s;
    zkr::Client client(co);
    if (!client.block_until_connected(15s)) {
      std::fprintf(stderr, "trainyard: cannot connect to %s\n", options_.connect.c_str());
      return 3;
    }
    client_ = &client;
    stream_ = generate(options_.stream);
    int rc = 3;
    try {
      lay_out();
      rc = run_workers();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "trainyard: run failed: %s\n", e.what());
    }
    try {
      remove_run();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "trainyard: could not remove %s: %s\n", run_root(options_).c_str(),
                   e.what());
    }
    return rc;
  }

 private:
  // Creates the run's records, all pipelined.
  void lay_out() {
    auto keeper = client_->keeper_when_connected();
    // The parent is a container: the server removes it once the last run is gone.
    keeper->create_parents(run_root(options_), zkr::CreateMode::container);
    std::vector<std::future<zkr::Result<zkr::Created>>> replies;
    auto create = [&](std::string path, std::string data) {
      replies.push_back(
          keeper->async_create(std::move(path), std::move(data), zkr::CreateMode::persistent));
    };
    const auto root = run_root(options_);
    create(root, "");
    create(root + "/trains", "");
    create(root + "/locations", "");
    create(root + "/workers", "");
    create(cursor_path(options_), encode(Cursor{}));
    create(batches_path(options_), "");
    create(dispatchers_path(options_), "");
    for (int t = 0; t < options_.stream.trains; ++t)
      create(train_path(options_, t), encode(TrainRecord{}));
    for (int l = 0; l < options_.stream.locations; ++l)
      create(location_path(options_, l), encode(LocationRecord{}));
    for (int w = 0; w < options_.workers; ++w)
      create(worker_path(options_, w), encode(WorkerStats{}));
    for (auto& r : await_all(replies)) (void)r.value();
  }

  // Removes the run's znodes: leaves first, pipelined.
  void remove_run() {
    auto keeper = client_->keeper_when_connected();
    const auto root = run_root(options_);
    std::vector<std::future<zkr::Result<zkr::Empty>>> replies;
    for (int t = 0; t < options_.stream.trains; ++t)
      replies.push_back(keeper->async_remove(train_path(options_, t)));
    for (int l = 0; l < options_.stream.locations; ++l)
      replies.push_back(keeper->async_remove(location_path(options_, l)));
    for (int w = 0; w < options_.workers; ++w)
      replies.push_back(keeper->async_remove(worker_path(options_, w)));
    // The batches and the candidates' reports: as many as there were.
    for (const auto& dir : {batches_path(options_), dispatchers_path(options_)}) {
      auto listed = keeper->try_children(dir, {}, kRequestTimeout);
      if (!listed.ok() && listed.error() == zkr::Errc::no_node) continue;
      for (const auto& name : listed.value().names)
        replies.push_back(keeper->async_remove(dir + "/" + name));
    }
    replies.push_back(keeper->async_remove(cursor_path(options_)));
    for (const char* dir : {"/trains", "/locations", "/workers", "/batches", "/dispatchers", ""})
      replies.push_back(keeper->async_remove(root + dir));
    for (auto& r : await_all(replies))
      if (!r.ok() && r.error() != zkr::Errc::no_node) (void)r.value();
  }

  int run_workers() {
    std::fprintf(
        stderr, "trainyard: %d workers, %d trains, %d locations, %d messages, seed %llu, %s%s\n",
        options_.workers, options_.stream.trains, options_.stream.locations,
        static_cast<int>(stream_.size()), static_cast<unsigned long long>(options_.stream.seed),
        options_.locks ? "with locks" : "WITHOUT locks", options_.chaos ? ", chaos" : "");
    const auto started = Clock::now();
    pool_ = std::make_unique<DispatcherPool>(
        options_, *client_, static_cast<int>(stream_.size()),
        [this](int slot) { return child_args("--dispatcher", slot); });
    pool_->start();
    std::vector<pid_t> pids;
    std::vector<std::jthread> reapers;
    for (int w = 0; w < options_.workers; ++w) {
      try {
        pids.push_back(spawn(child_args("--worker", w)));
      } catch (const std::exception&) {
        for (pid_t pid : pids) kill(pid, SIGKILL);  // so that the reapers return
        pool_->kill_all();
        throw;
      }
      reapers.emplace_back([this, w, pid = pids.back()] {
        const int code = wait_exit(pid);
        std::lock_guard lock(mutex_);
        exit_codes_[w] = code;
        ++exited_;
        changed_.notify_all();
      });
    }
    std::jthread chaos, dispatcher_chaos;
    if (options_.chaos) {
      chaos = std::jthread([this] { inject_chaos(); });
      dispatcher_chaos = std::jthread([this] { kill_dispatchers(); });
    }

    // Progress, once a second, until every worker has exited.
    const auto deadline = started + options_.timeout;
    bool timed_out = false;
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        changed_.wait_for(lock, kProgressEvery,
                          [&] { return exited_ == options_.workers || interrupted_ != 0; });
        if (exited_ == options_.workers) break;
      }
      show_progress(started);
      if (Clock::now() >= deadline || interrupted()) {
        timed_out = true;
        if (interrupted()) std::fprintf(stderr, "trainyard: interrupted, stopping the workers\n");
        else
          std::fprintf(stderr, "trainyard: timed out after %lld s, stopping the workers\n",
                       static_cast<long long>(options_.timeout.count()));
        for (pid_t pid : pids) kill(pid, SIGKILL);
        pool_->kill_all();
        std::unique_lock lock(mutex_);
        changed_.wait_for(lock, kRequestTimeout, [&] { return exited_ == options_.workers; });
        break;
      }
    }
    if (!pool_->wait_exited(timed_out ? kRequestTimeout : kDispatchersEnd)) {
      std::fprintf(stderr, "trainyard: a dispatcher candidate did not end, stopping it\n");
      pool_->kill_all();
      pool_->wait_exited(kRequestTimeout);
    }
    const auto elapsed = Clock::now() - started;
    {
      std::lock_guard lock(mutex_);
      finished_ = true;
      changed_.notify_all();
    }
    if (chaos.joinable()) chaos.join();  // restarts the server if it killed one
    if (dispatcher_chaos.joinable()) dispatcher_chaos.join();
    for (auto& r : reapers) r.join();
    if (interrupted()) return 128 + interrupted();
    return report(elapsed, timed_out);
  }

  int interrupted() {
    std::lock_guard lock(mutex_);
    return interrupted_;
  }

  // The same binary, told which worker or dispatcher candidate (`role`) it
  // is and everything it needs to generate the same stream.
  std::vector<std::string> child_args(const char* role, int n) const {
    std::vector<std::string> args{"/proc/self/exe"};
    auto add = [&](const char* flag, std::string value) {
      args.push_back(flag);
      args.push_back(std::move(value));
    };
    add(role, std::to_string(n));
    add("--run", options_.run);
    add("--connect", options_.connect);
    add("--trains", std::to_string(options_.stream.trains));
    add("--locations", std::to_string(options_.stream.locations));
    add("--messages", std::to_string(options_.stream.messages));
    add("--workers", std::to_string(options_.workers));
    add("--seed", std::to_string(options_.stream.seed));
    if (!options_.locks) args.push_back("--no-locks");
    if (options_.chaos) args.push_back("--chaos");
    return args;
  }

  std::vector<WorkerStats> read_stats() {
    auto keeper = client_->keeper_when_connected();
    std::vector<std::future<zkr::Result<zkr::NodeData>>> replies;
    for (int w = 0; w < options_.workers; ++w)
      replies.push_back(keeper->async_get(worker_path(options_, w)));
    std::vector<WorkerStats> stats;
    for (auto& r : await_all(replies))
      stats.push_back(decode_stats(r.value().data).value_or(WorkerStats{}));
    return stats;
  }

  void show_progress(Clock::time_point started) {
    std::int64_t applied = 0, conflicts = 0, refused = 0;
    try {
      for (const auto& s : read_stats()) {
        applied += s.applied;
        conflicts += s.conflicts;
        refused += s.refused;
      }
    } catch (const std::exception& e) {  // the ensemble may be in chaos: say so, go on
      std::fprintf(stderr, "trainyard: progress unavailable: %s\n", e.what());
      return;
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    std::fprintf(stderr,
                 "trainyard: %5.1f s  %lld/%zu messages  %.0f/s  conflicts %lld  "
                 "writes refused (lock lost) %lld\n",
                 seconds, static_cast<long long>(applied), stream_.size(),
                 static_cast<double>(applied) / std::max(seconds, 0.001),
                 static_cast<long long>(conflicts), static_cast<long long>(refused));
    std::lock_guard lock(mutex_);
    applied_ = applied;
    changed_.notify_all();
  }

  // Kills the leader a quarter of the way through (every client then sees
  // its link drop, as followers close their connections during the election)
  // and restarts it at half way (or after 10 s); always restarts it before the
  // run ends.
  void inject_chaos() {
    const std::string script = std::getenv("ZKR_ENSEMBLE_SCRIPT");
    const std::int64_t total = static_cast<std::int64_t>(stream_.size());
    {
      std::unique_lock lock(mutex_);
      changed_.wait_for(lock, options_.timeout, [&] { return finished_ || applied_ >= total / 4; });
      if (finished_ || applied_ < total / 4) return;
    }
    const std::string leader = ensemble_leader(script);
    if (leader.empty()) {
      std::fprintf(stderr, "trainyard: chaos: cannot find the leader\n");
      return;
    }
    std::fprintf(stderr, "trainyard: chaos: killing ZooKeeper server %s, the leader\n",
                 leader.c_str());
    const int killed = wait_exit(spawn({"bash", script, "-q", "kill", leader}));
    {
      std::unique_lock lock(mutex_);
      changed_.wait_for(lock, 10s, [&] { return finished_ || applied_ >= total / 2; });
    }
    std::fprintf(stderr, "trainyard: chaos: restarting ZooKeeper server %s\n", leader.c_str());
    const int restarted = wait_exit(spawn({"bash", script, "-q", "restart", leader}));
    std::lock_guard lock(mutex_);
    chaos_ok_ = killed == 0 && restarted == 0;
  }

  // SIGKILLs the leading dispatcher at a fifth of the stream published (before
  // the server's kill at a quarter applied) and again at three fifths (after
  // its restart at half), each after the failover before it ended.
  void kill_dispatchers() {
    const auto total = static_cast<int>(stream_.size());
    auto finished = [this] {
      std::lock_guard lock(mutex_);
      return finished_;
    };
    try {
      for (int at : {total / 5, total * 3 / 5})
        if (!pool_->kill_leader(at, finished)) break;
    } catch (const std::exception& e) {  // reported: fewer than two failovers
      std::fprintf(stderr, "trainyard: chaos: killing the dispatcher failed: %s\n", e.what());
    }
    // This thread started the replacement candidates, and they die with it
    // (PR_SET_PDEATHSIG follows the thread that forked): it ends only after
    // they all have.
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return finished_; });
  }

  int report(Clock::duration elapsed, bool timed_out) {
    const auto stats = read_stats();
    WorkerStats sum;
    std::vector<std::int64_t> waits;
    for (const auto& s : stats) {
      sum.applied += s.applied;
      sum.conflicts += s.conflicts;
      sum.refused += s.refused;
      sum.abandoned += s.abandoned;
      sum.timeouts += s.timeouts;
      sum.errors += s.errors;
      sum.expired += s.expired;
      waits.insert(waits.end(), s.lock_wait_us.begin(), s.lock_wait_us.end());
    }
    std::sort(waits.begin(), waits.end());
    const double seconds = std::chrono::duration<double>(elapsed).count();

    std::printf(
        "\ntrain yard: %d workers, %d trains, %d locations, %zu messages, seed %llu, %s%s\n",
        options_.workers, options_.stream.trains, options_.stream.locations, stream_.size(),
        static_cast<unsigned long long>(options_.stream.seed),
        options_.locks ? "with locks" : "WITHOUT locks (--no-locks)",
        options_.chaos ? ", with chaos" : "");
    std::printf("  %-34s %.1f s\n", "elapsed", seconds);
    std::printf("  %-34s %.0f messages/s\n", "throughput",
                static_cast<double>(sum.applied) / seconds);
    if (options_.locks)
      std::printf("  %-34s p50 %.1f ms, p99 %.1f ms (%zu acquisitions)\n", "lock waits",
                  static_cast<double>(percentile(waits, 0.50)) / 1000.0,
                  static_cast<double>(percentile(waits, 0.99)) / 1000.0, waits.size());
    std::printf("  %-34s %lld\n", "lock timeouts (retried)", static_cast<long long>(sum.timeouts));
    std::printf("  %-34s %lld\n", "writes refused, lock lost (retried)",
                static_cast<long long>(sum.refused));
    std::printf("  %-34s %lld\n", "gave up before writing, lock lost",
                static_cast<long long>(sum.abandoned));
    std::printf("  %-34s %lld\n", "connection errors (retried)",
                static_cast<long long>(sum.errors));
    std::printf("  %-34s %lld\n", "sessions expired on purpose",
                static_cast<long long>(sum.expired));
    std::printf("  %-34s %s\n", "concurrent-modification conflicts",
                options_.locks ? std::to_string(sum.conflicts).c_str()
                               : "not detectable: writes carry no version");

    auto dispatched = pool_->report(options_.chaos);
    std::vector<Invariant> invariants;
    Invariant workers{"every worker finished its share"};
    for (int w = 0; w < options_.workers; ++w)
      if (exit_codes_[w] != 0 || !stats[w].done) {
        workers.holds = false;
        workers.detail +=
            "worker " + std::to_string(w) + " exited " + std::to_string(exit_codes_[w]) + "; ";
      }
    if (timed_out) workers.detail += "timed out";
    invariants.push_back(workers);
    for (auto& i : check(options_.stream, stream_, read_trains(), read_locations()))
      invariants.push_back(std::move(i));
    if (options_.locks)
      invariants.emplace_back("no concurrent-modification conflicts", sum.conflicts == 0,
                              std::to_string(sum.conflicts) + " conflicts");
    for (auto& i : dispatched) invariants.push_back(std::move(i));
    if (options_.chaos)
      invariants.emplace_back(
          "the chaos happened: leader killed and restarted, a session expired, "
          "a write after a lost lock node refused",
          chaos_ok_ && sum.expired > 0 && sum.refused > 0);

    bool all = true;
    std::printf("invariants\n");
    for (const auto& i : invariants) {
      all = all && i.holds;
      std::printf("  [%s] %s%s%s\n", i.holds ? " ok " : "FAIL", i.name.c_str(), i.holds ? "" : ": ",
                  i.holds ? "" : i.detail.c_str());
    }
    if (all) {
      std::printf("result: every invariant holds\n");
      return 0;
    }
    std::printf("result: INVARIANTS BROKEN%s\n",
                options_.locks ? ""
                               : " (as expected with --no-locks: concurrent read-modify-writes "
                                 "of a location lose each other's updates)");
    return workers.holds ? 1 : 3;
  }

  std::vector<TrainRecord> read_trains() {
    auto keeper = client_->keeper_when_connected();
    std::vector<std::future<zkr::Result<zkr::NodeData>>> replies;
    for (int t = 0; t < options_.stream.trains; ++t)
      replies.push_back(keeper->async_get(train_path(options_, t)));
    std::vector<TrainRecord> trains;
    for (auto& r : await_all(replies))
      trains.push_back(decode_train(r.value().data).value_or(TrainRecord{-1, -1}));
    return trains;
  }

  std::vector<LocationRecord> read_locations() {
    auto keeper = client_->keeper_when_connected();
    std::vector<std::future<zkr::Result<zkr::NodeData>>> replies;
    for (int l = 0; l < options_.stream.locations; ++l)
      replies.push_back(keeper->async_get(location_path(options_, l)));
    std::vector<LocationRecord> locations;
    for (auto& r : await_all(replies))
      locations.push_back(decode_location(r.value().data).value_or(LocationRecord{-1, -1, -1, -1}));
    return locations;
  }

  Options options_;
  zkr::Client* client_ = nullptr;
  std::vector<Message> stream_;
  std::unique_ptr<DispatcherPool> pool_;

  std::mutex mutex_;
  std::condition_variable changed_;
  int exited_ = 0;            // guarded by mutex_
  std::int64_t applied_ = 0;  // guarded by mutex_
  bool finished_ = false;     // guarded by mutex_
  bool chaos_ok_ = false;     // guarded by mutex_
  int interrupted_ = 0;       // the signal, guarded by mutex_
  std::vector<int> exit_codes_ = std::vector<int>(kMaxWorkers, -1);  // guarded by mutex_
};

}  // namespace

int run_orchestrator(const Options& options) {
  if (options.chaos && (!std::getenv("ZKR_ENSEMBLE_SCRIPT") || !std::getenv("ZKR_ENSEMBLE_DIR"))) {
    std::fprintf(stderr, "trainyard: --chaos needs ZKR_ENSEMBLE_SCRIPT and ZKR_ENSEMBLE_DIR\n");
    return 2;
  }
  // SIGINT, SIGTERM and SIGHUP are taken by one thread, so that an
  // interrupted run still stops its workers, restarts a killed server and
  // removes its znodes. Blocked before any other thread exists, so that every
  // thread (the ZooKeeper client's included) inherits the mask. SIGUSR1 only
  // wakes that thread up at the end.
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGUSR1}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  try {
    Orchestrator orchestrator(options);
    std::thread taker([&] {
      int signal = 0;
      if (sigwait(&signals, &signal) == 0 && signal != SIGUSR1) orchestrator.interrupt(signal);
    });
    int rc = 3;
    try {
      rc = orchestrator.run();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "trainyard: %s\n", e.what());
    }
    pthread_kill(taker.native_handle(), SIGUSR1);
    taker.join();
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trainyard: %s\n", e.what());
    return 3;
  }
}

}  // namespace trainyard
