// The nemesis: injects one fault at a time, on a seeded schedule, and writes
// down what it did and when (nemesis.log, tests/chaos/event_log.hpp format):
//
//   fault  kind=K from=NS to=NS effective=0|1 detail=...
//                                            once each fault is healed
//   cut    pid=P why=K from=NS to=NS node=N  a fault aimed at P's hold of lock
//                                            node N (kill_worker, pause_worker,
//                                            expire_session with session=S);
//                                            the checker counts it as a holder
//                                            hit by the servers' record
//   paused pid=P from=NS to=NS               P was stopped (SIGSTOP) meanwhile
//   cut    pid=P why=delete_holder_node from=NS to=NS node=PATH
//                                            the holder's node PATH deleted
//                                            between from and to
//   cut    pid=P why=drop_own_watch from=NS to=NS node=PATH
//                                            the same, for a holder whose
//                                            own-node watch was dropped
//   cut    pid=P why=pause_supervisor from=NS to=NS node=PATH
//                                            zkr P, holding PATH, stopped
//   foreign session=S via=direct|proxyN      a session of the nemesis's own
//   foreign path=PATH session=S              a node it made in a lock directory
//
// Fault kinds: kill_server, kill_leader, freeze_server, proxy_reset,
// proxy_blackhole, proxy_delay, proxy_drop_reply, expire_session,
// kill_worker, pause_worker, drop_own_watch, drop_listing, drop_release
// (the connection of one worker reset as its own-node watch, a listing or
// its release goes out, before the server sees it), pause_supervisor (a
// holding `zkr lock` stopped by SIGSTOP or SIGTSTP past the session
// timeout, then SIGCONT); and another client's legal moves on
// the lock directories, each from a session of the nemesis's own, connected
// directly or through a proxy: write_revoke, write_held_mark,
// write_random_bytes, write_large_value (data written into a waiting node or
// the holder's), delete_waiter_node, delete_holder_node,
// create_non_lock_child, create_foreign_lock_node (removed again before the
// move ends); and delete_leader_node (the first node of the workers' leader
// latch deleted). The first round injects every kind once, in a
// seeded order; later ones pick at random. The same seed gives the same
// choices (what happens in response still depends on timing).
//
//   zkr::chaos::Nemesis nemesis(targets, seed, log);
//   nemesis.run_until(deadline, overtime, stop_flag);
//   nemesis.heal_all();
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ensemble_control.hpp"
#include "event_log.hpp"
#include "tcp_proxy.hpp"
#include "worker_pool.hpp"
#include "zkr/client.hpp"

namespace zkr::chaos {

class SupervisorPool;

// What fails in real ensembles: servers, links, sessions, client processes.
inline const std::vector<std::string> kClassicFaultKinds = {
    "kill_server",    "kill_leader",      "freeze_server",  "proxy_reset",     "proxy_blackhole",
    "proxy_delay",    "proxy_drop_reply", "expire_session", "kill_worker",     "pause_worker",
    "drop_own_watch", "drop_listing",     "drop_release",   "pause_supervisor"};
// What another client may legally do to lock directories.
inline const std::vector<std::string> kAdversarialFaultKinds = {
    "write_revoke",          "write_held_mark",          "write_random_bytes",
    "write_large_value",     "delete_waiter_node",       "delete_holder_node",
    "create_non_lock_child", "create_foreign_lock_node", "delete_leader_node"};
inline const std::vector<std::string> kFaultKinds = [] {
  auto all = kClassicFaultKinds;
  all.insert(all.end(), kAdversarialFaultKinds.begin(), kAdversarialFaultKinds.end());
  return all;
}();

// A fault's detail starts with this when it could not take effect.
inline constexpr std::string_view kNotInjected = "not_injected:";

struct NemesisTargets {
  EnsembleControl* ensemble = nullptr;
  int servers = 3;
  std::string direct_connect;  // the servers themselves, not the proxies
  std::vector<TcpProxy*> proxies;
  WorkerPool* workers = nullptr;
  SupervisorPool* supervisors = nullptr;  // `zkr lock` runs; nullptr: none
  Client* observer = nullptr;             // the runner's own session, to find lock holders
  std::string lock_root;
  // Children of lock_root that are other applications' nodes (the run's
  // bystanders), not lock directories: the moves on lock directories leave
  // them be, so that they keep aiming at the locks.
  std::set<std::string> not_lock_dirs;
  std::string run_dir;  // where the workers' session files are
  std::chrono::milliseconds session_timeout{4000};
};

class Nemesis {
 public:
  // kinds: the fault kinds to use (a subset of kFaultKinds; empty: none).
  Nemesis(NemesisTargets targets, std::uint64_t seed, std::vector<std::string> kinds,
          EventLog& log);

  // Injects faults until `deadline` or `stop`; each fault is healed before the
  // next. A kind not yet injected by `deadline` (a slow machine makes the
  // first round long) is still tried, and only such kinds, until `overtime`.
  // Throws only if healing fails (the ensemble could not be repaired).
  void run_until(std::chrono::steady_clock::time_point deadline,
                 std::chrono::steady_clock::time_point overtime, const std::atomic<bool>& stop);
  // Undoes whatever may still be in effect: proxies forward, frozen servers
  // thawed, dead servers restarted. Returns problems (one line each).
  std::vector<std::string> heal_all();

  const std::map<std::string, int>& injected() const { return injected_; }

 private:
  std::string inject(const std::string& kind);
  std::string kill_server(int index);
  std::string freeze_server();
  std::string proxy_reset();
  std::string proxy_blackhole();
  std::string proxy_delay();
  std::string proxy_drop_reply();
  std::string expire_session();
  std::string kill_worker();
  std::string pause_worker();
  // nemesis_requests.cpp: one request of one worker lost with its connection.
  std::string drop_own_watch();
  std::string drop_listing();
  std::string drop_release();
  std::string drop_request(std::int64_t session, RequestKind kind, std::chrono::milliseconds wait);
  // nemesis_supervisors.cpp: a `zkr lock` that holds, stopped past the session.
  std::string pause_supervisor();
  std::string write_revoke();
  std::string write_held_mark();
  std::string write_random_bytes();
  std::string write_large_value();
  std::string delete_waiter_node();
  std::string delete_holder_node();
  std::string create_non_lock_child();
  std::string create_foreign_lock_node();
  // nemesis_latch.cpp: the latch leader's node deleted.
  std::string delete_leader_node();

  struct Holder {
    pid_t pid = 0;
    std::int64_t session = 0;
    std::string node;
    std::int64_t stopped_at = 0;  // when stop_a_holder stopped it
  };
  struct LockDir {
    std::string path;
    std::vector<std::string> nodes;  // its lock nodes, in queue order: holder first
  };
  // Every lock directory under the lock root, and each semaphore's "leases"
  // (its lease nodes, oldest first), as the observer sees them now.
  std::vector<LockDir> lock_dirs();
  // The owner session of a node, 0 if it is gone or not ephemeral.
  std::int64_t owner_of(const std::string& path);
  // Worker sessions, from the workers' session files: session -> pid.
  std::map<std::int64_t, pid_t> worker_sessions();
  std::vector<Holder> holders();
  // A session of the nemesis's own, direct or through a proxy, connected (on
  // record as `foreign`); nullptr if it could not connect. `via` says how.
  std::shared_ptr<Keeper> foreign_session(std::string& via);
  // Closes it (its ephemeral nodes go with it) after removing `made`; what
  // is still there is left for heal_all.
  void end_foreign_session(const std::shared_ptr<Keeper>& keeper,
                           const std::vector<std::string>& made);
  // Writes data into a lock node from a foreign session: the holder's or a
  // waiting one, at random, or a waiting one with nodes before and after it
  // when `middle` (where a forged hand-off mark would let its successor
  // skip). then_delete: a waiting node written is deleted a moment later.
  std::string write_into_lock_node(const std::string& data, bool middle, bool then_delete);
  // A lock holder, stopped (SIGSTOP), that still holds its node once
  // stopped; waited for (bounded); pid 0 if none was caught.
  Holder stop_a_holder();
  // The worker's log shows the grant of h.node, and no exit since.
  bool granted_in_log(const Holder& h);
  // The password of a worker's session, from the workers' session files.
  std::string session_password(std::int64_t session);
  std::vector<TcpProxy*> some_proxies();
  void pause(std::chrono::milliseconds d, const std::atomic<bool>* stop = nullptr);
  std::chrono::milliseconds between(std::chrono::milliseconds lo, std::chrono::milliseconds hi);

  NemesisTargets targets_;
  std::mt19937_64 rng_;
  std::vector<std::string> kinds_;
  EventLog& log_;
  std::map<std::string, int> injected_;
  std::vector<std::string> leftovers_;  // nemesis nodes a move could not remove
  // What the nemesis has read of one worker's log: up to `offset`, and the
  // holds (op -> its nodes) entered and not yet exited there. Read on from
  // the offset each time, so a look costs what the worker wrote since.
  struct WorkerLogTail {
    std::string path;
    std::uint64_t offset = 0;
    std::map<std::string, std::string> open_holds;
  };
  std::map<pid_t, WorkerLogTail> worker_logs_;
};

}  // namespace zkr::chaos
