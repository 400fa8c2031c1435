#include "nemesis.hpp"

#include <signal.h>

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace zkr::chaos {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string proc_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(in, text);
  const auto paren = text.rfind(')');
  return paren == std::string::npos || paren + 2 >= text.size() ? "" : text.substr(paren + 2, 1);
}

// Waits until /proc says the process is stopped (or gone), up to 5 s. Nothing
// notifies a non-parent of another process's stop, so this looks every 10 ms.
bool wait_stopped(pid_t pid) {
  for (int i = 0; i < 500; ++i) {
    const auto s = proc_state(pid);
    if (s == "T" || s == "t" || s.empty()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

std::string hex(std::int64_t id) {
  char text[32];
  std::snprintf(text, sizeof text, "%llx", static_cast<unsigned long long>(id));
  return text;
}

}  // namespace

Nemesis::Nemesis(NemesisTargets targets, std::uint64_t seed, std::vector<std::string> kinds,
                 EventLog& log)
    : targets_(std::move(targets)), rng_(seed), kinds_(std::move(kinds)), log_(log) {}

milliseconds Nemesis::between(milliseconds lo, milliseconds hi) {
  return lo + milliseconds(static_cast<std::int64_t>(rng_() % static_cast<std::uint64_t>((hi - lo).count() + 1)));
}

// The nemesis's schedule: how long a fault lasts, how long the quiet between
// faults is. Not a wait for something to happen.
void Nemesis::pause(milliseconds d, const std::atomic<bool>* stop) {
  const auto until = Clock::now() + d;
  while (Clock::now() < until && !(stop && stop->load()))
    std::this_thread::sleep_for(std::min<Clock::duration>(until - Clock::now(), 50ms));
}

void Nemesis::run_until(Clock::time_point deadline, const std::atomic<bool>& stop) {
  if (kinds_.empty()) {
    pause(std::chrono::duration_cast<milliseconds>(deadline - Clock::now()), &stop);
    return;
  }
  // The first round: every kind once, in a seeded order; a kind that could
  // not take effect (no write came by, no worker held a lock) goes to the end
  // of the round again, up to three tries.
  std::vector<std::string> round = kinds_;
  std::shuffle(round.begin(), round.end(), rng_);
  std::map<std::string, int> tries;
  std::size_t next = 0;
  while (!stop && Clock::now() < deadline) {
    const std::string kind = next < round.size() ? round[next++] : kinds_[rng_() % kinds_.size()];
    const auto from = monotonic_ns();
    std::string detail;
    try {
      detail = inject(kind);
    } catch (const std::exception& e) {
      detail = std::string(kNotInjected) + "failed: " + e.what();
      const auto problems = heal_all();
      if (!problems.empty()) throw std::runtime_error("cannot repair after " + kind + ": " + problems.front());
    }
    const bool effective = !detail.starts_with(kNotInjected);
    log_.write("fault", {{"kind", kind}, {"from", std::to_string(from)},
                         {"to", std::to_string(monotonic_ns())}, {"effective", effective ? "1" : "0"},
                         {"detail", detail}});
    if (effective) ++injected_[kind];
    else if (next <= round.size() && ++tries[kind] < 3) round.push_back(kind);
    pause(between(800ms, 2500ms), &stop);
  }
}

std::string Nemesis::inject(const std::string& kind) {
  if (kind == "kill_server")
    return kill_server(1 + static_cast<int>(rng_() % static_cast<std::uint64_t>(targets_.servers)));
  if (kind == "kill_leader") return kill_server(0);
  if (kind == "freeze_server") return freeze_server();
  if (kind == "proxy_reset") return proxy_reset();
  if (kind == "proxy_blackhole") return proxy_blackhole();
  if (kind == "proxy_delay") return proxy_delay();
  if (kind == "proxy_drop_reply") return proxy_drop_reply();
  if (kind == "expire_session") return expire_session();
  if (kind == "kill_worker") return kill_worker();
  if (kind == "pause_worker") return pause_worker();
  throw std::invalid_argument("unknown fault kind " + kind);
}

// index 0: the current leader.
std::string Nemesis::kill_server(int index) {
  if (index == 0) index = targets_.ensemble->leader();
  const auto down = between(500ms, 3000ms);
  targets_.ensemble->run("kill " + std::to_string(index));
  pause(down);
  targets_.ensemble->run("restart " + std::to_string(index));  // waits until it serves
  return "server=" + std::to_string(index) + ",down_ms=" + std::to_string(down.count());
}

std::string Nemesis::freeze_server() {
  const int index = 1 + static_cast<int>(rng_() % static_cast<std::uint64_t>(targets_.servers));
  // Past the session timeout: its clients' sessions must move or expire.
  const auto frozen = targets_.session_timeout + between(500ms, 2000ms);
  targets_.ensemble->run("freeze " + std::to_string(index));
  pause(frozen);
  targets_.ensemble->run("thaw " + std::to_string(index));
  return "server=" + std::to_string(index) + ",frozen_ms=" + std::to_string(frozen.count());
}

std::vector<TcpProxy*> Nemesis::some_proxies() {
  // Half the time all of them (nowhere to fail over), else one.
  if (rng_() % 2 == 0) return targets_.proxies;
  return {targets_.proxies[rng_() % targets_.proxies.size()]};
}

std::string Nemesis::proxy_reset() {
  int n = 0;
  const auto proxies = some_proxies();
  for (auto* p : proxies) n += p->reset_all();
  return "proxies=" + std::to_string(proxies.size()) + ",connections=" + std::to_string(n);
}

std::string Nemesis::proxy_blackhole() {
  const auto proxies = some_proxies();
  // Around the session timeout: shorter ones only suspend, longer ones expire.
  const auto d = between(targets_.session_timeout / 2, targets_.session_timeout * 3 / 2);
  for (auto* p : proxies) p->set_mode(ProxyMode::blackhole);
  pause(d);
  for (auto* p : proxies) p->set_mode(ProxyMode::forward);
  return "proxies=" + std::to_string(proxies.size()) + ",ms=" + std::to_string(d.count());
}

std::string Nemesis::proxy_delay() {
  const auto proxies = some_proxies();
  const auto delay = between(100ms, 1200ms);
  const auto d = between(2000ms, 5000ms);
  for (auto* p : proxies) p->set_mode(ProxyMode::delay, delay);
  pause(d);
  for (auto* p : proxies) p->set_mode(ProxyMode::forward);
  return "proxies=" + std::to_string(proxies.size()) + ",delay_ms=" + std::to_string(delay.count()) +
         ",ms=" + std::to_string(d.count());
}

std::string Nemesis::proxy_drop_reply() {
  // Which request loses its reply: a lock node's create (the lock must find
  // its node again or delete it), a guarded write (a multi: outcome unknown to
  // the worker), a release's delete, or whatever mutating request comes first.
  static const std::vector<std::vector<int>> kTargets = {{1, 15, 19}, {14}, {2}, {}};
  const auto& target = kTargets[rng_() % kTargets.size()];
  for (auto* p : targets_.proxies) p->arm_drop_reply(target);
  std::string what;
  // Workers write all the time; bounded in case none does meanwhile. Looked
  // at every 25 ms across the proxies (each drop happens on a pump thread).

  for (int i = 0; i < 400 && what.empty(); ++i) {
    for (std::size_t j = 0; j < targets_.proxies.size() && what.empty(); ++j)
      if (const auto d = targets_.proxies[j]->dropped(); !d.empty())
        what = "proxy=" + std::to_string(j + 1) + "," + d;
    if (what.empty()) std::this_thread::sleep_for(25ms);
  }
  for (auto* p : targets_.proxies) p->disarm_drop_reply();
  return what.empty() ? std::string(kNotInjected) + "no_request_seen" : what;
}

std::vector<Nemesis::Holder> Nemesis::holders() {
  std::vector<Holder> out;
  auto keeper = targets_.observer->keeper();
  auto& k = *keeper;
  auto dirs = k.try_children(targets_.lock_root);
  if (!dirs.ok()) return out;
  for (const auto& dir : dirs.value().names) {
    const auto path = targets_.lock_root + "/" + dir;
    auto nodes = k.try_children(path);
    if (!nodes.ok() || nodes.value().names.empty()) continue;
    auto names = nodes.value().names;
    // Holder first: the lowest sequence number (the name's last 10 digits).
    const auto first = *std::min_element(names.begin(), names.end(), [](const auto& a, const auto& b) {
      return a.substr(a.size() - std::min<std::size_t>(10, a.size())) <
             b.substr(b.size() - std::min<std::size_t>(10, b.size()));
    });
    auto node = k.try_get(path + "/" + first);
    if (!node.ok()) continue;
    const auto& data = node.value().data;  // "pid=123;slot=2"
    const auto at = data.find("pid=");
    if (at == std::string::npos) continue;
    pid_t pid = 0;
    std::from_chars(data.data() + at + 4, data.data() + data.size(), pid);
    if (pid > 0 && targets_.workers->owns(pid))
      out.push_back({pid, node.value().stat.ephemeral_owner, path + "/" + first});
  }
  return out;
}

Nemesis::Holder Nemesis::pick_victim() {
  const auto found = holders();
  if (!found.empty()) return found[rng_() % found.size()];
  const auto pids = targets_.workers->pids();
  if (pids.empty()) return {};
  return {pids[rng_() % pids.size()], 0, ""};
}

std::string Nemesis::session_password(std::int64_t session) {
  const std::string id = hex(session);
  std::string password;
  for (const auto& entry : std::filesystem::directory_iterator(targets_.run_dir)) {
    const auto name = entry.path().filename().string();
    if (!name.starts_with("sessions-")) continue;
    for (const auto& e : read_events(entry.path().string()))
      if (e.get("id") == id) password = from_hex(e.get("password"));
  }
  return password;
}

std::string Nemesis::expire_session() {
  const auto victim = pick_victim();
  std::int64_t session = victim.session;
  if (session == 0 && victim.pid != 0) {
    // Not a holder: its latest published session.
    for (const auto& entry : std::filesystem::directory_iterator(targets_.run_dir)) {
      if (!entry.path().filename().string().starts_with("sessions-")) continue;
      for (const auto& e : read_events(entry.path().string()))
        if (e.get("pid") == std::to_string(victim.pid)) {
          unsigned long long id = 0;
          const auto& text = e.get("id");
          std::from_chars(text.data(), text.data() + text.size(), id, 16);
          session = static_cast<std::int64_t>(id);
        }
    }
  }
  if (session == 0) return std::string(kNotInjected) + "no_session_found";
  const auto password = session_password(session);
  if (password.empty()) return std::string(kNotInjected) + "session=" + hex(session) + ",no_password_on_record";

  // Join the session from a second handle, then close that handle: the server
  // ends the session for real, as on expiry.
  struct Joined {
    std::mutex mutex;
    std::condition_variable cv;
    std::optional<SessionState> state;
  };
  auto joined = std::make_shared<Joined>();
  KeeperConfig config;
  config.hosts = targets_.direct_connect;
  config.session_timeout = targets_.session_timeout;
  config.session_id = session;
  config.session_password = password;
  const auto from = monotonic_ns();
  auto intruder = connect_keeper(config, [joined](SessionState s) {
    std::lock_guard lock(joined->mutex);
    if (!joined->state || s != SessionState::connecting) joined->state = s;
    joined->cv.notify_all();
  });
  std::unique_lock lock(joined->mutex);
  joined->cv.wait_for(lock, 10s, [&] {
    return joined->state && *joined->state != SessionState::connecting;
  });
  const auto state = joined->state;
  lock.unlock();
  intruder->close();
  intruder.reset();
  const auto to = monotonic_ns();
  if (state != SessionState::connected)
    return std::string(kNotInjected) + "session=" + hex(session) + ",join_failed=" +
           std::string(state ? to_string(*state) : "timeout");
  log_.write("cut", {{"pid", std::to_string(victim.pid)}, {"why", "expire_session"},
                     {"from", std::to_string(from)}, {"to", std::to_string(to)},
                     {"session", hex(session)}});
  return "pid=" + std::to_string(victim.pid) + ",session=" + hex(session) +
         (victim.node.empty() ? ",holder=no" : ",holder=yes");
}

std::string Nemesis::kill_worker() {
  const auto victim = pick_victim();
  if (victim.pid == 0) return std::string(kNotInjected) + "no_worker";
  const auto from = monotonic_ns();
  const bool dead = targets_.workers->kill_and_replace(victim.pid);
  const auto to = monotonic_ns();
  log_.write("cut", {{"pid", std::to_string(victim.pid)}, {"why", "kill_worker"},
                     {"from", std::to_string(from)}, {"to", std::to_string(to)}});
  if (!dead) throw std::runtime_error("worker " + std::to_string(victim.pid) + " survived SIGKILL");
  return "pid=" + std::to_string(victim.pid) + (victim.node.empty() ? ",holder=no" : ",holder=yes");
}

std::string Nemesis::pause_worker() {
  const auto victim = pick_victim();
  if (victim.pid == 0) return std::string(kNotInjected) + "no_worker";
  // Past the session timeout, with a margin for the server's expiry tick: its
  // session is gone when it runs again, and it has not heard yet.
  const auto stopped = targets_.session_timeout + between(2000ms, 3000ms);
  const auto from = monotonic_ns();
  targets_.workers->signal(victim.pid, SIGSTOP);
  if (!wait_stopped(victim.pid)) {
    targets_.workers->signal(victim.pid, SIGCONT);
    throw std::runtime_error("worker " + std::to_string(victim.pid) + " did not stop");
  }
  const auto to = monotonic_ns();
  log_.write("cut", {{"pid", std::to_string(victim.pid)}, {"why", "pause_worker"},
                     {"from", std::to_string(from)}, {"to", std::to_string(to)}});
  pause(stopped);
  targets_.workers->signal(victim.pid, SIGCONT);
  log_.write("paused", {{"pid", std::to_string(victim.pid)}, {"from", std::to_string(from)},
                        {"to", std::to_string(monotonic_ns())}});
  return "pid=" + std::to_string(victim.pid) + ",stopped_ms=" + std::to_string(stopped.count()) +
         (victim.node.empty() ? ",holder=no" : ",holder=yes");
}

std::vector<std::string> Nemesis::heal_all() {
  std::vector<std::string> problems;
  for (auto* p : targets_.proxies) {
    p->set_mode(ProxyMode::forward);
    p->disarm_drop_reply();
  }
  for (int i = 1; i <= targets_.servers; ++i) {
    try {
      const auto status = targets_.ensemble->run("status");
      // "INDEX PID PORT alive|frozen|dead MODE" per line
      std::size_t at = 0;
      while (at < status.size()) {
        const auto end = std::min(status.find('\n', at), status.size());
        const auto line = status.substr(at, end - at);
        at = end + 1;
        if (!line.starts_with(std::to_string(i) + " ")) continue;
        if (line.find(" frozen") != std::string::npos) targets_.ensemble->run("thaw " + std::to_string(i));
        if (line.find(" dead") != std::string::npos) targets_.ensemble->run("restart " + std::to_string(i));
      }
    } catch (const std::exception& e) {
      problems.push_back(std::string("healing server ") + std::to_string(i) + ": " + e.what());
    }
  }
  return problems;
}

}  // namespace zkr::chaos
