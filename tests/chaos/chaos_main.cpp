// zkr-chaos: the chaos run. Starts its own three-server ensemble on
// 127.0.0.1, puts a TCP proxy in front of each server, runs worker processes
// that take locks through the proxies, lets the nemesis inject faults for a
// while, stops everything, and checks what the workers recorded with the
// independent checker. See tests/chaos/README.md.
//
//   zkr-chaos [--seconds 75] [--seed S] [--workers 4] [--threads 2] [--keys 3]
//             [--session-timeout-ms 4000]
//             [--faults all|none|classic|adversarial|kind,kind...]
//             [--supervisors 2]
//             [--out DIR] [--keep] [--broken nolock|unguarded|escaped --expect-violations=RULE,...]
//   zkr-chaos --check RUN_DIR     judge a finished run's records again
//
// Exit: 0 no violation, no orphan, no problem; 1 otherwise; 2 bad usage;
// 3 the run could not be carried out; 130 interrupted. With
// --expect-violations=overlap,lost_update (for the tests of the checker): 0
// only if the checker found violations of every rule named.
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "chaos_options.hpp"
#include "checker.hpp"
#include "ensemble_control.hpp"
#include "event_log.hpp"
#include "nemesis.hpp"
#include "report.hpp"
#include "server_record.hpp"
#include "support/waits.hpp"
#include "tcp_proxy.hpp"
#include "worker_pool.hpp"
#include "zkr/cleanup.hpp"
#include "zkr/client.hpp"
#include "zkr/distributed_atomic_long.hpp"
#include "zkr/lock_factory.hpp"
#include "zkr_supervisors.hpp"

#ifndef ZKR_CHAOS_WORKER
#error "ZKR_CHAOS_WORKER must name the zkr-chaos-worker executable"
#endif
#ifndef ZKR_CHAOS_TICKER
#error "ZKR_CHAOS_TICKER must name the zkr-chaos-ticker executable"
#endif
#ifndef ZKR_CLI
#define ZKR_CLI ""  // built without the tools: no `zkr lock` supervisors
#endif
#ifndef ZKR_ENSEMBLE_SCRIPT_PATH
#error "ZKR_ENSEMBLE_SCRIPT_PATH must name scripts/ensemble"
#endif

namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;
using std::chrono::milliseconds;
namespace chaos = zkr::chaos;
using chaos::Options;

std::atomic<bool> interrupted{false};
extern "C" void on_signal(int) { interrupted.store(true); }

constexpr int kServers = 3;
const std::string kRoot = "/chaos";
// Keys of their own for the read/write lock and the semaphore:
// the library refuses a second protocol on a mutex's path. The writers of
// kRwKey keep a counter as the mutex holders of k0.. do.
const std::string kRwKey = "rw0";
const std::string kSemaphoreKey = "sem0";
constexpr int kSemaphoreLimit = 2;

void create_if_missing(zkr::Client& client, const std::string& path, const std::string& data) {
  client.with_retry([&](zkr::Keeper& k) {
    auto created = k.try_create(path, data);
    if (!created.ok() && created.error() != zkr::Errc::node_exists)
      (void)std::move(created).value();
    return 0;
  });
}

std::int64_t read_int(zkr::Keeper& k, const std::string& path) {
  const auto data = k.get(path).data;
  return std::stoll(data);
}

// CLOCK_REALTIME minus CLOCK_MONOTONIC, in ns: the servers stamp their
// transactions with the wall clock, everything else here is monotonic.
std::int64_t wall_minus_monotonic() {
  timespec wall{}, mono{};
  ::clock_gettime(CLOCK_REALTIME, &wall);
  ::clock_gettime(CLOCK_MONOTONIC, &mono);
  return (static_cast<std::int64_t>(wall.tv_sec) - mono.tv_sec) * 1'000'000'000 +
         (wall.tv_nsec - mono.tv_nsec);
}

// The servers' record (server_record.hpp) of the lock nodes under `root`
// (the workers' and the supervisors', and the supervisors' ticks), read from the
// stopped ensemble's transaction logs and put on the monotonic clock, in
// RUN/server-record.txt. Returns the problems of the record.
std::vector<std::string> record_servers_truth(const std::string& ensemble_dir,
                                              const std::string& root, const std::string& out,
                                              std::int64_t offset_from) {
  const auto offset_to = wall_minus_monotonic();
  auto record = chaos::read_txn_logs(chaos::txn_log_files(ensemble_dir), root + "/");
  chaos::EventLog log(out);
  log.write("clock", {{"wall_minus_monotonic_from", std::to_string(offset_from)},
                      {"wall_minus_monotonic_to", std::to_string(offset_to)},
                      {"transactions", std::to_string(record.transactions)},
                      {"unconfirmed", std::to_string(record.unconfirmed)},
                      {"last_zxid", std::to_string(record.last_zxid)}});
  for (auto& life : record.lives) {
    life.created -= offset_from;
    if (life.deleted) *life.deleted -= offset_from;
    log.write("life", chaos::life_fields(life));
  }
  // The wall clock stepped (not slewed) during the run: the record's times
  // cannot be set beside the workers'.
  if (std::abs(offset_to - offset_from) > 2'000'000)
    record.problems.push_back("the wall clock moved by " +
                              std::to_string((offset_to - offset_from) / 1000) +
                              " us against the monotonic one during the run");
  if (record.transactions == 0) record.problems.push_back("no transaction in the servers' logs");
  return record.problems;
}

bool is_lock_node(const std::string& name) { return chaos::is_lock_node_name(name); }

// Waits (on watches, with a deadline) until no lock node is left under the
// lock root: the sessions of killed workers take a session timeout to expire.
// A semaphore's nodes are one level down, in its "leases" and "locks".
void wait_lock_nodes_gone(zkr::Client& client, const std::string& lock_root, milliseconds timeout) {
  const auto deadline = SteadyClock::now() + timeout;
  auto keeper = client.keeper_when_connected();
  auto dirs = keeper->try_children(lock_root);
  if (!dirs.ok()) return;
  std::vector<std::string> paths;
  for (const auto& dir : dirs.value().names) {
    paths.push_back(lock_root + "/" + dir);
    for (const auto* sub : {"/leases", "/locks"})
      if (keeper->try_children(lock_root + "/" + dir + sub).ok())
        paths.push_back(lock_root + "/" + dir + sub);
  }
  for (const auto& path : paths) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - SteadyClock::now());
    if (left <= 0ms) return;
    (void)zkr::test::wait_children(
        *keeper, path,
        [](const std::vector<std::string>& names) {
          return std::none_of(names.begin(), names.end(), is_lock_node);
        },
        left);
  }
}

chaos::FinalState snapshot(zkr::Client& client, const std::vector<std::string>& keys) {
  return client.with_retry([&](zkr::Keeper& k) {
    chaos::FinalState state;
    k.sync(kRoot);  // our server may lag behind the workers'
    for (const auto& key : keys) {
      state.counters[key] = read_int(k, kRoot + "/data/" + key + "/counter");
      state.tokens[key] = read_int(k, kRoot + "/data/" + key + "/token");
    }
    const std::string lock_root = kRoot + "/locks";
    std::vector<std::string> pending{lock_root};
    // Two levels (key directories, lock nodes) plus one for safety.
    for (int depth = 0; depth < 3 && !pending.empty(); ++depth) {
      std::vector<std::string> next;
      for (const auto& dir : pending) {
        auto listed = k.try_children(dir);
        if (!listed.ok()) continue;
        for (const auto& name : listed.value().names) {
          const auto path = dir + "/" + name;
          if (const auto stat = k.exists(path)) {
            state.lock_root_nodes.push_back({path, stat->ephemeral_owner});
            next.push_back(path);
          }
        }
      }
      pending = std::move(next);
    }
    state.live_sessions.insert(k.session_id());
    return state;
  });
}

// The counter participants' counter, as the servers hold it at the end.
void read_counter(zkr::Client& client, chaos::FinalState& state) {
  const std::string path = std::string(chaos::kCounterRoot) + "/c0";
  client.with_retry([&](zkr::Keeper& k) {
    k.sync(chaos::kCounterRoot);
    state.long_counters[path] = zkr::DistributedAtomicLong(client, path).get();
  });
}

// Other applications' nodes in the lock root (bystanders): lock roots are
// shared, and the library may delete nothing it did not make. Planted before
// any worker starts: a Kafka-like tree of empty persistent nodes and one with
// data beside the lock directories, and two keys' lock paths made beforehand,
// without the library's mark: k1's holding another application's data (as
// Curator users lock /data/printer), k2's empty. The workers lock on both;
// the lock root itself is made by the runner, unmarked, and is one too.
// Parents come before their children.
struct Planted {
  std::string path;
  std::string data;
};

std::vector<Planted> bystander_tree(zkr::Client& client, const std::string& lock_root,
                                    const std::vector<std::string>& keys) {
  std::vector<Planted> tree{{lock_root, ""}};
  for (const auto* name : {"admin", "admin/delete_topics", "brokers", "brokers/ids", "config",
                           "config/changes", "isr_change_notification"})
    tree.push_back({lock_root + "/" + name, ""});
  tree.push_back({lock_root + "/controller_epoch", "7"});
  // The lock path exactly as the workers' LockFactory makes it.
  const zkr::LockFactory layout(client, lock_root, zkr::LockLayout::flat());
  tree.push_back({layout.path_for(keys.at(1)), "config=important"});
  if (keys.size() > 2) tree.push_back({layout.path_for(keys[2]), ""});
  return tree;
}

// Each path as it is now (after a sync), or that it does not exist.
std::vector<chaos::Bystander> look_at(zkr::Client& client, const std::vector<Planted>& tree) {
  return client.with_retry([&](zkr::Keeper& k) {
    k.sync(kRoot);  // our server may lag behind the others
    std::vector<chaos::Bystander> nodes;
    for (const auto& planted : tree) {
      chaos::Bystander node;
      node.path = planted.path;
      auto got = k.try_get(planted.path);
      if (!got.ok() && got.error() == zkr::Errc::no_node) {
        node.exists = false;
      } else {
        const auto found = std::move(got).value();  // throws for any other error: retried
        node.data = found.data;
        node.czxid = found.stat.czxid;
        node.mzxid = found.stat.mzxid;
        node.version = found.stat.version;
        node.owner = found.stat.ephemeral_owner;
      }
      nodes.push_back(std::move(node));
    }
    return nodes;
  });
}

int run_chaos(const Options& o, const std::string& dir, chaos::RunInfo& info) {
  const auto wall_start = SteadyClock::now();
  const auto clock_offset = wall_minus_monotonic();
  chaos::EventLog nemesis_log(dir + "/nemesis.log");
  nemesis_log.write("seed", {{"value", std::to_string(o.seed)}});
  chaos::EnsembleControl zk(ZKR_ENSEMBLE_SCRIPT_PATH, dir + "/ensemble");
  struct StopEnsemble {
    chaos::EnsembleControl& zk;
    ~StopEnsemble() { zk.stop(); }
  } stop_ensemble{zk};

  std::cout << "chaos: starting a " << kServers << "-server ensemble in " << zk.dir() << std::endl;
  const std::string direct = zk.start(kServers);
  std::vector<std::unique_ptr<chaos::TcpProxy>> proxies;
  std::string proxied;
  for (int i = 1; i <= kServers; ++i) {
    proxies.push_back(std::make_unique<chaos::TcpProxy>(zk.port(i)));
    proxied +=
        (i > 1 ? "," : "") + std::string("127.0.0.1:") + std::to_string(proxies.back()->port());
  }
  std::cout << "chaos: ensemble " << direct << ", proxies " << proxied << std::endl;

  zkr::ClientOptions client_options;
  client_options.connect_string = direct;
  client_options.session_timeout = 15s;  // the runner's session must outlive every fault
  client_options.retry_policy =
      std::make_shared<zkr::BoundedExponentialBackoffRetry>(100ms, 1s, 60s);
  zkr::Client client(client_options);
  if (!client.block_until_connected(60s))
    throw std::runtime_error("runner: no connection to " + direct);

  std::vector<std::string> keys;
  for (int i = 0; i < o.keys; ++i) keys.push_back("k" + std::to_string(i));
  create_if_missing(client, kRoot, "");
  const std::string lock_root = kRoot + "/locks";
  const auto bystanders = bystander_tree(client, lock_root, keys);
  for (const auto& planted : bystanders) create_if_missing(client, planted.path, planted.data);
  chaos::EventLog bystander_log(dir + "/bystanders.txt");
  const auto before = look_at(client, bystanders);
  for (std::size_t i = 0; i < before.size(); ++i) {
    // A fresh ensemble: a node that is not as planted means the setup failed.
    if (!before[i].exists || before[i].data != bystanders[i].data)
      throw std::runtime_error("runner: " + bystanders[i].path + " is not as planted");
    bystander_log.write("before", chaos::bystander_fields(before[i]));
  }
  create_if_missing(client, kRoot + "/data", "");
  // Where the workers' latch leaders write (latch_participant.hpp).
  create_if_missing(client, chaos::kLeaderWriteRoot, "");
  create_if_missing(client, std::string(chaos::kLeaderWriteRoot) + "/l0", "");
  // The counter the workers' counter participants race on, at 0.
  create_if_missing(client, chaos::kCounterRoot, "");
  (void)zkr::DistributedAtomicLong(client, std::string(chaos::kCounterRoot) + "/c0").initialize(0);
  // The group the workers' members join (member_participant.hpp).
  create_if_missing(client, chaos::kGroupRoot, "");
  create_if_missing(client, std::string(chaos::kGroupRoot) + "/g0", "");
  std::string key_list;
  for (const auto& key : keys) key_list += (key_list.empty() ? "" : ",") + key;
  // Every key that keeps a counter: the mutexes' and the read/write lock's.
  auto counted = keys;
  counted.push_back(kRwKey);
  for (const auto& key : counted) {
    create_if_missing(client, kRoot + "/data/" + key, "");
    create_if_missing(client, kRoot + "/data/" + key + "/counter", "0");
    create_if_missing(client, kRoot + "/data/" + key + "/token", "0");
  }

  chaos::WorkerSettings settings;
  settings.binary = ZKR_CHAOS_WORKER;
  settings.dir = dir;
  settings.connect = proxied;
  settings.root = kRoot;
  settings.keys = key_list;
  settings.workers = o.workers;
  settings.threads = o.threads;
  settings.seed = o.seed;
  settings.seconds = 2 * o.seconds + 300;  // a backstop only: the runner stops them
  settings.session_timeout = o.session_timeout;
  // escaped breaks the supervisors' command, not the workers' locks.
  settings.broken = o.broken == "escaped" ? "none" : o.broken;
  settings.rw_key = kRwKey;
  settings.semaphore_key = kSemaphoreKey;
  settings.semaphore_limit = kSemaphoreLimit;
  chaos::WorkerPool pool(settings);
  pool.start_all();

  const std::string tick_dir = std::string(chaos::kTickRoot) + "/z0";
  create_if_missing(client, chaos::kTickRoot, "");
  create_if_missing(client, tick_dir, "");
  chaos::SupervisorSettings supervisor_settings;
  supervisor_settings.zkr = ZKR_CLI;
  supervisor_settings.ticker = ZKR_CHAOS_TICKER;
  supervisor_settings.dir = dir;
  supervisor_settings.connect = proxied;
  supervisor_settings.direct = direct;
  supervisor_settings.lock_path = std::string(chaos::kSupervisedLockRoot) + "/z0";
  supervisor_settings.tick_dir = tick_dir;
  supervisor_settings.count = o.supervisors;
  supervisor_settings.session_timeout = o.session_timeout;
  supervisor_settings.escape = o.broken == "escaped";
  supervisor_settings.seed = o.seed;
  chaos::SupervisorPool supervisors(supervisor_settings);
  supervisors.start();

  // Faults start once the workers are at work: the first write anywhere.
  {
    const auto deadline = SteadyClock::now() + 60s;
    const auto counter = kRoot + "/data/" + keys[0] + "/counter";
    while (SteadyClock::now() < deadline && !interrupted) {
      auto changed = std::make_shared<zkr::test::Latch>();
      const auto value = client.with_retry([&](zkr::Keeper& k) {
        return std::stoll(
            k.get(counter, [changed](const zkr::WatchEvent&) { changed->open(); }).data);
      });
      if (value > 0) break;
      (void)changed->wait(1s);  // re-read at least every second: Ctrl-C, the deadline
    }
  }

  chaos::NemesisTargets targets;
  targets.ensemble = &zk;
  targets.servers = kServers;
  targets.direct_connect = direct;
  for (auto& p : proxies) targets.proxies.push_back(p.get());
  targets.workers = &pool;
  targets.supervisors = o.supervisors > 0 ? &supervisors : nullptr;
  targets.observer = &client;
  targets.lock_root = lock_root;
  for (const auto& planted : bystanders) {  // the tree's top, not the keys' lock paths
    if (!planted.path.starts_with(lock_root + "/")) continue;
    const auto name = planted.path.substr(lock_root.size() + 1);
    if (name.find('/') == std::string::npos &&
        std::find(keys.begin(), keys.end(), zkr::decode_key(name).value_or("")) == keys.end())
      targets.not_lock_dirs.insert(name);
  }
  targets.run_dir = dir;
  targets.session_timeout = o.session_timeout;
  chaos::Nemesis nemesis(targets, o.seed, o.faults, nemesis_log);
  std::cout << "chaos: " << o.seconds << " s of faults (" << o.faults.size() << " kinds)"
            << std::endl;
  const auto phase_from = chaos::monotonic_ns();
  try {
    // A busy machine makes the first round long: the kinds it has not reached
    // get up to as long again.
    const auto deadline = SteadyClock::now() + std::chrono::seconds(o.seconds);
    nemesis.run_until(deadline, deadline + std::chrono::seconds(o.seconds), interrupted);
  } catch (const std::exception& e) {
    info.run_problems.push_back(std::string("nemesis: ") + e.what());
  }
  const auto phase_to = chaos::monotonic_ns();
  std::cout << "chaos: the faults took " << (phase_to - phase_from) / 1'000'000'000 << " s"
            << std::endl;
  nemesis_log.write(
      "phase",
      {{"name", "faults"}, {"from", std::to_string(phase_from)}, {"to", std::to_string(phase_to)}});
  for (const auto& p : nemesis.heal_all()) info.run_problems.push_back(p);
  // A run that missed a fault kind did not test what it claims to.
  if (!interrupted)
    for (const auto& kind : o.faults)
      if (!nemesis.injected().count(kind))
        info.run_problems.push_back("fault kind " + kind +
                                    " was never injected (a longer --seconds?)");

  std::cout << "chaos: stopping workers" << std::endl;
  for (const auto& p : supervisors.stop(30s)) info.run_problems.push_back(p);
  for (const auto& p : pool.unexpected_exits()) info.run_problems.push_back(p);
  // A worker finishes its current acquire (bounded by its deadline, at most
  // 6 s, plus a session timeout) and its hold.
  for (const auto& p : pool.stop_all(30s)) info.run_problems.push_back(p);
  proxies.clear();  // the workers are gone: no connection is left to proxy

  wait_lock_nodes_gone(client, lock_root, o.session_timeout * 3 + 15s);
  auto state = snapshot(client, counted);
  read_counter(client, state);
  chaos::write_final_state(dir + "/final-state.txt", state);

  // What an operator does after such a day: sweep the lock root, for real.
  // It may take the library's own empty directories and nothing else; then
  // every bystander must be the node it was before the workers started.
  try {
    const auto swept = zkr::clean_lock_root(client, lock_root);
    bystander_log.write("sweep", {{"removed", std::to_string(swept.empty_directories)},
                                  {"not_ours", std::to_string(swept.not_ours)},
                                  {"foreign_lock_nodes", std::to_string(swept.foreign_lock_nodes)},
                                  {"live_lock_nodes", std::to_string(swept.live_lock_nodes)},
                                  {"raced", std::to_string(swept.raced)}});
    std::cout << "chaos: swept " << lock_root << ": removed " << swept.empty_directories
              << " empty directories of ours, kept " << swept.not_ours << " not ours" << std::endl;
  } catch (const std::exception& e) {
    bystander_log.write("sweep", {{"error", chaos::word(e.what())}});  // the checker reports it
  }
  for (const auto& node : look_at(client, bystanders))
    bystander_log.write("after", chaos::bystander_fields(node));

  // The servers' truth: their transaction logs, read once they are stopped.
  zk.stop();
  for (const auto& p :
       record_servers_truth(zk.dir(), kRoot, dir + "/server-record.txt", clock_offset))
    info.run_problems.push_back("servers' record: " + p);

  const auto input = chaos::load_run(dir);
  const auto result = chaos::check(input);
  // Faults that never hit a holder, and fencing never tested, prove nothing.
  if (o.broken == "none" && !interrupted)
    for (const auto& p : chaos::bite_problems(result, o.faults)) info.run_problems.push_back(p);
  info.wall_seconds = std::chrono::duration<double>(SteadyClock::now() - wall_start).count();
  const auto report = chaos::format_report(info, result);
  std::cout << report << std::flush;
  std::ofstream(dir + "/report.txt") << report;

  if (interrupted) return 130;
  if (!o.expect_violations.empty()) {
    // Caught for the right reasons: every rule named, not just any.
    std::string missing;
    for (const auto& rule : o.expect_violations)
      if (!result.violations.count(rule)) missing += (missing.empty() ? "" : ",") + rule;
    if (missing.empty())
      std::cout << "chaos: the checker caught the broken lock by every rule expected, as it must\n";
    else
      std::cout << "chaos: the checker did not report " << missing
                << " on a broken lock: it proves nothing\n";
    return missing.empty() ? 0 : 1;
  }
  return result.ok() && info.run_problems.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    o = chaos::parse_options(argc, argv, !std::string_view(ZKR_CLI).empty());
  } catch (const std::invalid_argument& e) {
    std::cerr << "zkr-chaos: " << e.what() << "\n";
    return 2;
  }
  if (!o.check_dir.empty()) {
    // The checker needs nothing but the records: judge a finished run again.
    try {
      const auto result = chaos::check(chaos::load_run(o.check_dir));
      chaos::RunInfo info;
      info.dir = o.check_dir;
      info.broken = "none";
      std::vector<std::string> kinds;
      for (const auto& [kind, n] : result.faults) kinds.push_back(kind);
      info.run_problems = chaos::bite_problems(result, kinds);
      std::cout << chaos::format_report(info, result);
      return result.ok() && info.run_problems.empty() ? 0 : 1;
    } catch (const std::exception& e) {
      std::cerr << "zkr-chaos: " << e.what() << "\n";
      return 3;
    }
  }
  if (!o.seed_given) o.seed = std::random_device{}() % 1'000'000'000;
  std::string dir = o.out;
  if (dir.empty()) {
    std::string templ = (std::filesystem::temp_directory_path() / "zkr-chaos-XXXXXX").string();
    if (!::mkdtemp(templ.data())) {
      std::cerr << "zkr-chaos: mkdtemp failed\n";
      return 3;
    }
    dir = templ;
  } else {
    std::filesystem::create_directories(dir);
    if (!std::filesystem::is_empty(dir)) {
      std::cerr << "zkr-chaos: --out " << dir << " is not empty\n";
      return 2;
    }
  }
  dir = std::filesystem::absolute(dir).string();
  // Before any thread exists: the guard stops the ensemble if we die.
  chaos::arm_ensemble_guard(ZKR_ENSEMBLE_SCRIPT_PATH, dir + "/ensemble");

  struct sigaction action {};
  action.sa_handler = on_signal;
  for (const int signo : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(signo, &action, nullptr);

  std::cout << "chaos: seed " << o.seed << " (replay with --seed " << o.seed << "), logs in " << dir
            << std::endl;
  chaos::RunInfo info;
  info.seed = o.seed;
  info.fault_seconds = o.seconds;
  info.workers = o.workers;
  info.threads = o.threads;
  info.session_timeout_ms = o.session_timeout.count();
  info.broken = o.broken;
  info.dir = dir;
  int rc = 3;
  try {
    rc = run_chaos(o, dir, info);
  } catch (const std::exception& e) {
    std::cerr << "zkr-chaos: the run failed: " << e.what() << "\nzkr-chaos: logs kept in " << dir
              << "\n";
    return 3;
  }
  // The logs and the report stay; the servers' data (the bulk) only when
  // something needs looking into.
  if (rc == 0 && !o.keep) {
    std::error_code ignored;
    std::filesystem::remove_all(dir + "/ensemble", ignored);
  }
  std::cout << "chaos: report in " << dir << "/report.txt\n";
  return rc;
}
