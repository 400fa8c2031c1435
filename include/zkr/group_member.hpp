// zkr/group_member.hpp: membership of a group, and who else is in it.
//
// A GroupMember registers this process in a group as the ephemeral node
// `<group>/<id>`, whose data is the member's payload (an address, say), and
// keeps a cache of the group's members. It speaks Curator's GroupMember
// layout, so Java services using Curator and C++ services using this see one
// another:
//
//   zkr::GroupMember member(client, "/services/search", "host-7", "10.0.0.7:8080");
//   member.start();
//   if (!member.wait_until_registered(10s))
//     log(member.refusal().value_or("no connection yet"));
//   for (const auto& [id, address] : member.current_members()) ...;
//   member.set_this_data("10.0.0.7:9090");           // moved
//   member.close();                                   // leaves the group
//
// Registration is a PersistentNode (zkr/persistent_node.hpp): made again in
// the next session when ours ends, and when someone deletes it. Never
// someone else's node: if another live session holds `<group>/<id>` (the
// same id started twice, or a restart before the old session expired), ours
// is refused, refusal() names that session, and ours is made once theirs
// goes. (Curator's GroupMember takes the node over.)
//
// The member list is a ChildrenCache (zkr/children_cache.hpp) of the group:
// what the servers held at its last read.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "zkr/children_cache.hpp"
#include "zkr/client.hpp"
#include "zkr/lock.hpp"
#include "zkr/persistent_node.hpp"
#include "zkr/types.hpp"

namespace zkr {

struct GroupMemberOptions {
  /// The ACL of our member node and of the group's missing parents
  /// (containers). Unset: the Client's default.
  std::optional<AclList> acl;
  /// Told of every change of our registration (present, absent, refused,
  /// closed), on the Client's callback thread, in order.
  std::function<void(PersistentNodeState)> on_state;
  /// Told of every change of the group (a member added, its data updated, a
  /// member removed; ours included), on the Client's callback thread, in order.
  std::function<void(const ChildEvent&)> on_change;
};

/// Membership of a group (see the file comment).
class GroupMember {
 public:
  /// std::invalid_argument for a bad group path (zkr/path.hpp), the root,
  /// or a bad id (validate_member_id). Sends nothing.
  GroupMember(Client& client, std::string group, std::string id, std::string data,
              GroupMemberOptions options = {});
  /// close(); never throws.
  ~GroupMember();
  GroupMember(const GroupMember&) = delete;
  GroupMember& operator=(const GroupMember&) = delete;

  /// Throws std::invalid_argument unless id can be one node's name: not
  /// empty, no '/', not "." or "..", and nothing zkr/path.hpp refuses in a
  /// name (control characters, ...).
  static void validate_member_id(std::string_view id);

  /// Registers and starts watching the group. std::logic_error if started
  /// before or closed.
  void start();
  /// Waits until our member node is present (true) or the timeout passes.
  bool wait_until_registered(std::chrono::milliseconds timeout) const;
  /// Waits until the member list has been read once (true) or the timeout passes.
  bool wait_until_initialized(std::chrono::milliseconds timeout) const;
  /// Where our registration stands.
  PersistentNodeState state() const;
  /// Why our registration is refused (names the holding session); nullopt
  /// unless refused.
  std::optional<std::string> refusal() const;
  /// Our payload from now on: written to our node while present, and used
  /// for every create.
  void set_this_data(std::string data);
  /// id -> data of every member in the cache. Ours, while registered, with
  /// the data last given to us (as Curator's getCurrentMembers does); while
  /// not registered, as the cache has it (another session's, if refused) or
  /// not at all.
  std::map<std::string, std::string> current_members() const;
  /// Our registration as it stands now: a handle on our member node of this
  /// moment (node_path(), fencing_token() = its czxid) whose lost signal
  /// fires when that node goes (deleted, or our session ends: see
  /// Grant). The node made again afterwards is a new registration, for
  /// a new call. nullopt while not registered. Reads the node once (the
  /// server must confirm it is ours); throws KeeperError if it cannot.
  /// For whoever must stop work the moment its registration ends (zkr member).
  std::optional<Grant> registration() const;
  /// Leaves the group (deletes our node if it is ours) and stops watching.
  /// Final. Never throws.
  void close() noexcept;

  const std::string& group() const noexcept;
  const std::string& id() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace zkr
