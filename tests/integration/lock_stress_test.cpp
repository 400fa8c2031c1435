// Mutual exclusion under load, across processes, on the live ensemble.
//
// Several worker processes (tests/tools/lock_worker.cpp), each one session
// shared by a few threads, take the same lock thousands of times and, while
// holding it, increment a counter znode by an unprotected read-modify-write.
// Each records when it held the lock and with what fencing token; the checker
// (testkit/checker/exclusion_checker.hpp), which knows nothing of the lock code,
// then looks for overlapping holds, tokens that do not grow in grant order, and
// lost increments. The same run with no lock at all must fail the checker, or
// the checker proves nothing.
//
// No sleeps: workers are waited for with a deadline (and killed if late), and
// faults are injected when the counter, watched, reaches given values.
// A failed test keeps the workers' interval files and says where; its verdict
// quotes what each failed worker said, and at the end of every run the
// servers themselves must agree (each read after a sync), so that an ensemble
// that lost transactions is named as such rather than taken for a lock bug.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <time.h>
#include <unistd.h>

#include "exclusion_checker.hpp"
#include "support/child_process.hpp"
#include "support/ensemble.hpp"
#include "support/waits.hpp"
#include "zkr/client.hpp"
#include "zkr/lock.hpp"
#include "zkr/path.hpp"

#ifndef ZKR_LOCK_WORKER
#error "ZKR_LOCK_WORKER must name the zkr-test-lock_worker executable (tests/CMakeLists.txt)"
#endif

namespace zkr {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using exclusion::HolderInterval;
using std::chrono::milliseconds;

using test::kWait;
// Beyond a worker's own time bound: its connect (30 s at worst), its check for
// leaked nodes (10 s at worst) and its exit.
constexpr auto kWorkerOverrun = 60s;

struct Load {
  int workers = 6;
  int threads = 3;             // per worker, sharing the worker's session
  int acquisitions = 0;        // per thread
  int seconds = 0;             // time bound of each worker
  int acquire_timeout_ms = 0;  // 0: the worker's default, which a fair lock never reaches
  int patient_threads = 0;     // of each worker, keep the default despite acquire_timeout_ms
  bool faults = false;         // servers will be killed: lost holds are expected
};

struct Outcome {
  std::vector<HolderInterval> intervals;
  std::int64_t counter = 0;
  milliseconds elapsed{0};
  int timeouts = 0;  // acquires that gave up, as the workers' summary lines count them
  std::vector<std::string> worker_failures;  // one line per worker that did not exit 0
};

std::string hex(std::int64_t value) {
  std::ostringstream text;
  text << std::hex << value;
  return text.str();
}

// Deletes path and everything under it; a missing node is fine, any other
// error throws (test::remove_tree, for cleanups, would leave it).
void remove_tree_or_throw(Keeper& keeper, const std::string& path) {
  auto listed = keeper.try_children(path);
  if (listed.error() == Errc::no_node) return;
  for (const auto& name : listed.value().names) remove_tree_or_throw(keeper, join_path(path, name));
  const auto removed = keeper.try_remove(path);
  if (!removed.ok() && removed.error() != Errc::no_node) throw KeeperError(removed.error(), path);
}

class LockStressTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ZKR_REQUIRE_ENSEMBLE();
    ClientOptions options;
    options.connect_string = test::connect_string();
    // Rides out the server restarts of the fault tests.
    options.retry_policy = std::make_shared<BoundedExponentialBackoffRetry>(100ms, 1s, 60s);
    client_ = std::make_unique<Client>(options);
    ASSERT_TRUE(client_->block_until_connected(kWait));
    root_ = test::unique_path("lock-stress");
    lock_path_ = root_ + "/lock";
    counter_path_ = root_ + "/counter";
    // Retried like everything else here: a loaded ensemble may be slow to answer.
    // A retried create of our own fresh path may find it made by the first try.
    client_->with_retry([&](Keeper& keeper) {
      for (const auto& [path, data] : {std::pair{root_, ""}, {counter_path_, "0"}}) {
        auto created = keeper.try_create(path, data);
        if (!created.ok() && created.error() != Errc::node_exists) (void)std::move(created).value();
      }
      return 0;
    });

    std::string dir_template = std::filesystem::temp_directory_path() / "zkr-lock-stress-XXXXXX";
    ASSERT_NE(::mkdtemp(dir_template.data()), nullptr) << "mkdtemp " << dir_template;
    files_dir_ = dir_template;
  }

  void TearDown() override {
    if (!root_.empty()) client_->with_retry([&](Keeper& k) { remove_tree_or_throw(k, root_); });
    if (files_dir_.empty()) return;
    if (HasFailure()) {
      print_worker_files(".timeouts");
      print_worker_files(".stderr");
      std::cout << "[ stress   ] interval files kept in " << files_dir_.string() << "\n";
    } else {
      std::filesystem::remove_all(files_dir_);
    }
  }

  // The workers' timeout reports (who queued, what each server said) and
  // what they wrote on stderr, after the verdict rather than in the middle of
  // it: the first few lines of each.
  void print_worker_files(const std::string& extension) const {
    constexpr int kLinesPerWorker = 16;
    for (const auto& entry : std::filesystem::directory_iterator(files_dir_)) {
      if (entry.path().extension() != extension) continue;
      std::ifstream in(entry.path());
      std::string line;
      int lines = 0, left = 0;
      while (std::getline(in, line)) {
        if (lines < kLinesPerWorker) std::cout << "[ stress   ] " << line << "\n";
        else ++left;
        ++lines;
      }
      if (left > 0)
        std::cout << "[ stress   ] (" << left << " more lines in " << entry.path().string()
                  << ")\n";
    }
  }

  // The acquires a worker gave up, from the summary line that ends its
  // reports file (0 if it wrote none: it failed, and says so elsewhere).
  int timeouts_of(int worker) const {
    static const std::regex summary(R"(^lock_worker pid [0-9]+: .*, ([0-9]+) timeouts, )");
    std::ifstream in(files_dir_ / ("worker-" + std::to_string(worker) + ".timeouts"));
    std::string line;
    std::smatch match;
    while (std::getline(in, line))
      if (std::regex_search(line, match, summary)) return std::stoi(match[1].str());
    return 0;
  }

  std::string stderr_file(int worker) const {
    return (files_dir_ / ("worker-" + std::to_string(worker) + ".stderr")).string();
  }

  // The first lines a failed worker wrote on stderr (its errors), on one line:
  // the verdict quotes them, so that a summary that shows only the failure
  // says why.
  static std::string first_lines(const std::string& path) {
    constexpr int kLines = 3;
    std::ifstream in(path);
    std::string text, line;
    for (int n = 0; n < kLines && std::getline(in, line); ++n) text += " | " + line;
    return text;
  }

  // Runs the workers to the end (or kills them at their deadline) and
  // gathers what they recorded. With `meanwhile`, calls it while they run,
  // then tells them to stop (SIGTERM: each finishes its current acquire).
  Outcome run(const std::string& kind, const Load& load,
              const std::function<void()>& meanwhile = {}) {
    Outcome outcome;
    std::vector<std::unique_ptr<test::ChildProcess>> workers;
    std::vector<std::string> outputs;
    const auto start = Clock::now();
    for (int i = 0; i < load.workers; ++i) {
      outputs.push_back(files_dir_ / ("worker-" + std::to_string(i) + ".intervals"));
      std::vector<std::string> argv{ZKR_LOCK_WORKER,
                                    test::connect_string(),
                                    lock_path_,
                                    kind,
                                    std::to_string(load.threads),
                                    std::to_string(load.acquisitions),
                                    std::to_string(load.seconds),
                                    counter_path_,
                                    outputs.back()};
      if (load.acquire_timeout_ms > 0)
        argv.push_back("--acquire-timeout-ms=" + std::to_string(load.acquire_timeout_ms));
      if (load.patient_threads > 0)
        argv.push_back("--patient-threads=" + std::to_string(load.patient_threads));
      if (load.faults) argv.push_back("--faults");
      argv.push_back("--reports=" +
                     (files_dir_ / ("worker-" + std::to_string(i) + ".timeouts")).string());
      workers.push_back(std::make_unique<test::ChildProcess>(argv, stderr_file(i)));
    }
    if (meanwhile) {
      meanwhile();
      for (auto& worker : workers) worker->kill(SIGTERM);
    }
    const auto deadline = start + std::chrono::seconds(load.seconds) + kWorkerOverrun;
    for (std::size_t i = 0; i < workers.size(); ++i) {
      const std::string name =
          "worker " + std::to_string(i) + " (pid " + std::to_string(workers[i]->pid()) + ")";
      const auto status = workers[i]->wait_until(deadline);
      if (!status) {
        workers[i]->kill();
        outcome.worker_failures.push_back(name + " overran its deadline and was killed");
      } else if (*status != 0) {
        outcome.worker_failures.push_back(name + ": " + test::describe_wait_status(*status) +
                                          first_lines(stderr_file(static_cast<int>(i))));
      }
    }
    workers.clear();  // reaps any that were killed
    outcome.elapsed = std::chrono::duration_cast<milliseconds>(Clock::now() - start);

    for (int i = 0; i < load.workers; ++i) outcome.timeouts += timeouts_of(i);
    for (const auto& output : outputs) {
      if (!std::filesystem::exists(output)) continue;  // its worker failed: reported above
      const auto intervals = exclusion::read_interval_file(output);
      outcome.intervals.insert(outcome.intervals.end(), intervals.begin(), intervals.end());
    }
    outcome.counter = client_->with_retry([&](Keeper& k) {
      k.sync(root_);  // our server may lag behind the workers'
      return std::stoll(k.get(counter_path_).data);
    });
    return outcome;
  }

  // True once the counter is at least `value`; watched, and read again at
  // least every second in case a watch is lost with a server.
  bool counter_reaches(std::int64_t value, milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      auto changed = std::make_shared<test::Latch>();
      const auto now = client_->with_retry([&](Keeper& k) {
        return std::stoll(
            k.get(counter_path_, [changed](const WatchEvent&) { changed->open(); }).data);
      });
      if (now >= value) return true;
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      if (left <= 0ms) return false;
      (void)changed->wait(std::min<milliseconds>(left, 1s));
    }
  }

  // Lock nodes still in the lock directory (which may be gone: a container).
  std::vector<std::string> lock_nodes_left() {
    return client_->with_retry([&](Keeper& k) {
      k.sync(root_);
      auto listed = k.try_children(lock_path_);
      if (listed.error() == Errc::no_node) return std::vector<std::string>{};
      return listed.value().names;
    });
  }

  // Checks everything a run of a real lock must satisfy, and prints the totals.
  void expect_exclusion(const std::string& label, const Outcome& outcome, int workers) {
    const auto acquisitions = static_cast<std::int64_t>(outcome.intervals.size());
    // Read holds of a read/write lock make no increment.
    const auto increments = static_cast<std::int64_t>(
        std::count_if(outcome.intervals.begin(), outcome.intervals.end(),
                      [](const auto& i) { return i.kind != exclusion::kSharedKind; }));
    const double seconds = static_cast<double>(outcome.elapsed.count()) / 1000.0;
    std::cout << "[ stress   ] " << label << ": " << acquisitions << " acquisitions in " << seconds
              << " s, " << static_cast<double>(acquisitions) / seconds << " acquisitions/s\n";
    const auto report = exclusion::check_exclusion(outcome.intervals, outcome.counter, increments);
    std::cout << exclusion::format_report(report);
    // Readers that never shared would prove nothing about sharing.
    if (report.shared_intervals > 0) {
      EXPECT_GE(report.most_shared_at_once, 2u);
    }

    EXPECT_TRUE(outcome.worker_failures.empty()) << testing::PrintToString(outcome.worker_failures);
    expect_contention(outcome.intervals, workers);
    EXPECT_TRUE(report.ok());
    EXPECT_EQ(report.overlaps, 0u);
    EXPECT_EQ(report.token_inversions, 0u);
    EXPECT_EQ(outcome.counter, increments);
    // Every worker has exited, closing its session, so its nodes are gone at
    // once. But when an outage outlasted a session timeout, a worker's Client
    // gave that session up and closed it while no server answered; the
    // ensemble drops such a session (and its nodes) only when it expires it,
    // up to a session timeout (15 s, the workers' default) after it is back.
    const bool drained = test::wait_children(
        *client_->keeper(), lock_path_, [](const auto& names) { return names.empty(); },
        kLeftoverWait);
    EXPECT_TRUE(drained) << "lock nodes left: " << testing::PrintToString(lock_nodes_left());
    expect_servers_agree();
  }

  static constexpr milliseconds kLeftoverWait{40'000};

  // Every server must end up holding the same counter (value and the zxid of
  // its last change) and the same lock nodes, each read after a sync on a
  // session of its own. Servers that differ after a sync have diverged, which
  // no client can cause or work around (docs/testing.md, on ZooKeeper 3.8.0's
  // sync defects): the verdict then says so on one line, with what each
  // server holds, rather than leaving it to be inferred from lost updates.
  void expect_servers_agree() {
    std::vector<std::pair<std::string, std::string>> views;  // host, what it holds
    const auto hosts = test::connect_string();
    for (std::size_t begin = 0; begin < hosts.size();) {
      const auto comma = std::min(hosts.find(',', begin), hosts.size());
      const auto host = hosts.substr(begin, comma - begin);
      begin = comma + 1;
      try {
        const auto client = test::connected_client(host, 10s);
        const auto keeper = client->keeper_when_connected();
        keeper->sync(root_);
        const auto counter = keeper->get(counter_path_);
        auto listed = keeper->try_children(lock_path_);
        auto names = listed.ok() ? listed.value().names : std::vector<std::string>{};
        if (!listed.ok() && listed.error() != Errc::no_node)
          throw KeeperError(listed.error(), lock_path_);
        std::sort(names.begin(), names.end());
        std::string view =
            "counter " + counter.data + " (mzxid 0x" + hex(counter.stat.mzxid) + "), lock nodes [";
        for (const auto& name : names) view += (name == names.front() ? "" : " ") + name;
        views.emplace_back(host, view + "]");
      } catch (const std::exception& e) {
        // Unreachable is another test failure's business, not a divergence.
        std::cout << "[ stress   ] server " << host << " not read: " << e.what() << "\n";
      }
    }
    const bool agree = std::all_of(views.begin(), views.end(), [&](const auto& view) {
      return view.second == views[0].second;
    });
    std::string text;
    for (const auto& [host, view] : views) text += "; " + host + ": " + view;
    std::cout << "[ stress   ] after a sync, each server holds" << text << "\n";
    EXPECT_TRUE(agree) << "the servers diverged: after a sync they disagree" << text;
  }

  // A run in which the processes took turns without ever competing (one
  // finished before the next began) would pass every exclusion check and
  // prove nothing. Contending processes interleave: in grant order, the lock
  // passes from one process to another at most grants, and every process
  // gets it many times.
  static void expect_contention(std::vector<HolderInterval> intervals, int workers) {
    std::sort(intervals.begin(), intervals.end(),
              [](const auto& a, const auto& b) { return a.enter_ns < b.enter_ns; });
    std::size_t changes = 0;
    for (std::size_t i = 1; i < intervals.size(); ++i)
      if (intervals[i].pid != intervals[i - 1].pid) ++changes;
    std::set<std::int64_t> pids;
    for (const auto& interval : intervals) pids.insert(interval.pid);
    std::cout << "[ stress   ] " << changes << " hand-overs between " << pids.size()
              << " processes in " << intervals.size() << " grants\n";
    EXPECT_EQ(pids.size(), static_cast<std::size_t>(workers)) << "a worker never held the lock";
    EXPECT_GE(changes, intervals.size() / 4)
        << "the processes hardly interleaved: the run had too little contention to mean anything";
    // And a floor under it: five hand-overs a process. A time-bounded run
    // under ThreadSanitizer on a busy machine, with 30 ms acquire timeouts
    // that most semaphore attempts exceed there, grants only about ten a
    // process (73 grants, 59 hand-overs among six in one CI run).
    EXPECT_GE(changes, static_cast<std::size_t>(5 * workers));
  }

  std::unique_ptr<Client> client_;
  std::string root_;
  std::string lock_path_;
  std::string counter_path_;
  std::filesystem::path files_dir_;
};

class LockKindStressTest : public LockStressTest,
                           public ::testing::WithParamInterface<std::string> {};

TEST_P(LockKindStressTest, MultiProcessMutualExclusion) {
  // 6 x 3 x 200 = 3,600 acquisitions: 10 to 25 s on two shared cores against
  // a three-server ensemble. The time bound stops a slower machine short
  // rather than failing it.
  const Load load{.workers = 6, .threads = 3, .acquisitions = 200, .seconds = 45};
  expect_exclusion(GetParam(), run(GetParam(), load), load.workers);
}

// Waiters that give up all the time: each timed-out acquire leaves the queue
// (its node deleted now or in the background) while others walk past it.
// One thread of each worker waits its turn: it walks past the nodes the
// others leave, and it makes every worker a holder however many round trips
// an acquire takes (with every thread giving up after 30 ms, slow servers
// could keep a worker from ever holding, and the contention check would
// fail for want of speed, not of exclusion).
TEST_P(LockKindStressTest, MutualExclusionWhileWaitersTimeOut) {
  const Load load{.workers = 6,
                  .threads = 3,
                  .acquisitions = 60,
                  .seconds = 30,
                  .acquire_timeout_ms = 30,
                  .patient_threads = 1};
  const auto outcome = run(GetParam(), load);
  std::cout << "[ stress   ] " << outcome.timeouts << " acquires gave up\n";
  EXPECT_GT(outcome.timeouts, 0) << "no acquire gave up: the case never left the queue early";
  expect_exclusion(GetParam() + " with 30 ms acquire timeouts", outcome, load.workers);
}

// A follower, then the leader, killed and restarted while the workers run.
// Sessions usually survive (each outage is meant to be far shorter than the
// session timeout; on a starved machine an election can outlast it), so their
// lock nodes do too, and exclusion must hold even for holders that saw
// their link drop (their leases say lost, which the workers count).
TEST_P(LockKindStressTest, MutualExclusionThroughServerRestarts) {
  ZKR_REQUIRE_SERVER_FAULTS();
  // The workers run until the faults are over (then the test stops them);
  // their own bounds are only a backstop.
  const Load load{
      .workers = 6, .threads = 3, .acquisitions = 100'000, .seconds = 240, .faults = true};
  std::vector<int> down;  // restarted at the end whatever happens
  // Each fault waits for progress since the last one: the lock must stay
  // available with one server down, and come back after each restart.
  // Progress is the counter, which only exclusive holds increment: one hold
  // in three of a read/write worker. So its steps are a third as far apart,
  // and every kind makes about as many holds between two faults.
  const std::int64_t stride = GetParam() == "readwrite" ? 70 : 200;
  // Generous: under TSan on a loaded machine a step takes tens of seconds.
  constexpr auto kStepWait = 90s;
  const auto step = [&](std::int64_t counter, const std::string& verb, int server) {
    if (!counter_reaches(counter, kStepWait))
      throw std::runtime_error("the counter did not reach " + std::to_string(counter) + " within " +
                               std::to_string(kStepWait.count()) + " s");
    test::ensemble(verb + " " + std::to_string(server));
    if (verb == "kill") down.push_back(server);
    else std::erase(down, server);
  };
  const auto outcome = run(GetParam(), load, [&] {
    try {
      const auto status = test::ensemble("status");  // one line per server
      const int servers = static_cast<int>(std::count(status.begin(), status.end(), '\n')) + 1;
      const int leader = std::stoi(test::ensemble("leader"));
      const int follower = leader % servers + 1;
      step(1 * stride, "kill", follower);
      step(2 * stride, "restart", follower);
      step(3 * stride, "kill", leader);
      step(4 * stride, "restart", leader);
      if (!counter_reaches(5 * stride, kStepWait))
        ADD_FAILURE() << "no progress after the restarts";
    } catch (const std::exception& e) {
      ADD_FAILURE() << "injecting faults: " << e.what();
    }
    for (const int server : down) {
      try {
        test::ensemble("restart " + std::to_string(server));
      } catch (const std::exception& e) {
        ADD_FAILURE() << "restarting server " << server << ": " << e.what();
      }
    }
  });
  expect_exclusion(GetParam() + " through server restarts", outcome, load.workers);
}

INSTANTIATE_TEST_SUITE_P(LockKinds, LockKindStressTest,
                         ::testing::Values("mutex", "semaphore", "readwrite"),
                         [](const auto& param_info) { return param_info.param; });

TEST_F(LockStressTest, CheckerCatchesABrokenLock) {
  const Load load{.workers = 6, .threads = 3, .acquisitions = 30, .seconds = 30};
  const auto outcome = run("none", load);
  EXPECT_TRUE(outcome.worker_failures.empty()) << testing::PrintToString(outcome.worker_failures);
  const auto acquisitions = static_cast<std::int64_t>(outcome.intervals.size());
  const auto report = exclusion::check_exclusion(outcome.intervals, outcome.counter, acquisitions);
  std::cout << "[ stress   ] no lock: " << acquisitions << " acquisitions\n"
            << exclusion::format_report(report);
  // Caught for the right reasons: both the holds and the counter show it.
  // (Tokens are all 0 without a lock, so token order alone would fire
  // whatever happened.)
  EXPECT_GT(report.overlaps, 0u) << exclusion::format_report(report);
  EXPECT_GT(report.lost_updates, 0) << exclusion::format_report(report);
}

// The lock directory is removed and made again all the time: by the library
// (a release may remove it; others queue in it meanwhile) and, between rounds,
// by the test, as any client may; contenders then race to create it again.
// No acquire may hang or fail, no two holds may overlap, no increment of the
// counter (read, then set, under the lock) may be lost; and the race must
// have happened: the directory's czxid, read at every round, changed.
TEST_F(LockStressTest, ContendersRacingTheDirectoryRemoval) {
  constexpr int kContenders = 4;
  constexpr int kRounds = 40;
  const std::string dir = root_ + "/race";
  std::vector<std::unique_ptr<Client>> sessions;
  for (int i = 0; i < kContenders; ++i) {
    ClientOptions options;
    options.connect_string = test::connect_string();
    sessions.push_back(std::make_unique<Client>(options));
    ASSERT_TRUE(sessions.back()->block_until_connected(kWait));
  }
  const auto monotonic_ns = [] {
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    return std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
  };
  // Runs alone, while every contender waits at the barrier: removes the
  // directory if the releases left it, once its lock nodes are gone.
  int removals = 0;
  std::string round_error;
  const auto between_rounds = [&]() noexcept {
    try {
      // A release returns once its delete is sent, and this session's server
      // may lag: not_empty means a delete has not landed yet, so look again.
      auto keeper = client_->keeper();
      const auto give_up = std::chrono::steady_clock::now() + kWait;
      for (;;) {
        if (!test::wait_children(
                *keeper, dir, [](const auto& n) { return n.empty(); }, kWait))
          throw std::runtime_error("lock nodes left in " + dir + " after every release");
        const auto removed = keeper->try_remove(dir);
        if (removed.ok()) ++removals;
        if (removed.ok() || removed.error() == Errc::no_node) break;
        if (removed.error() != Errc::not_empty || std::chrono::steady_clock::now() >= give_up)
          throw KeeperError(removed.error(), dir);
        keeper->sync(dir);
      }
    } catch (const std::exception& e) {
      if (round_error.empty()) round_error = e.what();
    }
  };
  // The czxid of the directory each holder's node was in, read while it held.
  std::mutex czxids_mutex;
  std::set<std::int64_t> czxids;
  std::barrier rounds(kContenders, between_rounds);
  std::vector<std::vector<HolderInterval>> held(kContenders);
  std::atomic<int> timeouts{0};
  std::vector<std::jthread> threads;
  for (int i = 0; i < kContenders; ++i) {
    threads.emplace_back([&, i] {
      Client& session = *sessions[static_cast<std::size_t>(i)];
      // No grace: a release that ends this Client's use of the directory
      // removes it at once, while other sessions may be queueing in it.
      LockOptions no_grace;
      no_grace.directory_grace = std::chrono::milliseconds(0);
      NonReentrantMutex lock(session, dir, no_grace);
      for (int round = 0; round < kRounds; ++round) {
        if (lock.try_acquire_for(kWait)) {
          HolderInterval interval{::getpid(), i, monotonic_ns(), 0, lock.grant().fencing_token(),
                                  "semaphore"};
          try {
            session.with_retry([&](Keeper& k) {
              const auto value = std::stoll(k.get(counter_path_).data);
              return k.set(counter_path_, std::to_string(value + 1));
            });
            if (const auto stat = session.keeper()->exists(dir)) {
              std::lock_guard guard(czxids_mutex);
              czxids.insert(stat->czxid);
            } else {
              ADD_FAILURE() << dir << " absent while a holder's node is in it";
            }
          } catch (const std::exception& e) {
            ADD_FAILURE() << "increment: " << e.what();
          }
          interval.exit_ns = monotonic_ns();
          held[static_cast<std::size_t>(i)].push_back(interval);
          EXPECT_TRUE(lock.release());
        } else {
          ++timeouts;
        }
        rounds.arrive_and_wait();
      }
    });
  }
  threads.clear();  // joins
  EXPECT_EQ(round_error, "");
  EXPECT_EQ(timeouts.load(), 0) << "an acquire hung racing the directory's removal";

  std::vector<HolderInterval> intervals;
  for (const auto& h : held) intervals.insert(intervals.end(), h.begin(), h.end());
  const auto counter = client_->with_retry([&](Keeper& k) {
    k.sync(root_);
    return std::stoll(k.get(counter_path_).data);
  });
  const auto acquisitions = static_cast<std::int64_t>(intervals.size());
  const auto report = exclusion::check_exclusion(intervals, counter, acquisitions);
  std::cout << "[ stress   ] directory race: " << czxids.size() << " czxids of " << dir
            << " seen by holders, " << removals << " removed by the test\n"
            << exclusion::format_report(report);
  EXPECT_EQ(acquisitions, kContenders * kRounds);
  EXPECT_TRUE(report.ok()) << exclusion::format_report(report);
  // The race happened: holders held in more than one life of the directory,
  // made again after a removal; a run in which it never changed tested nothing.
  const std::size_t recreated = czxids.empty() ? 0 : czxids.size() - 1;
  EXPECT_GE(recreated, 1u) << "the directory's czxid never changed";
}

}  // namespace
}  // namespace zkr
