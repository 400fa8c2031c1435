#include "nemesis.hpp"

#include <signal.h>

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <stdexcept>
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

std::string hex(std::int64_t id) {
  char text[32];
  std::snprintf(text, sizeof text, "%llx", static_cast<unsigned long long>(id));
  return text;
}

// Opens a session with `config` and waits (up to 10 s) until it is connected
// or refused. Returns the keeper and the state it reached (nullopt: none).
std::pair<std::shared_ptr<Keeper>, std::optional<SessionState>> connect_and_wait(const KeeperConfig& config) {
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
  joined->cv.wait_for(lock, 10s, [&] {
    return joined->state && *joined->state != SessionState::connecting;
  });
  return {keeper, joined->state};
}

// The text after the last "lock-" of a lock node's name (ten digits, or a
// minus and ten once a counter has overflowed), which orders the queue as
// Curator orders it; "" for a child that is not a lock node.
std::string lock_sequence(const std::string& name) {
  const auto at = name.rfind("lock-");
  if (at == std::string::npos) return "";
  const auto seq = name.substr(at + 5);
  if (seq.size() != 10 && !(seq.size() == 11 && seq[0] == '-')) return "";
  for (std::size_t i = seq.size() - 10; i < seq.size(); ++i)
    if (seq[i] < '0' || seq[i] > '9') return "";
  return seq;
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
  if (kind == "write_revoke") return write_revoke();
  if (kind == "write_held_mark") return write_held_mark();
  if (kind == "write_random_bytes") return write_random_bytes();
  if (kind == "write_large_value") return write_large_value();
  if (kind == "delete_waiter_node") return delete_waiter_node();
  if (kind == "delete_holder_node") return delete_holder_node();
  if (kind == "create_non_lock_child") return create_non_lock_child();
  if (kind == "create_foreign_lock_node") return create_foreign_lock_node();
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

std::vector<Nemesis::LockDir> Nemesis::lock_dirs() {
  std::vector<LockDir> out;
  auto keeper = targets_.observer->keeper();
  auto dirs = keeper->try_children(targets_.lock_root);
  if (!dirs.ok()) return out;
  for (const auto& dir : dirs.value().names) {
    if (targets_.not_lock_dirs.count(dir)) continue;
    LockDir d{targets_.lock_root + "/" + dir, {}};
    auto children = keeper->try_children(d.path);
    if (!children.ok()) continue;  // removed meanwhile
    for (const auto& name : children.value().names)
      if (!lock_sequence(name).empty()) d.nodes.push_back(name);
    std::sort(d.nodes.begin(), d.nodes.end(), [](const auto& a, const auto& b) {
      const auto sa = lock_sequence(a), sb = lock_sequence(b);
      return sa != sb ? sa < sb : a < b;
    });
    out.push_back(std::move(d));
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
    if (it != sessions.end() && targets_.workers->owns(it->second)) out.push_back({it->second, owner, path});
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
        worker_logs_[h.pid] = entry.path().string();
    }
  }
  const auto it = worker_logs_.find(h.pid);
  if (it == worker_logs_.end()) return false;
  std::string op;  // the hold of node, while it lasts
  for (const auto& e : read_events(it->second)) {
    if (e.name == "enter" && e.get("nodes").find(h.node) != std::string::npos) op = e.get("op");
    else if (e.name == "exit" && e.get("op") == op) op.clear();
  }
  return !op.empty();
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
  log_.write("paused", {{"pid", std::to_string(victim.pid)}, {"from", std::to_string(victim.stopped_at)},
                        {"to", std::to_string(monotonic_ns())}});
  if (password.empty())
    return std::string(kNotInjected) + "session=" + hex(victim.session) + ",no_password_on_record";
  if (state != SessionState::connected)
    return std::string(kNotInjected) + "session=" + hex(victim.session) + ",join_failed=" +
           std::string(state ? to_string(*state) : "timeout");
  log_.write("cut", {{"pid", std::to_string(victim.pid)}, {"why", "expire_session"},
                     {"from", std::to_string(from)}, {"to", std::to_string(to)},
                     {"session", hex(victim.session)}, {"node", victim.node}});
  return "pid=" + std::to_string(victim.pid) + ",session=" + hex(victim.session) + ",node=" + victim.node;
}

std::string Nemesis::kill_worker() {
  const auto victim = stop_a_holder();  // stopped: it cannot let go before the kill
  if (victim.pid == 0) return std::string(kNotInjected) + "no_holder";
  const auto from = monotonic_ns();
  const bool dead = targets_.workers->kill_and_replace(victim.pid);
  const auto to = monotonic_ns();
  log_.write("cut", {{"pid", std::to_string(victim.pid)}, {"why", "kill_worker"},
                     {"from", std::to_string(from)}, {"to", std::to_string(to)}, {"node", victim.node}});
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
  log_.write("cut", {{"pid", std::to_string(victim.pid)}, {"why", "pause_worker"},
                     {"from", std::to_string(from)}, {"to", std::to_string(monotonic_ns())},
                     {"node", victim.node}});
  pause(stopped);
  targets_.workers->signal(victim.pid, SIGCONT);
  log_.write("paused", {{"pid", std::to_string(victim.pid)}, {"from", std::to_string(from)},
                        {"to", std::to_string(monotonic_ns())}});
  return "pid=" + std::to_string(victim.pid) + ",stopped_ms=" + std::to_string(stopped.count()) +
         ",node=" + victim.node;
}

// ---- Another client's moves (issue 10). Each is legal for any client with
// access to the lock root: ZooKeeper lets it write, delete and create there,
// and Curator itself writes "__REVOKE__" into lock nodes. A lock must stay
// safe through all of them: refuse nothing it need not, grant nobody out of
// turn, and tell a holder whose node is deleted that its lock is lost.

std::shared_ptr<Keeper> Nemesis::foreign_session(std::string& via) {
  KeeperConfig config;
  config.session_timeout = targets_.session_timeout;
  if (targets_.proxies.empty() || rng_() % 2 == 0) {
    config.hosts = targets_.direct_connect;
    via = "direct";
  } else {
    const auto i = rng_() % targets_.proxies.size();
    config.hosts = "127.0.0.1:" + std::to_string(targets_.proxies[i]->port());
    via = "proxy" + std::to_string(i + 1);
  }
  auto [keeper, state] = connect_and_wait(config);
  if (state != SessionState::connected) {
    keeper->close();
    return nullptr;
  }
  // On record before it makes anything: whatever it leaves is not a worker's.
  log_.write("foreign", {{"session", hex(keeper->session_id())}, {"via", via}});
  return keeper;
}

void Nemesis::end_foreign_session(const std::shared_ptr<Keeper>& keeper, const std::vector<std::string>& made) {
  for (const auto& path : made) {
    const auto removed = keeper->try_remove(path);
    if (!removed.ok() && removed.error() != Errc::no_node) leftovers_.push_back(path);
  }
  keeper->close();  // the server deletes its ephemeral nodes, if any are left
}

std::string Nemesis::write_into_lock_node(const std::string& data, bool middle, bool then_delete) {
  struct Target {
    std::string path;
    std::string role;
    std::string before;  // the node before it, "" for a holder
  };
  std::vector<Target> waiters, middles, holders;
  for (const auto& d : lock_dirs()) {
    for (std::size_t i = 0; i < d.nodes.size(); ++i) {
      const auto path = d.path + "/" + d.nodes[i];
      if (i == 0) {
        holders.push_back({path, "holder", ""});
        continue;
      }
      const auto before = d.path + "/" + d.nodes[i - 1];
      waiters.push_back({path, "waiter", before});
      if (i + 1 < d.nodes.size()) middles.push_back({path, "waiter_with_successor", before});
    }
  }
  const std::vector<Target>* from = nullptr;
  if (middle && !middles.empty()) from = &middles;
  else if (!waiters.empty() && (holders.empty() || rng_() % 2 == 0)) from = &waiters;
  else if (!holders.empty()) from = &holders;
  if (!from) return std::string(kNotInjected) + "no_lock_node";
  const auto target = (*from)[rng_() % from->size()];
  std::string via;
  const auto keeper = foreign_session(via);
  if (!keeper) return std::string(kNotInjected) + "foreign_session_failed";
  const auto written = keeper->try_set(target.path, data);
  std::string deleted;
  if (written.ok() && then_delete && !target.before.empty()) {
    // Long enough for its successor to be told of the change and read the
    // data (a get, a round trip); then the node goes, as when its contender
    // gives up, while the node before it (perhaps the live holder) stays.
    pause(between(100ms, 400ms));
    const auto result = keeper->try_multi({op::Check{target.before, kAnyVersion}, op::Remove{target.path, kAnyVersion}});
    deleted = result.ok() ? ",then_deleted=1" : ",then_deleted=0";
  }
  end_foreign_session(keeper, {});
  if (!written.ok())
    return std::string(kNotInjected) + "path=" + target.path + ",err=" + std::string(errc_name(written.error()));
  return "path=" + target.path + ",target=" + target.role + ",bytes=" + std::to_string(data.size()) + deleted +
         ",via=" + via;
}

// Curator's revocation request: a lock that does not support it ignores it.
std::string Nemesis::write_revoke() { return write_into_lock_node("__REVOKE__", false, false); }

// The library's former hand-off mark, which anyone could write: a successor
// that trusts it skips the nodes before the marked one, live holder included,
// and takes the lock as soon as the marked node goes. Half the time the
// marked waiting node is then deleted (checked atomically to be still behind
// another), so that it goes while the holder still holds.
std::string Nemesis::write_held_mark() {
  const std::string data = rng_() % 2 == 0 ? "\nheld" : "pid=1;slot=0\nheld";
  const bool middle = rng_() % 4 != 0;
  return write_into_lock_node(data, middle, rng_() % 2 == 0);
}

std::string Nemesis::write_random_bytes() {
  std::string data(1 + rng_() % 256, '\0');
  for (auto& c : data) c = static_cast<char>(rng_() % 256);
  return write_into_lock_node(data, false, false);
}

// Half of ZooKeeper's default 1 MiB limit: every reader of the node gets it.
std::string Nemesis::write_large_value() {
  std::string data(512 * 1024, ' ');
  for (auto& c : data) c = static_cast<char>('a' + rng_() % 26);
  return write_into_lock_node(data, false, false);
}

// A waiting node deleted: its contender must requeue or fail, never be
// granted out of turn. Atomic with a check that the node before it is still
// there, so the victim cannot have become the holder meanwhile (deleting a
// holder's node is delete_holder_node, which the checker must know about).
std::string Nemesis::delete_waiter_node() {
  std::vector<std::pair<std::string, std::string>> victims;  // (node, the node before it)
  for (const auto& d : lock_dirs())
    for (std::size_t i = 1; i < d.nodes.size(); ++i)
      victims.emplace_back(d.path + "/" + d.nodes[i], d.path + "/" + d.nodes[i - 1]);
  if (victims.empty()) return std::string(kNotInjected) + "no_waiter";
  const auto [victim, before] = victims[rng_() % victims.size()];
  const auto owner = owner_of(victim);
  const auto sessions = worker_sessions();
  const auto pid = sessions.count(owner) ? sessions.at(owner) : 0;
  std::string via;
  const auto keeper = foreign_session(via);
  if (!keeper) return std::string(kNotInjected) + "foreign_session_failed";
  const auto result = keeper->try_multi({op::Check{before, kAnyVersion}, op::Remove{victim, kAnyVersion}});
  end_foreign_session(keeper, {});
  if (!result.ok())
    return std::string(kNotInjected) + "path=" + victim + ",err=" + std::string(errc_name(result.error)) +
           ",failed_op=" + std::to_string(result.failed_index());
  return "path=" + victim + ",pid=" + std::to_string(pid) + ",before=" + before + ",via=" + via;
}

// The holder's node deleted: an "administrator" breaking the lock. Its
// holder's lease must say lost (node_deleted) and its writes be refused; the
// lock may go to the next in line at once. Half the time the node gets
// Curator's revocation data first: a lock that watches its node for data
// changes and does not watch again would then miss the deletion.
std::string Nemesis::delete_holder_node() {
  // A holder the worker's log shows granted (a first node whose grant is
  // still on its way is a waiter's, not a holder's), waited for as in
  // stop_a_holder; not stopped: it goes on as any holder whose node is deleted.
  Holder victim;
  for (const auto until = Clock::now() + 5s; victim.pid == 0 && Clock::now() < until;) {
    auto found = holders();
    std::shuffle(found.begin(), found.end(), rng_);
    for (const auto& h : found)
      if (granted_in_log(h)) {
        victim = h;
        break;
      }
    if (victim.pid == 0) std::this_thread::sleep_for(50ms);
  }
  if (victim.pid == 0) return std::string(kNotInjected) + "no_holder";
  std::string via;
  const auto keeper = foreign_session(via);
  if (!keeper) return std::string(kNotInjected) + "foreign_session_failed";
  const bool revoke_first = rng_() % 2 == 0;
  if (revoke_first) (void)keeper->try_set(victim.node, "__REVOKE__");
  const auto from = monotonic_ns();
  const auto removed = keeper->try_remove(victim.node);
  // An unknown outcome (the link failed): the node says what happened. (If
  // even that cannot be learnt, the move failed: inject() heals and goes on.)
  const bool gone = removed.ok() || (removed.error() != Errc::no_node && !targets_.observer->with_retry([&](Keeper& k) {
                                       return k.exists(victim.node).has_value();
                                     }));
  const auto to = monotonic_ns();
  end_foreign_session(keeper, {});
  if (!gone)
    return std::string(kNotInjected) + "path=" + victim.node + ",err=" + std::string(errc_name(removed.error()));
  log_.write("cut", {{"pid", std::to_string(victim.pid)}, {"why", "delete_holder_node"},
                     {"from", std::to_string(from)}, {"to", std::to_string(to)}, {"node", victim.node}});
  return "path=" + victim.node + ",pid=" + std::to_string(victim.pid) +
         ",revoke_first=" + (revoke_first ? "1" : "0") + ",via=" + via;
}

// Children that are not lock nodes: an operator's note, a name that sorts
// before every lock node (Curator, which sorts by the whole name when there
// is no "lock-", would let it block the queue), a name with "lock-" but no
// sequence. Ephemeral or persistent; removed when the move ends.
std::string Nemesis::create_non_lock_child() {
  static const std::vector<std::string> kNames = {"zzz-not-a-lock", "aaa", "0-sorts-first",
                                                  "x-lock-not-a-sequence"};
  const auto dirs = lock_dirs();
  if (dirs.empty()) return std::string(kNotInjected) + "no_lock_directory";
  const auto path = dirs[rng_() % dirs.size()].path + "/" + kNames[rng_() % kNames.size()];
  const bool ephemeral = rng_() % 2 == 0;
  std::string via;
  const auto keeper = foreign_session(via);
  if (!keeper) return std::string(kNotInjected) + "foreign_session_failed";
  log_.write("foreign", {{"path", path}, {"session", hex(keeper->session_id())}});
  const auto created = keeper->try_create(path, "not a lock", ephemeral ? CreateMode::ephemeral : CreateMode::persistent);
  if (!created.ok()) {
    end_foreign_session(keeper, {});
    return std::string(kNotInjected) + "path=" + path + ",err=" + std::string(errc_name(created.error()));
  }
  const auto kept = between(500ms, 2500ms);
  pause(kept);
  end_foreign_session(keeper, {path});
  return "path=" + path + ",mode=" + (ephemeral ? "ephemeral" : "persistent") + ",via=" + via +
         ",kept_ms=" + std::to_string(kept.count());
}

// A lock node of another client (Curator's name, a session of its own): a
// contender like any other, which the workers must wait for. Either first in
// line whatever the directory's counter ("-lock-0000000000", made without
// the sequential flag) or sequential at the end of the queue. Removed (and
// its session closed) when the move ends, so that it blocks nobody for good.
std::string Nemesis::create_foreign_lock_node() {
  const auto dirs = lock_dirs();
  if (dirs.empty()) return std::string(kNotInjected) + "no_lock_directory";
  const auto dir = dirs[rng_() % dirs.size()].path;
  const bool first = rng_() % 2 == 0;
  const auto name = "_c_" + random_guid(rng_) + "-lock-" + (first ? "0000000000" : "");
  std::string via;
  const auto keeper = foreign_session(via);
  if (!keeper) return std::string(kNotInjected) + "foreign_session_failed";
  const auto created = keeper->try_create(dir + "/" + name, "foreign",
                                          first ? CreateMode::ephemeral : CreateMode::ephemeral_sequential);
  if (!created.ok()) {
    end_foreign_session(keeper, {});
    return std::string(kNotInjected) + "dir=" + dir + ",err=" + std::string(errc_name(created.error()));
  }
  const auto path = created.value().path;
  log_.write("foreign", {{"path", path}, {"session", hex(keeper->session_id())}});
  const auto kept = between(500ms, 2500ms);
  pause(kept);
  end_foreign_session(keeper, {path});
  return "path=" + path + ",first=" + (first ? "1" : "0") + ",via=" + via + ",kept_ms=" + std::to_string(kept.count());
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
      problems.push_back("removing the nemesis's node " + *it + ": " + std::string(errc_name(removed.error())));
    } catch (const std::exception& e) {
      problems.push_back("removing the nemesis's node " + *it + ": " + e.what());
    }
    ++it;
  }
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
