// Connection drops aimed at one request of one worker: the Nemesis's
// drop_own_watch, drop_listing and drop_release. The proxy resets the
// worker's connection when it sees the request, before the server does: the
// request is lost with the link, so the C client answers it with connection
// loss, and a watch it asked for is never set. See nemesis.hpp.
#include <algorithm>
#include <thread>

#include "nemesis.hpp"
#include "nemesis_detail.hpp"

namespace zkr::chaos {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using namespace nemesis_detail;

// Arms every proxy (the session may move to any server) for the next request
// of `kind` from `session` on a lock's node, waits up to `wait` for one to be
// dropped, and disarms. Returns "proxy=N,opcode O xid X path P", or "" if none
// came. Only under the lock root: a worker's session also serves its leader
// latch participant, whose requests the checker does not judge as a lock's.
std::string Nemesis::drop_request(std::int64_t session, RequestKind kind,
                                  std::chrono::milliseconds wait) {
  for (auto* p : targets_.proxies) p->arm_drop_request(session, kind, targets_.lock_root + "/");
  std::string what;
  for (const auto until = Clock::now() + wait; what.empty() && Clock::now() < until;) {
    for (std::size_t j = 0; j < targets_.proxies.size() && what.empty(); ++j)
      if (const auto d = targets_.proxies[j]->dropped(); !d.empty())
        what = "proxy=" + std::to_string(j + 1) + "," + d;
    if (what.empty()) std::this_thread::sleep_for(25ms);
  }
  for (auto* p : targets_.proxies) p->disarm_drop_request();
  return what;
}

// The own-node watch is the lease's only news of a deletion. Dropped, the
// lock must arm it again (or learn its node's fate otherwise) before it
// counts the grant as safe. So the move does not stop at the drop: once the
// worker's log shows the grant of that node, the node is deleted by a foreign
// client, as delete_holder_node does; the lease must still say lost
// (lost_unnoticed) and fencing refuse later writes (late_write). The session
// of a worker that has a lock node now (so it is live and at work): each
// acquire that has to wait, or is granted at once, arms the watch. A drop
// whose node is never granted (the acquire timed out, or it was a
// semaphore's inner lock, which no grant names) is tried again, up to three
// times.
std::string Nemesis::drop_own_watch() {
  std::string tried;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const auto sessions = worker_sessions();
    std::vector<std::pair<std::int64_t, pid_t>> busy;
    for (const auto& d : lock_dirs())
      for (const auto& n : d.nodes)
        if (const auto it = sessions.find(owner_of(d.path + "/" + n));
            it != sessions.end() && targets_.workers->owns(it->second))
          busy.emplace_back(it->first, it->second);
    if (busy.empty()) return std::string(kNotInjected) + "no_worker" + tried;
    const auto [session, pid] = busy[rng_() % busy.size()];
    const auto what = drop_request(session, RequestKind::own_watch, 10s);
    const std::string dropped =
        "session=" + hex(session) + ",pid=" + std::to_string(pid) + "," + what;
    if (what.empty()) {
      tried += ",no_request_seen:" + hex(session);
      continue;
    }
    const auto node = what.substr(what.rfind(" path ") + 6);
    const Holder h{pid, session, node, 0};
    // Granted while it is still the session's: an acquire's deadline is at
    // most 6 s.
    bool granted = false;
    for (const auto until = Clock::now() + 8s; !granted && Clock::now() < until;) {
      granted = granted_in_log(h) && owner_of(node) == session;
      if (!granted) std::this_thread::sleep_for(50ms);
    }
    if (!granted) {
      tried += ",never_granted:" + node;
      continue;
    }
    std::string via;
    const auto keeper = foreign_session(via);
    if (!keeper) return std::string(kNotInjected) + "foreign_session_failed," + dropped + tried;
    const auto from = monotonic_ns();
    const auto removed = keeper->try_remove(node);
    const bool gone =
        removed.ok() ||
        (removed.error() != Errc::no_node &&
         !targets_.observer->with_retry([&](Keeper& k) { return k.exists(node).has_value(); }));
    const auto to = monotonic_ns();
    end_foreign_session(keeper, {});
    if (!gone)
      return std::string(kNotInjected) +
             "delete_failed,err=" + std::string(errc_name(removed.error())) + "," + dropped + tried;
    log_.write("cut", {{"pid", std::to_string(pid)},
                       {"why", "drop_own_watch"},
                       {"from", std::to_string(from)},
                       {"to", std::to_string(to)},
                       {"node", node}});
    return dropped + ",deleted_via=" + via + tried;
  }
  return std::string(kNotInjected) + "three_tries" + tried;
}

// A waiter's listing: the one that decides its grant once the node before it
// goes (or the first, after its create). Lost, the lock must list again, not
// grant on the deletion event alone.
std::string Nemesis::drop_listing() {
  const auto sessions = worker_sessions();
  std::vector<std::pair<std::int64_t, pid_t>> waiters;
  for (const auto& d : lock_dirs())
    for (std::size_t i = 1; i < d.nodes.size(); ++i)
      if (const auto it = sessions.find(owner_of(d.path + "/" + d.nodes[i]));
          it != sessions.end() && targets_.workers->owns(it->second))
        waiters.emplace_back(it->first, it->second);
  if (waiters.empty()) return std::string(kNotInjected) + "no_waiter";
  const auto [session, pid] = waiters[rng_() % waiters.size()];
  const auto what = drop_request(session, RequestKind::listing, 10s);
  const std::string who = "session=" + hex(session) + ",pid=" + std::to_string(pid);
  if (what.empty()) return std::string(kNotInjected) + "no_request_seen," + who;
  return who + "," + what;
}

// A holder's release: its delete never reaches the server, so the node lives
// on in a session that lives too; the lock must delete it again (or leave it
// to its background remover), or the key stays locked for ever (orphans).
std::string Nemesis::drop_release() {
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
  const auto what = drop_request(victim.session, RequestKind::release, 10s);
  const std::string who = "session=" + hex(victim.session) + ",pid=" + std::to_string(victim.pid) +
                          ",holding=" + victim.node;
  if (what.empty()) return std::string(kNotInjected) + "no_request_seen," + who;
  return who + "," + what;
}

}  // namespace zkr::chaos
