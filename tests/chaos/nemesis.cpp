#include "nemesis.hpp"
#include "nemesis_detail.hpp"

#include <signal.h>

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <utility>

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

// The text after the last "lock-" of a lock node's name (ten digits, or a
// minus and ten once a counter has overflowed), which orders the queue as
// Curator orders it; "" for a child that is not a lock node. A read/write
// lock's nodes ("__READ__", "__WRIT__") and a semaphore's leases ("lease-")
// are ordered by their sequence the same way.
std::string lock_sequence(const std::string& name) {
  for (const std::string_view mark : {"lock-", "__READ__", "__WRIT__", "lease-"}) {
    const auto at = name.rfind(mark);
    if (at == std::string::npos) continue;
    const auto seq = name.substr(at + mark.size());
    if (seq.size() != 10 && !(seq.size() == 11 && seq[0] == '-')) return "";
    for (std::size_t i = seq.size() - 10; i < seq.size(); ++i)
      if (seq[i] < '0' || seq[i] > '9') return "";
    return seq;
  }
  return "";
}

}  // namespace

namespace nemesis_detail {

std::string hex(std::int64_t id) {
  char text[32];
  std::snprintf(text, sizeof text, "%llx", static_cast<unsigned long long>(id));
  return text;
}

// Opens a session with `config` and waits (up to 10 s) until it is connected
// or refused. Returns the keeper and the state it reached (nullopt: none).
std::pair<std::shared_ptr<Keeper>, std::optional<SessionState>> connect_and_wait(
    const KeeperConfig& config) {
  struct Joined {
    std::mutex mutex;
    std::condition_variable cv;
    std::optional<SessionState> state;
  };
  auto joined = std::make_shared<Joined>();
  auto keeper = connect_keeper(config, [joined](SessionState s) {
    std::lock_guard lock(joined->mutex);
    if (!joined->state || s != SessionState::connecting) joined->state = s;
    joined->cv.notify_all();
  });
  std::unique_lock lock(joined->mutex);
  joined->cv.wait_for(lock, 10s,
                      [&] { return joined->state && *joined->state != SessionState::connecting; });
  return {keeper, joined->state};
}

std::string random_guid(std::mt19937_64& rng) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string guid = "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx";
  for (auto& c : guid) {
    if (c == 'x') c = kDigits[rng() % 16];
    else if (c == 'y') c = kDigits[8 + rng() % 4];
  }
  return guid;
}

}  // namespace nemesis_detail

using namespace nemesis_detail;

Nemesis::Nemesis(NemesisTargets targets, std::uint64_t seed, std::vector<std::string> kinds,
                 EventLog& log)
    : targets_(std::move(targets)), rng_(seed), kinds_(std::move(kinds)), log_(log) {}

milliseconds Nemesis::between(milliseconds lo, milliseconds hi) {
  return lo + milliseconds(static_cast<std::int64_t>(
                  rng_() % static_cast<std::uint64_t>((hi - lo).count() + 1)));
}

// The nemesis's schedule: how long a fault lasts, how long the quiet between
// faults is. Not a wait for something to happen.
void Nemesis::pause(milliseconds d, const std::atomic<bool>* stop) {
  const auto until = Clock::now() + d;
  while (Clock::now() < until && !(stop && stop->load()))
    std::this_thread::sleep_for(std::min<Clock::duration>(until - Clock::now(), 50ms));
}

void Nemesis::run_until(Clock::time_point deadline, Clock::time_point overtime,
                        const std::atomic<bool>& stop) {
  if (kinds_.empty()) {
    pause(std::chrono::duration_cast<milliseconds>(deadline - Clock::now()), &stop);
    return;
  }
  // The first round: every kind once, in a seeded order; a kind that could
  // not take effect (no write came by, no worker held a lock) goes to the end
  // of the round again, up to three tries. After it, while a kind has still
  // not taken effect (on a slow machine a worker may seldom hold when one
  // looks), every other fault is one of those, in turn: a run must inject
  // every kind it claims. Past the deadline, only those, until the overtime.
  std::vector<std::string> round = kinds_;
  std::shuffle(round.begin(), round.end(), rng_);
  std::map<std::string, int> tries;
  std::size_t next = 0;
  std::size_t later = 0;  // faults chosen after the first round
  while (!stop) {
    std::vector<std::string> missing;
    for (const auto& k : kinds_)
      if (!injected_.count(k)) missing.push_back(k);
    const auto now = Clock::now();
    const bool in_overtime = now >= deadline;
    if (in_overtime && (missing.empty() || now >= overtime)) break;
    std::string kind;
    if (in_overtime) kind = missing[later++ % missing.size()];
    else if (next < round.size()) kind = round[next++];
    else if (!missing.empty() && later++ % 2 == 0) kind = missing[(later / 2) % missing.size()];
    else kind = kinds_[rng_() % kinds_.size()];
    const auto from = monotonic_ns();
    std::string detail;
    try {
      detail = inject(kind);
    } catch (const std::exception& e) {
      detail = std::string(kNotInjected) + "failed: " + e.what();
      const auto problems = heal_all();
      if (!problems.empty())
        throw std::runtime_error("cannot repair after " + kind + ": " + problems.front());
    }
    const bool effective = !detail.starts_with(kNotInjected);
    log_.write("fault", {{"kind", kind},
                         {"from", std::to_string(from)},
                         {"to", std::to_string(monotonic_ns())},
                         {"effective", effective ? "1" : "0"},
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
  if (kind == "drop_own_watch") return drop_own_watch();
  if (kind == "drop_listing") return drop_listing();
  if (kind == "drop_release") return drop_release();
  if (kind == "pause_supervisor") return pause_supervisor();
  if (kind == "write_revoke") return write_revoke();
  if (kind == "write_held_mark") return write_held_mark();
  if (kind == "write_random_bytes") return write_random_bytes();
  if (kind == "write_large_value") return write_large_value();
  if (kind == "delete_waiter_node") return delete_waiter_node();
  if (kind == "delete_holder_node") return delete_holder_node();
  if (kind == "create_non_lock_child") return create_non_lock_child();
  if (kind == "create_foreign_lock_node") return create_foreign_lock_node();
  if (kind == "delete_leader_node") return delete_leader_node();
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
  return "proxies=" + std::to_string(proxies.size()) +
         ",delay_ms=" + std::to_string(delay.count()) + ",ms=" + std::to_string(d.count());
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

std::vector<Nemesis::LockDir> Nemesis::lock_dirs() {
  std::vector<LockDir> out;
  auto keeper = targets_.observer->keeper();
  auto dirs = keeper->try_children(targets_.lock_root);
  if (!dirs.ok()) return out;
  const auto add = [&](const std::string& path) {
    LockDir d{path, {}};
    auto children = keeper->try_children(d.path);
    if (!children.ok()) return false;  // removed meanwhile
    for (const auto& name : children.value().names)
      if (!lock_sequence(name).empty()) d.nodes.push_back(name);
    std::sort(d.nodes.begin(), d.nodes.end(), [](const auto& a, const auto& b) {
      const auto sa = lock_sequence(a), sb = lock_sequence(b);
      return sa != sb ? sa < sb : a < b;
    });
    const bool semaphore = std::find(children.value().names.begin(), children.value().names.end(),
                                     "leases") != children.value().names.end();
    out.push_back(std::move(d));
    return semaphore;
  };
  for (const auto& dir : dirs.value().names) {
    if (targets_.not_lock_dirs.count(dir)) continue;
    // A semaphore's leases are a level down; the oldest is a holder.
    if (add(targets_.lock_root + "/" + dir)) (void)add(targets_.lock_root + "/" + dir + "/leases");
  }
  return out;
}

std::int64_t Nemesis::owner_of(const std::string& path) {
  try {
    auto keeper = targets_.observer->keeper();
    const auto stat = keeper->exists(path);
    return stat ? stat->ephemeral_owner : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

std::map<std::int64_t, pid_t> Nemesis::worker_sessions() {
  std::map<std::int64_t, pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator(targets_.run_dir)) {
    if (!entry.path().filename().string().starts_with("sessions-")) continue;
    for (const auto& e : read_events(entry.path().string())) {
      unsigned long long id = 0;
      const auto& text = e.get("id");
      std::from_chars(text.data(), text.data() + text.size(), id, 16);
      pid_t pid = 0;
      const auto& p = e.get("pid");
      std::from_chars(p.data(), p.data() + p.size(), pid);
      if (id != 0 && pid > 0) out[static_cast<std::int64_t>(id)] = pid;
    }
  }
  return out;
}

// The holder of a lock is the owner of its first lock node. Known by its
// session, not by what the node says: workers write random holder texts,
// and the nemesis writes into lock nodes.
std::vector<Nemesis::Holder> Nemesis::holders() {
  std::vector<Holder> out;
  const auto sessions = worker_sessions();
  for (const auto& dir : lock_dirs()) {
    if (dir.nodes.empty()) continue;
    const auto path = dir.path + "/" + dir.nodes.front();
    const auto owner = owner_of(path);
    const auto it = sessions.find(owner);
    if (it != sessions.end() && targets_.workers->owns(it->second))
      out.push_back({it->second, owner, path});
  }
  return out;
}

// Whether the worker's own log shows the grant of `node` to pid, and no exit
// of that hold since: the node's owner is first in line, but it is a holder
// only once the lock said so.
bool Nemesis::granted_in_log(const Holder& h) {
  if (!worker_logs_.count(h.pid)) {
    // Each worker's log starts with "start pid=P".
    for (const auto& entry : std::filesystem::directory_iterator(targets_.run_dir)) {
      const auto name = entry.path().filename().string();
      if (!name.starts_with("worker-") || !name.ends_with(".log")) continue;
      std::ifstream in(entry.path());
      std::string first;
      std::getline(in, first);
      if (first.find(" start pid=" + std::to_string(h.pid) + " ") != std::string::npos)
        worker_logs_[h.pid].path = entry.path().string();
    }
  }
  const auto it = worker_logs_.find(h.pid);
  if (it == worker_logs_.end()) return false;
  auto& tail = it->second;
  std::ifstream in(tail.path, std::ios::binary);
  if (!in) return false;
  in.seekg(static_cast<std::streamoff>(tail.offset));
  std::string line;
  // Whole lines only: one the worker is still writing is read next time.
  while (std::getline(in, line) && !in.eof()) {
    tail.offset += line.size() + 1;
    if (line.find_first_not_of(' ') == std::string::npos) continue;
    Event e;
    try {
      e = parse_event(line);
    } catch (const std::invalid_argument&) {
      continue;  // the checker judges the log; here it only finds holders
    }
    if (e.name == "enter") tail.open_holds[e.get("op")] = e.get("nodes");
    else if (e.name == "exit") tail.open_holds.erase(e.get("op"));
    // A latch participant's term (latch_participant.hpp) holds its latch node.
    else if (e.name == "lterm") tail.open_holds["latch:" + e.get("term")] = e.get("node");
    else if (e.name == "lend") tail.open_holds.erase("latch:" + e.get("term"));
  }
  for (const auto& [op, nodes] : tail.open_holds)
    if (nodes.find(h.node) != std::string::npos) return true;
  return false;
}

// A lock holder, stopped (SIGSTOP): a worker whose log shows it was granted
// the first lock node of a directory and has not let go, and whose node is
// still its own after the process stopped (read after a sync: the observer's
// server may lag). Looked for again every 50 ms for up to 5 s (holds are
// short and come often; nothing announces a grant to the nemesis but the
// log). pid 0 if none was caught. Faults aimed at a holder never settle for
// a bystander.
Nemesis::Holder Nemesis::stop_a_holder() {
  const auto until = Clock::now() + 5s;
  while (Clock::now() < until) {
    auto found = holders();
    std::shuffle(found.begin(), found.end(), rng_);
    for (auto& h : found) {
      if (!granted_in_log(h)) continue;
      h.stopped_at = monotonic_ns();
      targets_.workers->signal(h.pid, SIGSTOP);
      if (!wait_stopped(h.pid)) {
        targets_.workers->signal(h.pid, SIGCONT);
        throw std::runtime_error("worker " + std::to_string(h.pid) + " did not stop");
      }
      bool holds = false;
      try {
        holds = targets_.observer->with_retry([&](Keeper& k) {
          k.sync(h.node.substr(0, h.node.rfind('/')));
          const auto stat = k.exists(h.node);
          return stat && stat->ephemeral_owner == h.session;
        }) && granted_in_log(h);
      } catch (const std::exception&) {
      }
      if (holds) return h;
      targets_.workers->signal(h.pid, SIGCONT);
    }
    std::this_thread::sleep_for(50ms);
  }
  return {};
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
  // Held still for the moment the expiry takes (tens of ms), so that it ends
  // a session that holds a lock; it runs on in a session already gone.
  const auto victim = stop_a_holder();
  if (victim.pid == 0) return std::string(kNotInjected) + "no_holder";
  const auto password = session_password(victim.session);
  std::optional<SessionState> state;
  std::int64_t from = 0, to = 0;
  if (!password.empty()) {
    // Join the session from a second handle, then close that handle: the
    // server ends the session for real, as on expiry.
    KeeperConfig config;
    config.hosts = targets_.direct_connect;
    config.session_timeout = targets_.session_timeout;
    config.session_id = victim.session;
    config.session_password = password;
    from = monotonic_ns();
    auto [intruder, joined] = connect_and_wait(config);
    state = joined;
    intruder->close();
    intruder.reset();
    to = monotonic_ns();
  }
  targets_.workers->signal(victim.pid, SIGCONT);
  log_.write("paused", {{"pid", std::to_string(victim.pid)},
                        {"from", std::to_string(victim.stopped_at)},
                        {"to", std::to_string(monotonic_ns())}});
  if (password.empty())
    return std::string(kNotInjected) + "session=" + hex(victim.session) + ",no_password_on_record";
  if (state != SessionState::connected)
    return std::string(kNotInjected) + "session=" + hex(victim.session) +
           ",join_failed=" + std::string(state ? to_string(*state) : "timeout");
  log_.write("cut", {{"pid", std::to_string(victim.pid)},
                     {"why", "expire_session"},
                     {"from", std::to_string(from)},
                     {"to", std::to_string(to)},
                     {"session", hex(victim.session)},
                     {"node", victim.node}});
  return "pid=" + std::to_string(victim.pid) + ",session=" + hex(victim.session) +
         ",node=" + victim.node;
}

std::string Nemesis::kill_worker() {
  const auto victim = stop_a_holder();  // stopped: it cannot let go before the kill
  if (victim.pid == 0) return std::string(kNotInjected) + "no_holder";
  const auto from = monotonic_ns();
  const bool dead = targets_.workers->kill_and_replace(victim.pid);
  const auto to = monotonic_ns();
  log_.write("cut", {{"pid", std::to_string(victim.pid)},
                     {"why", "kill_worker"},
                     {"from", std::to_string(from)},
                     {"to", std::to_string(to)},
                     {"node", victim.node}});
  if (!dead) throw std::runtime_error("worker " + std::to_string(victim.pid) + " survived SIGKILL");
  return "pid=" + std::to_string(victim.pid) + ",node=" + victim.node;
}

std::string Nemesis::pause_worker() {
  const auto victim = stop_a_holder();
  if (victim.pid == 0) return std::string(kNotInjected) + "no_holder";
  // Past the session timeout, with a margin for the server's expiry tick: its
  // session is gone when it runs again, and it has not heard yet.
  const auto stopped = targets_.session_timeout + between(2000ms, 3000ms);
  const auto from = victim.stopped_at;
  log_.write("cut", {{"pid", std::to_string(victim.pid)},
                     {"why", "pause_worker"},
                     {"from", std::to_string(from)},
                     {"to", std::to_string(monotonic_ns())},
                     {"node", victim.node}});
  pause(stopped);
  targets_.workers->signal(victim.pid, SIGCONT);
  log_.write("paused", {{"pid", std::to_string(victim.pid)},
                        {"from", std::to_string(from)},
                        {"to", std::to_string(monotonic_ns())}});
  return "pid=" + std::to_string(victim.pid) + ",stopped_ms=" + std::to_string(stopped.count()) +
         ",node=" + victim.node;
}

std::vector<std::string> Nemesis::heal_all() {
  std::vector<std::string> problems;
  // Nodes of the nemesis's own that a move could not remove.
  for (auto it = leftovers_.begin(); it != leftovers_.end();) {
    try {
      auto keeper = targets_.observer->keeper();
      const auto removed = keeper->try_remove(*it);
      if (removed.ok() || removed.error() == Errc::no_node) {
        it = leftovers_.erase(it);
        continue;
      }
      problems.push_back("removing the nemesis's node " + *it + ": " +
                         std::string(errc_name(removed.error())));
    } catch (const std::exception& e) {
      problems.push_back("removing the nemesis's node " + *it + ": " + e.what());
    }
    ++it;
  }
  for (auto* p : targets_.proxies) {
    p->set_mode(ProxyMode::forward);
    p->disarm_drop_reply();
    p->disarm_drop_request();
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
        if (line.find(" frozen") != std::string::npos)
          targets_.ensemble->run("thaw " + std::to_string(i));
        if (line.find(" dead") != std::string::npos)
          targets_.ensemble->run("restart " + std::to_string(i));
      }
    } catch (const std::exception& e) {
      problems.push_back(std::string("healing server ") + std::to_string(i) + ": " + e.what());
    }
  }
  return problems;
}

}  // namespace zkr::chaos
