// zkr/persistent_node.hpp: a node kept at a path, made again when it goes.
//
// A PersistentNode keeps one node, with its data, at a fixed path: created
// on start() (missing parents as containers), created again in the next
// session when ours ends (an ephemeral node goes with its session) and when
// someone deletes it, until close() deletes it. Its data is what the last
// create or set_data() wrote: a change by someone else is left as it is. What a service registers ("I am alive, at this
// address") is usually an ephemeral one:
//
//   zkr::PersistentNode alive(client, "/services/search/host-7", "10.0.0.7:8080");
//   alive.start();
//   if (!alive.wait_until_present(10s)) log(alive.refusal().value_or("no connection"));
//   ...
//   alive.close();                                    // deletes it: we made it
//
// Never someone else's node. A path held by another live session's
// ephemeral node is not adopted (Curator's PersistentNode takes it over,
// data and all): the node is `refused`, refusal() names the owner session,
// and it is watched, so that ours is created once theirs goes. An ephemeral
// PersistentNode refuses a persistent node at its path too (it would have to
// delete it to make its own); a persistent one adopts an existing persistent
// node (sets its data) but refuses an ephemeral one. close() deletes only a
// node it can prove is its own: an ephemeral node of our session, or a
// persistent node with the czxid of our own create. A persistent node whose
// create's reply was lost can never be proven ours (ZooKeeper records no
// creator of a persistent node): it is kept, and left by close(), with a
// warning. Our node is made at version 1 (a create and a set in one
// transaction), and every write and delete of ours is conditioned on the
// version we read: a node someone makes in place of ours starts at 0, so
// neither set_data() nor close() can hit it in the round trip between our
// read and our write. close() retries through drops and a new session for
// up to one session timeout.
//
// One-shot watches only (Debian's C client has no persistent watches): a
// watch is set with every look, and every change of the connection (a
// reconnect may have lost a request and its watch, a new session has lost
// our ephemeral node) makes the node look again. The work is done by a
// thread of the node's own; state callbacks run on the Client's callback
// thread, one at a time, in order.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "zkr/client.hpp"
#include "zkr/types.hpp"

namespace zkr {

/// Where a PersistentNode stands.
enum class PersistentNodeState {
  absent,   ///< ours is not there now (starting, no connection, being made again)
  present,  ///< our node is at the path, with our data
  refused,  ///< another's node is at the path: we wait for it to go
  closed,   ///< close() was called
};
std::string_view to_string(PersistentNodeState state) noexcept;

struct PersistentNodeOptions {
  /// ephemeral (the default) or persistent; no sequential, container or TTL
  /// modes (a fixed path, kept by us).
  CreateMode mode = CreateMode::ephemeral;
  /// The ACL of our node and its missing parents. Unset: the Client's default.
  std::optional<AclList> acl;
  /// Told of every change of state, on the Client's callback thread, in
  /// order. It must not block for long: other recipes' callbacks wait.
  std::function<void(PersistentNodeState)> on_state;
};

/// A node kept at a path (see the file comment).
class PersistentNode {
 public:
  /// std::invalid_argument for a bad path (zkr/path.hpp), the root, or a
  /// mode other than ephemeral or persistent. Sends nothing.
  PersistentNode(Client& client, std::string path, std::string data,
                 PersistentNodeOptions options = {});
  /// close(); never throws.
  ~PersistentNode();
  PersistentNode(const PersistentNode&) = delete;
  PersistentNode& operator=(const PersistentNode&) = delete;

  /// Starts keeping the node. std::logic_error if started before or closed.
  void start();
  /// Waits until our node is present (true) or the timeout passes (false).
  bool wait_until_present(std::chrono::milliseconds timeout) const;
  PersistentNodeState state() const;
  /// Why the node is refused (names the owner); nullopt unless refused.
  std::optional<std::string> refusal() const;
  /// The data our node carries from now on: set on the node while present,
  /// and used for every create.
  void set_data(std::string data);
  std::string data() const;
  /// Stops keeping the node and deletes it if it is provably ours (see the
  /// file comment); waits for that delete up to the session timeout. Final.
  /// Never throws.
  void close() noexcept;
  const std::string& path() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace zkr
