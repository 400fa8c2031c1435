// The in-memory ZooKeeper: see fake_keeper.hpp for what it models.
//
// Everything lives in fake::Server under one mutex. A request is applied the
// moment it is sent (the server sees requests in the order they arrive), and
// its reply is queued; a change queues the watch events it fires at once. One
// event thread delivers the queue in order, without the mutex, so that any
// callback may send requests again. That single queue is what gives
// ZooKeeper's ordering: replies in request order, and an event before the reply
// to any request that was applied after the change.
#include "support/fake_keeper.hpp"

#include "support/failure.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <utility>

#include "keeper_arguments.hpp"

namespace zkr::test {
namespace fake {
namespace {

using WallClock = std::chrono::system_clock;
using std::chrono::milliseconds;

std::int64_t to_ms(WallClock::time_point t) {
  return std::chrono::duration_cast<milliseconds>(t.time_since_epoch()).count();
}

// The server marks containers and TTL nodes in the ephemeral owner it
// stores, but hides the mark from clients: their stats say 0, as for any
// persistent node (measured against ZooKeeper 3.8). The fake does the same,
// so no recipe can come to rely on the mark.

// Like real session ids: the server id (1) in the top byte, a counter below.
constexpr std::int64_t kFirstSessionId = std::int64_t{1} << 56;

const std::string kHost = "fake:2181";

enum class Kind { persistent, ephemeral, container, ttl };

struct Node {
  std::string data;
  Stat stat;
  AclList acl;
  Kind kind = Kind::persistent;
  milliseconds ttl{0};
  std::set<std::string> children;
};
using Tree = std::map<std::string, Node, std::less<>>;

// The parent of a path, or of a sequential prefix ("/a/x-" and "/a/" -> "/a").
std::string parent_of(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == 0 ? std::string("/") : std::string(path.substr(0, slash));
}
std::string name_of(std::string_view path) { return std::string(path.substr(path.rfind('/') + 1)); }

bool is_reserved(std::string_view path) {
  return path == "/zookeeper" || path.starts_with("/zookeeper/");
}

// The server keeps children in a hash set and sends them in its order. Ours is
// another hash order: unsorted, stable within a build.
std::vector<std::string> in_hash_order(const std::set<std::string>& names) {
  std::vector<std::string> out(names.begin(), names.end());
  const std::hash<std::string> hash;
  std::stable_sort(out.begin(), out.end(),
                   [&](const std::string& a, const std::string& b) { return hash(a) < hash(b); });
  return out;
}

// One change made by a write, for the watches it fires once the write commits.
struct Change {
  EventType type;  // created, deleted or changed
  std::string path;
};

// One write transaction: a zxid, a time, and its changes in order.
struct Txn {
  std::int64_t zxid = 0;
  std::int64_t time_ms = 0;
  std::vector<Change> changes;
};

struct NewNode {
  std::string path;  // for a sequential node, the prefix
  bool sequential = false;
  std::string data;
  Kind kind = Kind::persistent;
  std::int64_t owner = 0;
  milliseconds ttl{0};
  AclList acl;
};

// The tree operations. They check in the order of the server's
// PrepRequestProcessor, so that the first applicable error is the one reported.

// The server's cversion is a Java int: past 2^31 - 1 it wraps to -2^31, and
// the next sequential child is named "-2147483648" (%010d of a negative).
Version next_cversion(Version v) {
  return static_cast<Version>(static_cast<std::uint32_t>(v) + 1u);
}

Errc create_node(Tree& tree, Txn& txn, NewNode n, std::string& created, Stat& stat) {
  const auto parent = tree.find(parent_of(n.path));
  if (parent == tree.end()) return Errc::no_node;
  if (n.sequential) {
    // The parent's cversion counts children created and deleted, so numbers
    // leave gaps, and a re-created parent starts again from 0.
    char suffix[16];
    std::snprintf(suffix, sizeof suffix, "%010d", static_cast<int>(parent->second.stat.cversion));
    n.path += suffix;
  }
  if (tree.contains(n.path)) return Errc::node_exists;
  if (parent->second.kind == Kind::ephemeral) return Errc::no_children_for_ephemerals;

  Node node;
  node.stat.czxid = node.stat.mzxid = node.stat.pzxid = txn.zxid;
  node.stat.ctime = node.stat.mtime = txn.time_ms;
  node.stat.ephemeral_owner = n.owner;
  node.stat.data_length = static_cast<std::int32_t>(n.data.size());
  node.data = std::move(n.data);
  node.acl = std::move(n.acl);
  node.kind = n.kind;
  node.ttl = n.ttl;

  Node& p = parent->second;
  p.children.insert(name_of(n.path));
  p.stat.cversion = next_cversion(p.stat.cversion);
  p.stat.pzxid = txn.zxid;
  p.stat.num_children = static_cast<std::int32_t>(p.children.size());

  stat = node.stat;
  created = n.path;
  tree.emplace(n.path, std::move(node));
  txn.changes.push_back({EventType::created, created});
  return Errc::ok;
}

Errc remove_node(Tree& tree, Txn& txn, const std::string& path, Version version) {
  if (path == "/") return Errc::bad_arguments;
  const auto it = tree.find(path);
  if (it == tree.end()) return Errc::no_node;
  if (version != kAnyVersion && version != it->second.stat.version) return Errc::bad_version;
  if (!it->second.children.empty()) return Errc::not_empty;
  Node& p = tree.find(parent_of(path))->second;
  p.children.erase(name_of(path));
  p.stat.cversion = next_cversion(p.stat.cversion);
  p.stat.pzxid = txn.zxid;
  p.stat.num_children = static_cast<std::int32_t>(p.children.size());
  tree.erase(it);
  txn.changes.push_back({EventType::deleted, path});
  return Errc::ok;
}

Errc set_node(Tree& tree, Txn& txn, const std::string& path, std::string data, Version version,
              Stat& stat) {
  const auto it = tree.find(path);
  if (it == tree.end()) return Errc::no_node;
  Node& node = it->second;
  if (version != kAnyVersion && version != node.stat.version) return Errc::bad_version;
  node.stat.data_length = static_cast<std::int32_t>(data.size());
  node.data = std::move(data);
  node.stat.version = next_cversion(node.stat.version);  // a Java int too: it wraps
  node.stat.mzxid = txn.zxid;
  node.stat.mtime = txn.time_ms;
  stat = node.stat;
  txn.changes.push_back({EventType::changed, path});
  return Errc::ok;
}

Errc check_node(const Tree& tree, const std::string& path, Version version) {
  const auto it = tree.find(path);
  if (it == tree.end()) return Errc::no_node;
  if (version != kAnyVersion && version != it->second.stat.version) return Errc::bad_version;
  return Errc::ok;
}

}  // namespace

// One watch set by one request. It is delivered exactly once (its event, or
// session_ended), unless its reply was lost: then the client never armed it.
struct WatchReg {
  enum class State {
    armed,   // in a watch table, waiting for a change
    held,    // fired while the session was disconnected: in Session::held
    queued,  // its delivery is in the event queue
    done,    // delivered, or dropped because its reply was lost
  };
  Watcher watcher;
  std::string path;            // as the client named it: every event of this watch carries it
  State state = State::armed;  // guarded by Server::mu_
};
using Reg = std::shared_ptr<WatchReg>;

struct Session {
  // Set when connecting, constant after.
  std::int64_t id = 0;
  std::string password;
  std::string chroot;  // "" or "/app"
  AclList default_acl;
  milliseconds timeout{0};
  SessionCallback on_state;

  // Guarded by Server::mu_.
  SessionState state = SessionState::connected;
  // One entry per link break, with the code that a reply still undelivered at
  // that break gets instead of its value. A reply remembers breaks.size() when
  // it is queued.
  std::vector<Errc> breaks;
  std::vector<Reg> outstanding;                  // watches not yet done, oldest first
  std::vector<std::pair<Reg, WatchEvent>> held;  // fired while disconnected

  std::string to_server(const std::string& path) const {
    if (chroot.empty()) return path;
    return path == "/" ? chroot : chroot + path;
  }
  std::string to_client(const std::string& path) const {
    if (chroot.empty()) return path;
    return path.size() == chroot.size() ? std::string("/") : path.substr(chroot.size());
  }
};

class Server : public std::enable_shared_from_this<Server> {
 public:
  Server() {
    // A fresh server holds "/" and the reserved /zookeeper subtree.
    tree_["/"];
    Txn txn;
    std::string created;
    Stat stat;
    for (const char* path : {"/zookeeper", "/zookeeper/quota"}) {
      NewNode n;
      n.path = path;
      n.acl = open_acl_unsafe();
      create_node(tree_, txn, std::move(n), created, stat);
    }
    // The server links these in directly, so "/" starts with cversion 0 and
    // the first sequential child of "/" is numbered 0000000000.
    for (auto& [path, node] : tree_) node.stat.cversion = 0;
  }

  // ---- The event thread.

  void run_events() {
    std::unique_lock lock(mu_);
    event_thread_ = std::this_thread::get_id();
    for (;;) {
      work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) break;
      Task task = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
      running_session_ = task.session;
      lock.unlock();
      task.run();
      // Destroying the task may drop the last reference to a keeper, whose
      // destructor takes the lock: do it before taking it again.
      task = {};
      lock.lock();
      running_ = false;
      running_session_ = nullptr;
      idle_cv_.notify_all();
    }
    stopped_ = true;
    idle_cv_.notify_all();
  }

  // The ensemble is going away: replies still queued become closing, nothing
  // more reaches user code from the event thread, and it stops once drained.
  void shutdown() {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (auto& [id, s] : sessions_) s->breaks.push_back(Errc::closing);
    work_cv_.notify_all();
  }

  bool wait_idle(milliseconds timeout) {
    std::unique_lock lock(mu_);
    if (std::this_thread::get_id() == event_thread_)
      throw std::logic_error(
          "FakeEnsemble::wait_idle called on the event thread: it would wait for itself");
    return idle_cv_.wait_for(lock, timeout,
                             [&] { return stopped_ || (queue_.empty() && !running_); });
  }

  // ---- Sessions.

  std::shared_ptr<FakeKeeper> connect(const KeeperConfig& config, SessionCallback on_state) {
    if (config.session_id != 0)
      throw std::invalid_argument("FakeEnsemble: joining a session by id is not modelled");
    detail::check_chroot(config.chroot);
    auto s = std::make_shared<Session>();
    s->chroot = config.chroot == "/" ? "" : config.chroot;
    s->default_acl = config.default_acl;
    s->timeout = config.session_timeout;
    s->on_state = std::move(on_state);
    {
      std::lock_guard lock(mu_);
      s->id = kFirstSessionId + ++sessions_opened_;
      s->password = "fake-password-" + std::to_string(s->id);
      if (stopping_) {
        s->state = SessionState::closed;
      } else {
        ++zxid_;  // createSession is a transaction too
        sessions_[s->id] = s;
        post_state(s, SessionState::connected);
      }
    }
    return std::shared_ptr<FakeKeeper>(new FakeKeeper(shared_from_this(), std::move(s)));
  }

  SessionState state_of(const Session& s) const {
    std::lock_guard lock(mu_);
    return s.state;
  }

  void expire(std::int64_t id) {
    std::lock_guard lock(mu_);
    const auto s = live_session(id);
    if (!s) return;
    s->state = SessionState::expired;
    s->breaks.push_back(Errc::session_expired);
    post_state(s, SessionState::expired);
    // Armed and held watches end; those already queued keep their event, which
    // the client had received before it heard of the expiry.
    for (const Reg& reg : s->outstanding) {
      if (reg->state == WatchReg::State::armed || reg->state == WatchReg::State::held)
        post_event(s, reg, {EventType::session_ended, reg->path});
    }
    s->held.clear();
    remove_ephemerals(s->id);
  }

  void disconnect(std::int64_t id) {
    std::lock_guard lock(mu_);
    const auto s = live_session(id);
    if (!s || s->state != SessionState::connected) return;
    s->state = SessionState::connecting;
    s->breaks.push_back(Errc::connection_loss);
    post_state(s, SessionState::connecting);
  }

  void reconnect(std::int64_t id) {
    std::lock_guard lock(mu_);
    const auto s = live_session(id);
    if (!s || s->state != SessionState::connecting) return;
    s->state = SessionState::connected;
    post_state(s, SessionState::connected);
    for (auto& [reg, event] : s->held) {
      if (reg->state == WatchReg::State::held) post_event(s, reg, std::move(event));
    }
    s->held.clear();
  }

  // The keeper is destroyed. Done on the calling thread, like CKeeper's close.
  void close(const std::shared_ptr<Session>& s) {
    std::vector<Reg> ending;
    {
      std::unique_lock lock(mu_);
      if (s->state == SessionState::closed) return;
      const bool live = s->state == SessionState::connected || s->state == SessionState::connecting;
      s->state = SessionState::closed;  // from now on the event thread skips its callbacks
      s->breaks.push_back(Errc::closing);
      for (const Reg& reg : s->outstanding) {
        reg->state = WatchReg::State::done;
        ending.push_back(reg);
      }
      s->outstanding.clear();
      s->held.clear();
      sessions_.erase(s->id);
      if (live && !stopping_) remove_ephemerals(s->id);
      // A callback of this session may be running on the event thread; wait for
      // it, unless it is the one destroying us.
      if (std::this_thread::get_id() != event_thread_)
        idle_cv_.wait(lock, [&] { return running_session_ != s.get(); });
    }
    for (const Reg& reg : ending) reg->watcher({EventType::session_ended, reg->path});
    if (s->on_state) s->on_state(SessionState::closed);
  }

  // ---- Requests. Each is applied at once, under the lock; its reply is queued.

  void create(const std::shared_ptr<Session>& s, const std::string& path, std::string data,
              CreateMode mode, CreateOptions options, ReplyHandler<Result<Created>> on_reply) {
    request<Result<Created>>(s, std::move(on_reply), path, [&](Reg&) -> Result<Created> {
      Txn txn = begin_txn();
      std::string created;
      Stat stat;
      const Errc e = create_node(tree_, txn, new_node(*s, path, std::move(data), mode, options),
                                 created, stat);
      if (e != Errc::ok) return {e, path};
      fire(txn.changes);
      return Created{s->to_client(created), stat};
    });
  }

  void remove(const std::shared_ptr<Session>& s, const std::string& path, Version version,
              ReplyHandler<Result<Empty>> on_reply) {
    request<Result<Empty>>(s, std::move(on_reply), path, [&](Reg&) -> Result<Empty> {
      Txn txn = begin_txn();
      const Errc e = remove_node(tree_, txn, s->to_server(path), version);
      if (e != Errc::ok) return {e, path};
      fire(txn.changes);
      return Empty{};
    });
  }

  void set(const std::shared_ptr<Session>& s, const std::string& path, std::string data,
           Version version, ReplyHandler<Result<Stat>> on_reply) {
    request<Result<Stat>>(s, std::move(on_reply), path, [&](Reg&) -> Result<Stat> {
      Txn txn = begin_txn();
      Stat stat;
      const Errc e = set_node(tree_, txn, s->to_server(path), std::move(data), version, stat);
      if (e != Errc::ok) return {e, path};
      fire(txn.changes);
      return stat;
    });
  }

  void exists(const std::shared_ptr<Session>& s, const std::string& path, Watcher watcher,
              ReplyHandler<Result<Stat>> on_reply) {
    request<Result<Stat>>(s, std::move(on_reply), path, [&](Reg& reg) -> Result<Stat> {
      const std::string server_path = s->to_server(path);
      // exists watches a missing node too: it fires when the node is created.
      if (watcher) reg = arm(data_watches_, s, server_path, path, std::move(watcher));
      const auto it = tree_.find(server_path);
      if (it == tree_.end()) return {Errc::no_node, path};
      return it->second.stat;
    });
  }

  void get(const std::shared_ptr<Session>& s, const std::string& path, Watcher watcher,
           ReplyHandler<Result<NodeData>> on_reply) {
    request<Result<NodeData>>(s, std::move(on_reply), path, [&](Reg& reg) -> Result<NodeData> {
      const std::string server_path = s->to_server(path);
      const auto it = tree_.find(server_path);
      if (it == tree_.end()) return {Errc::no_node, path};  // and no watch
      if (watcher) reg = arm(data_watches_, s, server_path, path, std::move(watcher));
      return NodeData{it->second.data, it->second.stat};
    });
  }

  void children(const std::shared_ptr<Session>& s, const std::string& path, Watcher watcher,
                ReplyHandler<Result<Children>> on_reply) {
    request<Result<Children>>(s, std::move(on_reply), path, [&](Reg& reg) -> Result<Children> {
      const std::string server_path = s->to_server(path);
      const auto it = tree_.find(server_path);
      if (it == tree_.end()) return {Errc::no_node, path};  // and no watch
      if (watcher) reg = arm(child_watches_, s, server_path, path, std::move(watcher));
      return Children{in_hash_order(it->second.children), it->second.stat};
    });
  }

  void sync(const std::shared_ptr<Session>& s, const std::string& path,
            ReplyHandler<Result<Empty>> on_reply) {
    // One server: it is always up to date.
    request<Result<Empty>>(s, std::move(on_reply), path,
                           [](Reg&) -> Result<Empty> { return Empty{}; });
  }

  void multi(const std::shared_ptr<Session>& s, std::vector<Op> ops,
             ReplyHandler<MultiResult> on_reply) {
    request<MultiResult>(s, std::move(on_reply), {}, [&](Reg&) {
      // Applied to a copy, kept only if every operation succeeds: atomic.
      Txn txn = begin_txn();
      Tree scratch = tree_;
      MultiResult out;
      out.results.resize(ops.size());
      for (std::size_t i = 0; i < ops.size(); ++i) {
        const Errc e = apply_op(scratch, txn, *s, ops[i], out.results[i]);
        if (e == Errc::ok) continue;
        // What DataTree.processTxn reports for a failed multi.
        for (std::size_t j = 0; j < ops.size(); ++j) {
          out.results[j] = OpResult{};
          out.results[j].error = j < i ? Errc::ok : j == i ? e : Errc::runtime_inconsistency;
        }
        out.error = e;
        return out;
      }
      tree_ = std::move(scratch);
      fire(txn.changes);
      return out;
    });
  }

  // ---- What the server does by itself.

  std::size_t reap_containers() {
    std::lock_guard lock(mu_);
    std::vector<std::string> doomed;
    for (const auto& [path, node] : tree_) {
      // cversion > 0: it has had children, so a container just created is safe.
      if (node.kind == Kind::container && node.stat.cversion > 0 && node.children.empty())
        doomed.push_back(path);
    }
    return remove_each(doomed);
  }

  std::size_t reap_ttl(WallClock::time_point now) {
    std::lock_guard lock(mu_);
    std::vector<std::string> doomed;
    for (const auto& [path, node] : tree_) {
      if (node.kind == Kind::ttl && node.children.empty() &&
          to_ms(now) - node.stat.mtime > node.ttl.count())
        doomed.push_back(path);
    }
    return remove_each(doomed);
  }

  // ---- Introspection.

  std::optional<Stat> exists_now(const std::string& path) const {
    std::lock_guard lock(mu_);
    const auto it = tree_.find(path);
    if (it == tree_.end()) return std::nullopt;
    return it->second.stat;
  }

  std::optional<std::string> data_now(const std::string& path) const {
    std::lock_guard lock(mu_);
    const auto it = tree_.find(path);
    if (it == tree_.end()) return std::nullopt;
    return it->second.data;
  }

  std::optional<AclList> acl_now(const std::string& path) const {
    std::lock_guard lock(mu_);
    const auto it = tree_.find(path);
    if (it == tree_.end()) return std::nullopt;
    return it->second.acl;
  }

  std::vector<std::string> children_now(const std::string& path) const {
    std::lock_guard lock(mu_);
    const auto it = tree_.find(path);
    if (it == tree_.end()) return {};
    return std::vector<std::string>(it->second.children.begin(), it->second.children.end());
  }

  bool set_cversion(const std::string& path, Version cversion) {
    std::lock_guard lock(mu_);
    const auto it = tree_.find(path);
    if (it == tree_.end()) return false;
    it->second.stat.cversion = cversion;
    return true;
  }

  bool set_version(const std::string& path, Version version) {
    std::lock_guard lock(mu_);
    const auto it = tree_.find(path);
    if (it == tree_.end()) return false;
    it->second.stat.version = version;
    return true;
  }

  std::size_t node_count() const {
    std::lock_guard lock(mu_);
    return static_cast<std::size_t>(std::count_if(
        tree_.begin(), tree_.end(),
        [](const auto& entry) { return entry.first != "/" && !is_reserved(entry.first); }));
  }

  std::vector<std::string> ephemerals_of(std::int64_t session_id) const {
    std::lock_guard lock(mu_);
    return ephemeral_paths(session_id);
  }

  std::int64_t last_zxid() const {
    std::lock_guard lock(mu_);
    return zxid_;
  }

 private:
  struct Task {
    std::function<void()> run;
    const Session* session = nullptr;  // whose callback it runs, if any
  };

  // Caller holds mu_.
  void post(std::function<void()> run, const Session* session = nullptr) {
    queue_.push_back({std::move(run), session});
    work_cv_.notify_one();
  }

  std::shared_ptr<Session> live_session(std::int64_t id) const {
    const auto it = sessions_.find(id);
    if (it == sessions_.end()) return nullptr;
    const SessionState st = it->second->state;
    return st == SessionState::connected || st == SessionState::connecting ? it->second : nullptr;
  }

  Txn begin_txn() { return Txn{++zxid_, to_ms(WallClock::now()), {}}; }

  // Sends one request: refused at once unless connected, else applied now and
  // its reply queued behind everything the server did before.
  template <class V, class Apply>
  void request(const std::shared_ptr<Session>& s, ReplyHandler<V> on_reply, const std::string& path,
               Apply apply) {
    std::unique_lock lock(mu_);
    if (stopped_) {
      lock.unlock();
      on_reply(failure<V>(Errc::closing, path));
      return;
    }
    Errc refused = Errc::ok;
    if (stopping_ || s->state == SessionState::closed) refused = Errc::closing;
    else if (s->state == SessionState::expired) refused = Errc::session_expired;
    else if (s->state == SessionState::connecting) refused = Errc::connection_loss;
    if (refused != Errc::ok) {
      post([on_reply = std::move(on_reply), value = failure<V>(refused, path)]() mutable {
        on_reply(std::move(value));
      });
      return;
    }
    Reg reg;
    V value = apply(reg);
    post_reply(s, std::move(on_reply), std::move(value), path, std::move(reg));
  }

  template <class V>
  void post_reply(const std::shared_ptr<Session>& s, ReplyHandler<V> on_reply, V value,
                  std::string path, Reg reg) {
    const std::size_t generation = s->breaks.size();
    post([this, s, generation, on_reply = std::move(on_reply), value = std::move(value),
          path = std::move(path), reg = std::move(reg)]() mutable {
      const Errc lost = reply_lost(*s, generation, reg);
      if (lost == Errc::ok) on_reply(std::move(value));
      else on_reply(failure<V>(lost, path));
    });
  }

  // On the event thread, as a reply is delivered: was the link broken since it
  // was sent? Then the reply is lost, and so is the watch it would have armed.
  Errc reply_lost(Session& s, std::size_t generation, const Reg& reg) {
    std::lock_guard lock(mu_);
    if (generation >= s.breaks.size()) return Errc::ok;
    if (reg && reg->state != WatchReg::State::done) {
      reg->state = WatchReg::State::done;
      std::erase(s.outstanding, reg);
    }
    return s.breaks[generation];
  }

  void post_state(const std::shared_ptr<Session>& s, SessionState state) {
    if (!s->on_state) return;
    post(
        [this, s, state] {
          if (!callbacks_open(*s)) return;
          s->on_state(state);
        },
        s.get());
  }

  void post_event(const std::shared_ptr<Session>& s, const Reg& reg, WatchEvent event) {
    reg->state = WatchReg::State::queued;
    post(
        [this, s, reg, event = std::move(event)] {
          if (!claim(*s, reg)) return;
          reg->watcher(event);
        },
        s.get());
  }

  bool callbacks_open(const Session& s) {
    std::lock_guard lock(mu_);
    return s.state != SessionState::closed && !stopping_;
  }

  // The queued delivery of reg may go ahead (nothing ended it meanwhile).
  bool claim(Session& s, const Reg& reg) {
    std::lock_guard lock(mu_);
    if (reg->state != WatchReg::State::queued || stopping_) return false;
    reg->state = WatchReg::State::done;
    std::erase(s.outstanding, reg);
    return true;
  }

  using WatchTable = std::map<std::string, std::vector<std::pair<std::shared_ptr<Session>, Reg>>>;

  Reg arm(WatchTable& table, const std::shared_ptr<Session>& s, const std::string& server_path,
          const std::string& client_path, Watcher watcher) {
    auto reg = std::make_shared<WatchReg>();
    reg->watcher = std::move(watcher);
    reg->path = client_path;
    table[server_path].emplace_back(s, reg);
    s->outstanding.push_back(reg);
    return reg;
  }

  // The watch rules of the server's DataTree.
  void fire(const std::vector<Change>& changes) {
    for (const Change& c : changes) {
      switch (c.type) {
        case EventType::created:
          trigger(data_watches_, c.path, EventType::created);
          trigger(child_watches_, parent_of(c.path), EventType::child);
          break;
        case EventType::deleted:
          trigger(data_watches_, c.path, EventType::deleted);
          trigger(child_watches_, c.path, EventType::deleted);
          trigger(child_watches_, parent_of(c.path), EventType::child);
          break;
        case EventType::changed: trigger(data_watches_, c.path, EventType::changed); break;
        case EventType::child:
        case EventType::session_ended: break;
      }
    }
  }

  void trigger(WatchTable& table, const std::string& path, EventType type) {
    const auto it = table.find(path);
    if (it == table.end()) return;
    const auto armed = std::move(it->second);  // one-shot: all of them go
    table.erase(it);
    for (const auto& [s, reg] : armed) {
      if (reg->state != WatchReg::State::armed) continue;
      WatchEvent event{type, reg->path};
      if (s->state == SessionState::connected) {
        post_event(s, reg, std::move(event));
      } else if (s->state == SessionState::connecting) {
        reg->state = WatchReg::State::held;
        s->held.emplace_back(reg, std::move(event));
      }
    }
  }

  NewNode new_node(const Session& s, const std::string& path, std::string data, CreateMode mode,
                   const CreateOptions& options) const {
    NewNode n;
    n.path = s.to_server(path);
    n.sequential = is_sequential(mode);
    n.data = std::move(data);
    n.acl = options.acl.value_or(s.default_acl);
    if (is_ephemeral(mode)) {
      n.kind = Kind::ephemeral;
      n.owner = s.id;
    } else if (mode == CreateMode::container) {
      n.kind = Kind::container;
    } else if (has_ttl(mode)) {
      n.kind = Kind::ttl;
      n.ttl = options.ttl;
    }
    return n;
  }

  Errc apply_op(Tree& tree, Txn& txn, const Session& s, const Op& op, OpResult& result) {
    if (const auto* c = std::get_if<op::Create>(&op)) {
      std::string created;
      Stat stat;
      const Errc e =
          create_node(tree, txn, new_node(s, c->path, c->data, c->mode, c->options), created, stat);
      // The C client's multi carries only the path of a create, not its stat.
      if (e == Errc::ok) result.path = s.to_client(created);
      return e;
    }
    if (const auto* r = std::get_if<op::Remove>(&op))
      return remove_node(tree, txn, s.to_server(r->path), r->version);
    if (const auto* set = std::get_if<op::Set>(&op))
      return set_node(tree, txn, s.to_server(set->path), set->data, set->version, result.stat);
    const auto& check = std::get<op::Check>(op);
    return check_node(tree, s.to_server(check.path), check.version);
  }

  std::vector<std::string> ephemeral_paths(std::int64_t owner) const {
    std::vector<std::string> out;
    for (const auto& [path, node] : tree_)
      if (node.kind == Kind::ephemeral && node.stat.ephemeral_owner == owner) out.push_back(path);
    return out;
  }

  // The session is gone: its ephemerals go in one transaction (closeSession).
  void remove_ephemerals(std::int64_t owner) {
    Txn txn = begin_txn();
    for (const std::string& path : ephemeral_paths(owner))
      remove_node(tree_, txn, path, kAnyVersion);  // ephemerals have no children
    fire(txn.changes);
  }

  // The server's sweeps delete each candidate in a request of its own.
  std::size_t remove_each(const std::vector<std::string>& paths) {
    std::size_t removed = 0;
    for (const std::string& path : paths) {
      Txn txn = begin_txn();
      if (remove_node(tree_, txn, path, kAnyVersion) != Errc::ok) continue;
      fire(txn.changes);
      ++removed;
    }
    return removed;
  }

  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // the event thread waits for work
  std::condition_variable idle_cv_;  // a task finished, or the thread stopped
  // Everything below is guarded by mu_.
  std::deque<Task> queue_;
  bool running_ = false;
  const Session* running_session_ = nullptr;
  std::thread::id event_thread_;
  bool stopping_ = false;  // the ensemble is being destroyed
  bool stopped_ = false;   // the event thread has exited
  Tree tree_;
  std::int64_t zxid_ = 0;
  std::int64_t sessions_opened_ = 0;
  std::map<std::int64_t, std::shared_ptr<Session>> sessions_;  // live and expired, not closed
  WatchTable data_watches_;                                    // set by exists and get
  WatchTable child_watches_;                                   // set by children
};

}  // namespace fake

// ---- FakeEnsemble

FakeEnsemble::FakeEnsemble()
    : server_(std::make_shared<fake::Server>()),
      events_([server = server_.get()] { server->run_events(); }) {}

FakeEnsemble::~FakeEnsemble() {
  server_->shutdown();
  events_.join();
}

std::shared_ptr<FakeKeeper> FakeEnsemble::connect(SessionCallback on_state) {
  return server_->connect(KeeperConfig{}, std::move(on_state));
}

std::shared_ptr<FakeKeeper> FakeEnsemble::connect(const KeeperConfig& config,
                                                  SessionCallback on_state) {
  return server_->connect(config, std::move(on_state));
}

KeeperFactory FakeEnsemble::factory() {
  return [server = server_](const KeeperConfig& config,
                            SessionCallback on_state) -> std::shared_ptr<Keeper> {
    return server->connect(config, std::move(on_state));
  };
}

void FakeEnsemble::expire(std::int64_t session_id) { server_->expire(session_id); }
void FakeEnsemble::disconnect(std::int64_t session_id) { server_->disconnect(session_id); }
void FakeEnsemble::reconnect(std::int64_t session_id) { server_->reconnect(session_id); }
std::size_t FakeEnsemble::reap_containers() { return server_->reap_containers(); }
std::size_t FakeEnsemble::reap_ttl(std::chrono::system_clock::time_point now) {
  return server_->reap_ttl(now);
}

std::optional<Stat> FakeEnsemble::exists_now(const std::string& path) const {
  return server_->exists_now(path);
}
std::optional<std::string> FakeEnsemble::data_now(const std::string& path) const {
  return server_->data_now(path);
}
std::optional<AclList> FakeEnsemble::acl_now(const std::string& path) const {
  return server_->acl_now(path);
}
std::vector<std::string> FakeEnsemble::children_now(const std::string& path) const {
  return server_->children_now(path);
}
std::size_t FakeEnsemble::node_count() const { return server_->node_count(); }
bool FakeEnsemble::set_cversion(const std::string& path, Version cversion) {
  return server_->set_cversion(path, cversion);
}
bool FakeEnsemble::set_version(const std::string& path, Version version) {
  return server_->set_version(path, version);
}
std::vector<std::string> FakeEnsemble::ephemerals_of(std::int64_t session_id) const {
  return server_->ephemerals_of(session_id);
}
std::int64_t FakeEnsemble::last_zxid() const { return server_->last_zxid(); }
bool FakeEnsemble::wait_idle(std::chrono::milliseconds timeout) {
  return server_->wait_idle(timeout);
}

// ---- FakeKeeper: checks arguments with CKeeper's own checks, then hands over to
// ---- the server.

FakeKeeper::FakeKeeper(std::shared_ptr<fake::Server> server, std::shared_ptr<fake::Session> session)
    : server_(std::move(server)), session_(std::move(session)) {}

FakeKeeper::~FakeKeeper() { close(); }

void FakeKeeper::close() noexcept { server_->close(session_); }

void FakeKeeper::send_create(std::string path, std::string data, CreateMode mode,
                             CreateOptions options, ReplyHandler<Result<Created>> on_reply) {
  detail::check_create(path, data, mode, options);
  server_->create(session_, path, std::move(data), mode, std::move(options), std::move(on_reply));
}

void FakeKeeper::send_remove(std::string path, Version version,
                             ReplyHandler<Result<Empty>> on_reply) {
  detail::check_write_path(path);
  server_->remove(session_, path, version, std::move(on_reply));
}

void FakeKeeper::send_exists(std::string path, Watcher watcher,
                             ReplyHandler<Result<Stat>> on_reply) {
  detail::check_read_path(path);
  server_->exists(session_, path, std::move(watcher), std::move(on_reply));
}

void FakeKeeper::send_get(std::string path, Watcher watcher,
                          ReplyHandler<Result<NodeData>> on_reply) {
  detail::check_read_path(path);
  server_->get(session_, path, std::move(watcher), std::move(on_reply));
}

void FakeKeeper::send_set(std::string path, std::string data, Version version,
                          ReplyHandler<Result<Stat>> on_reply) {
  detail::check_set(path, data);
  server_->set(session_, path, std::move(data), version, std::move(on_reply));
}

void FakeKeeper::send_children(std::string path, Watcher watcher,
                               ReplyHandler<Result<Children>> on_reply) {
  detail::check_read_path(path);
  server_->children(session_, path, std::move(watcher), std::move(on_reply));
}

void FakeKeeper::send_multi(std::vector<Op> ops, ReplyHandler<MultiResult> on_reply) {
  detail::check_multi(ops);
  server_->multi(session_, std::move(ops), std::move(on_reply));
}

void FakeKeeper::send_sync(std::string path, ReplyHandler<Result<Empty>> on_reply) {
  detail::check_read_path(path);
  server_->sync(session_, path, std::move(on_reply));
}

std::int64_t FakeKeeper::session_id() const { return session_->id; }
std::string FakeKeeper::session_password() const { return session_->password; }
SessionState FakeKeeper::session_state() const { return server_->state_of(*session_); }
std::chrono::milliseconds FakeKeeper::session_timeout() const { return session_->timeout; }
std::string FakeKeeper::connected_host() const {
  return session_state() == SessionState::connected ? fake::kHost : std::string();
}

}  // namespace zkr::test
