// tests/support/fake_keeper.hpp: an in-memory ZooKeeper for unit tests.
//
// A FakeEnsemble plays the server: one tree of znodes, one growing zxid, the
// sessions, their watches, and one event thread that delivers every reply,
// watch event and session state in ZooKeeper's order. A FakeKeeper is one
// session on it and implements zkr::Keeper, so recipes run on it unchanged; a
// zkr::Client runs on fakes through factory().
//
//   zkr::test::FakeEnsemble ensemble;
//   auto a = ensemble.connect();
//   auto b = ensemble.connect();
//   a->create("/locks");
//   a->create("/locks/x-", "", zkr::CreateMode::ephemeral_sequential);  // "/locks/x-0000000000"
//   b->exists("/locks/x-0000000000", [](const zkr::WatchEvent& e) { ... });
//   ensemble.expire(a->session_id());  // a's ephemerals go, b's watch fires "deleted"
//   EXPECT_TRUE(ensemble.children_now("/locks").empty());
//
// Modelled as the server does it, because recipes depend on it:
// - Stat: czxid, mzxid and pzxid from one zxid that every write request uses up
//   (a failed one too, as the server logs an error txn; a multi is one zxid);
//   version, cversion (children created or deleted), num_children, data_length,
//   ctime and mtime (wall clock, ms), and ephemeral_owner: the session id, or for
//   containers 0x8000000000000000 and for TTL nodes 0xff00000000000000 | ttl, as
//   the server encodes them.
// - Sequential names: prefix + the parent's cversion, ten digits, zero padded.
//   The counter is the parent's, so it starts again if the parent is re-created.
// - Errors, in the server's order: no_node (parent or node missing),
//   node_exists, no_children_for_ephemerals, bad_version, not_empty,
//   bad_arguments (removing "/").
// - Children come back in hash order, not sorted, as the server sends them: code
//   that forgets to sort fails here as it would in production.
// - multi: atomic; on failure the operations before the failed one report ok,
//   the failed one its code, the ones after runtime_inconsistency (what
//   DataTree.processTxn does), and nothing is applied.
// - Watches: one-shot. exists sets a data watch whether or not the node exists;
//   get and children set one only if it exists. A create fires the node's data
//   watches "created" and the parent's child watches "child"; a set fires
//   "changed"; a delete fires the node's data and child watches "deleted" and
//   the parent's child watches "child".
// - Order: a session's replies come in the order its requests were sent, and a
//   watch event comes before the reply to any later request that saw the change
//   (it is queued when the change is applied). Every callback runs on the
//   ensemble's event thread and may call async_* again.
// - Session faults: expire(), disconnect(), reconnect(), below. A reply still
//   undelivered when the link breaks is lost: the future gets connection_loss
//   (or session_expired) although the server applied the request, and a watch
//   set by a lost reply is forgotten, as the C client only arms a watch when its
//   reply arrives.
// - Close (FakeKeeper's destructor), as CKeeper does it: the session's
//   ephemerals go, replies still pending become closing, armed watches get
//   session_ended and on_state gets closed, on the destroying thread, after the
//   event thread has finished any callback of this session. So whatever a
//   watcher touches must outlive the keeper: in a test, declare it first.
// - Containers and TTL nodes are removed when the test calls reap_containers()
//   or reap_ttl(), with the rules of the server's ContainerManager.
// - Argument checks: CKeeper's own (src/keeper_arguments.hpp), so whatever it
//   refuses before sending throws the same std::invalid_argument here: a bad
//   path (reads may name the reserved /zookeeper subtree, writes may not),
//   data over 2 GiB, a ttl without a TTL mode or out of range, an empty ACL
//   list, a TTL or container node in a multi, a bad chroot.
//
// Deliberately not modelled: ACL enforcement and auth (ACLs are stored, never
// checked), quotas, the 1 MB data limit, session timeouts (sessions expire only
// when the test says so), joining a session by id and password, read-only mode,
// reconfig, persistent watches, several servers (sync is a no-op) and "never
// used" containers reaped after a delay. On reconnect the real client re-arms
// its watches with SetWatches and the server fires those whose node changed;
// here the events that fired while disconnected are simply delivered on
// reconnect, in order (a node created then deleted meanwhile gives two events,
// where the server would give none).
#pragma once

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "zkr/client.hpp"
#include "zkr/keeper.hpp"
#include "zkr/types.hpp"

namespace zkr::test {

namespace fake {
class Server;    // the tree, sessions, watches and event queue (fake_keeper.cpp)
struct Session;  // one session's state on the server
}  // namespace fake

class FakeKeeper;

class FakeEnsemble {
 public:
  FakeEnsemble();
  // Fails what is still pending with closing and joins the event thread. Must
  // not run on the event thread (from a callback). Keepers may outlive it: their
  // requests then fail with closing at once.
  ~FakeEnsemble();
  FakeEnsemble(const FakeEnsemble&) = delete;
  FakeEnsemble& operator=(const FakeEnsemble&) = delete;

  // Opens a session, connected at once; on_state hears `connected` on the event
  // thread. Session ids are distinct and never 0.
  std::shared_ptr<FakeKeeper> connect(SessionCallback on_state = {});
  // As the Client's factory calls it: chroot, session timeout and default ACL are
  // honoured, hosts and auth ignored. Throws std::invalid_argument for a bad
  // chroot or a session id to join (not modelled).
  std::shared_ptr<FakeKeeper> connect(const KeeperConfig& config, SessionCallback on_state);
  // A zkr::KeeperFactory that opens sessions on this ensemble, so that a
  // zkr::Client runs on fakes. It may outlive the ensemble (its keepers then
  // fail every request with closing).
  KeeperFactory factory();

  // ---- Session faults. Unknown or already ended sessions are ignored.

  // The server expires the session: on_state hears `expired`, the session's
  // armed watches get session_ended, its undelivered and later replies are
  // session_expired, and its ephemeral nodes are deleted (firing the watches of
  // other sessions).
  void expire(std::int64_t session_id);
  // The link drops: on_state hears `connecting`, undelivered replies are lost
  // (connection_loss), later requests fail with connection_loss, and watch
  // events that fire meanwhile wait for reconnect(). Ephemerals stay.
  void disconnect(std::int64_t session_id);
  // The link is back (same session): on_state hears `connected`, then the watch
  // events that fired while disconnected arrive.
  void reconnect(std::int64_t session_id);

  // ---- What the server does by itself, when the test says so. Each returns the
  // ---- number of nodes removed; removals fire watches like any delete.

  // One pass of the container sweep: removes every container that has had
  // children (cversion > 0) and has none now. A parent container this pass
  // empties goes in the next pass, as on the server.
  std::size_t reap_containers();
  // Removes every TTL node without children whose last change (mtime) is more
  // than its ttl before `now`.
  std::size_t reap_ttl(
      std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

  // ---- Introspection, for assertions: the tree as the server has it now (every
  // ---- request already sent included). Paths are absolute, without chroot.

  std::optional<Stat> exists_now(const std::string& path) const;
  std::optional<std::string> data_now(const std::string& path) const;
  std::optional<AclList> acl_now(const std::string& path) const;  // as stored, never enforced
  std::vector<std::string> children_now(const std::string& path) const;  // sorted; {} if absent
  // Sets a node's cversion, the counter its sequential children are numbered
  // by (it wraps past 2^31 - 1 as the server's does): a test reaches the
  // wrap without two billion creates. False if the node does not exist.
  bool set_cversion(const std::string& path, Version cversion);
  // Sets a node's data version (it wraps past 2^31 - 1 as the server's does),
  // without a write: a test reaches the wrap without two billion sets. False
  // if the node does not exist.
  bool set_version(const std::string& path, Version version);
  // Nodes other than "/" and the reserved /zookeeper subtree.
  std::size_t node_count() const;
  std::vector<std::string> ephemerals_of(std::int64_t session_id) const;  // sorted paths
  std::int64_t last_zxid() const;
  // Waits until the event thread has delivered everything queued and is idle.
  // False if `timeout` passed first. Throws std::logic_error on the event thread.
  [[nodiscard]] bool wait_idle(std::chrono::milliseconds timeout = std::chrono::seconds(10));

 private:
  std::shared_ptr<fake::Server> server_;
  std::thread events_;  // runs server_'s event queue; joined by the destructor
};

// One session on a FakeEnsemble. See zkr::Keeper for the contract.
class FakeKeeper final : public Keeper {
 public:
  // Closes the session (see the file comment).
  ~FakeKeeper() override;
  FakeKeeper(const FakeKeeper&) = delete;
  FakeKeeper& operator=(const FakeKeeper&) = delete;

  void close() noexcept override;
  std::int64_t session_id() const override;
  std::string session_password() const override;
  SessionState session_state() const override;
  std::chrono::milliseconds session_timeout() const override;
  std::string connected_host() const override;  // "fake:2181" while connected

 protected:
  void send_create(std::string path, std::string data, CreateMode mode, CreateOptions options,
                   ReplyHandler<Result<Created>> on_reply) override;
  void send_remove(std::string path, Version version,
                   ReplyHandler<Result<Empty>> on_reply) override;
  void send_exists(std::string path, Watcher watcher, ReplyHandler<Result<Stat>> on_reply) override;
  void send_get(std::string path, Watcher watcher,
                ReplyHandler<Result<NodeData>> on_reply) override;
  void send_set(std::string path, std::string data, Version version,
                ReplyHandler<Result<Stat>> on_reply) override;
  void send_children(std::string path, Watcher watcher,
                     ReplyHandler<Result<Children>> on_reply) override;
  void send_multi(std::vector<Op> ops, ReplyHandler<MultiResult> on_reply) override;
  void send_sync(std::string path, ReplyHandler<Result<Empty>> on_reply) override;

 private:
  friend class fake::Server;
  FakeKeeper(std::shared_ptr<fake::Server> server, std::shared_ptr<fake::Session> session);

  std::shared_ptr<fake::Server> server_;
  std::shared_ptr<fake::Session> session_;
};

}  // namespace zkr::test
