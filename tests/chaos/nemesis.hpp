// The nemesis: injects one fault at a time, on a seeded schedule, and writes
// down what it did and when (nemesis.log, tests/chaos/event_log.hpp format):
//
//   fault  kind=K from=NS to=NS effective=0|1 detail=...
//                                            once each fault is healed
//   cut    pid=P why=K from=NS to=NS         P's holds end at `from`; any write
//                                            of them sent after `to` must fail
//   paused pid=P from=NS to=NS               P was stopped (SIGSTOP) meanwhile
//
// Fault kinds: kill_server, kill_leader, freeze_server, proxy_reset,
// proxy_blackhole, proxy_delay, proxy_drop_reply, expire_session,
// kill_worker, pause_worker. The first round injects every kind once, in a
// seeded order; later ones pick at random. The same seed gives the same
// choices (what happens in response still depends on timing).
//
//   zkr::chaos::Nemesis nemesis(targets, seed, log);
//   nemesis.run_until(deadline, stop_flag);
//   nemesis.heal_all();
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "ensemble_control.hpp"
#include "event_log.hpp"
#include "tcp_proxy.hpp"
#include "worker_pool.hpp"
#include "zkr/client.hpp"

namespace zkr::chaos {

inline const std::vector<std::string> kFaultKinds = {
    "kill_server",     "kill_leader",    "freeze_server", "proxy_reset",  "proxy_blackhole",
    "proxy_delay",     "proxy_drop_reply", "expire_session", "kill_worker", "pause_worker"};

// A fault's detail starts with this when it could not take effect.
inline constexpr std::string_view kNotInjected = "not_injected:";

struct NemesisTargets {
  EnsembleControl* ensemble = nullptr;
  int servers = 3;
  std::string direct_connect;  // the servers themselves, not the proxies
  std::vector<TcpProxy*> proxies;
  WorkerPool* workers = nullptr;
  Client* observer = nullptr;  // the runner's own session, to find lock holders
  std::string lock_root;
  std::string run_dir;  // where the workers' session files are
  std::chrono::milliseconds session_timeout{4000};
};

class Nemesis {
 public:
  // kinds: the fault kinds to use (a subset of kFaultKinds; empty: none).
  Nemesis(NemesisTargets targets, std::uint64_t seed, std::vector<std::string> kinds,
          EventLog& log);

  // Injects faults until `deadline` or `stop`; each fault is healed before the
  // next. Throws only if healing fails (the ensemble could not be repaired).
  void run_until(std::chrono::steady_clock::time_point deadline, const std::atomic<bool>& stop);
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

  struct Holder {
    pid_t pid = 0;
    std::int64_t session = 0;
    std::string node;
  };
  std::vector<Holder> holders();
  // A lock holder if there is one, else any worker; pid 0 if no worker runs.
  Holder pick_victim();
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
};

}  // namespace zkr::chaos
