// Another client's legal moves on the lock directories: the
// Nemesis's write_*, delete_* and create_* faults. See nemesis.hpp.
#include <algorithm>
#include <thread>

#include "nemesis.hpp"
#include "nemesis_detail.hpp"

namespace zkr::chaos {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using namespace nemesis_detail;

// ---- Another client's moves. Each is legal for any client with
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

void Nemesis::end_foreign_session(const std::shared_ptr<Keeper>& keeper,
                                  const std::vector<std::string>& made) {
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
    const auto result = keeper->try_multi(
        {op::Check{target.before, kAnyVersion}, op::Remove{target.path, kAnyVersion}});
    deleted = result.ok() ? ",then_deleted=1" : ",then_deleted=0";
  }
  end_foreign_session(keeper, {});
  if (!written.ok())
    return std::string(kNotInjected) + "path=" + target.path +
           ",err=" + std::string(errc_name(written.error()));
  return "path=" + target.path + ",target=" + target.role +
         ",bytes=" + std::to_string(data.size()) + deleted + ",via=" + via;
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
  const auto result =
      keeper->try_multi({op::Check{before, kAnyVersion}, op::Remove{victim, kAnyVersion}});
  end_foreign_session(keeper, {});
  if (!result.ok())
    return std::string(kNotInjected) + "path=" + victim +
           ",err=" + std::string(errc_name(result.error)) +
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
  const bool gone = removed.ok() || (removed.error() != Errc::no_node &&
                                     !targets_.observer->with_retry([&](Keeper& k) {
                                       return k.exists(victim.node).has_value();
                                     }));
  const auto to = monotonic_ns();
  end_foreign_session(keeper, {});
  if (!gone)
    return std::string(kNotInjected) + "path=" + victim.node +
           ",err=" + std::string(errc_name(removed.error()));
  log_.write("cut", {{"pid", std::to_string(victim.pid)},
                     {"why", "delete_holder_node"},
                     {"from", std::to_string(from)},
                     {"to", std::to_string(to)},
                     {"node", victim.node}});
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
  const auto created = keeper->try_create(
      path, "not a lock", ephemeral ? CreateMode::ephemeral : CreateMode::persistent);
  if (!created.ok()) {
    end_foreign_session(keeper, {});
    return std::string(kNotInjected) + "path=" + path +
           ",err=" + std::string(errc_name(created.error()));
  }
  const auto kept = between(500ms, 2500ms);
  pause(kept);
  end_foreign_session(keeper, {path});
  return "path=" + path + ",mode=" + (ephemeral ? "ephemeral" : "persistent") + ",via=" + via +
         ",kept_ms=" + std::to_string(kept.count());
}

// A lock node of another client (a session of its own). Curator's name: a
// contender like any other, which the workers must wait for. kazoo's
// (Python: `<uuid hex>__lock__`, its ReadLock's `__rlock__`): a protocol that
// does not see ours, which makes the workers refuse the path while it lives.
// Either first in line whatever the directory's counter ("0000000000", made
// without the sequential flag) or sequential at the end of the queue.
// Removed (and its session closed) when the move ends, so that it blocks
// nobody for good.
std::string Nemesis::create_foreign_lock_node() {
  const auto dirs = lock_dirs();
  if (dirs.empty()) return std::string(kNotInjected) + "no_lock_directory";
  const auto dir = dirs[rng_() % dirs.size()].path;
  const bool first = rng_() % 2 == 0;
  const auto protocol = rng_() % 4;  // Curator half the time, kazoo's two kinds the rest
  std::string name;
  if (protocol < 2) {
    name = "_c_" + random_guid(rng_) + "-lock-";
  } else {
    name = random_guid(rng_);
    std::erase(name, '-');  // uuid4().hex
    name += protocol == 2 ? "__lock__" : "__rlock__";
  }
  if (first) name += "0000000000";
  std::string via;
  const auto keeper = foreign_session(via);
  if (!keeper) return std::string(kNotInjected) + "foreign_session_failed";
  const auto created =
      keeper->try_create(dir + "/" + name, "foreign",
                         first ? CreateMode::ephemeral : CreateMode::ephemeral_sequential);
  if (!created.ok()) {
    end_foreign_session(keeper, {});
    return std::string(kNotInjected) + "dir=" + dir +
           ",err=" + std::string(errc_name(created.error()));
  }
  const auto path = created.value().path;
  log_.write("foreign", {{"path", path}, {"session", hex(keeper->session_id())}});
  const auto kept = between(500ms, 2500ms);
  pause(kept);
  end_foreign_session(keeper, {path});
  return "path=" + path + ",first=" + (first ? "1" : "0") + ",via=" + via +
         ",kept_ms=" + std::to_string(kept.count());
}

}  // namespace zkr::chaos
