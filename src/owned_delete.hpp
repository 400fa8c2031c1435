// src/owned_delete.hpp (internal): deleting a node only when it is ours: a
// lock node, or a node a recipe keeps (PersistentNode).
//
// A lock node is ours when it is owned by our session (ephemeralOwner) and,
// when we know it, was created by our create (its czxid, the fencing token).
// Its name proves nothing: anyone allowed to may delete our node and create
// another of that name (persistent, or another session's), and a delete by
// path would take theirs. So every delete of a lock node by a release, an
// abandoned attempt or the background remover reads the node first, and
// deletes it with the version it read, only if the read showed it ours; a
// node that is not ours is left alone and logged.
//
// What this cannot close: ZooKeeper has no delete conditioned on the owner
// or the czxid, only on the data version. A node deleted and created again
// by someone else between our read and our delete (within one round trip)
// has version 0 as ours had, and goes. A rewrite of ours in that window
// fails the version and is read again. A release sent before the own-node
// watch's first read is answered (a round trip after a grant at once) counts
// our create's reply as that read: the window is then from the create.
//
//   remove_if_ours(keeper, "/locks/a/_c_..-lock-0000000007",
//                  {.session_id = keeper->session_id(), .czxid = token}, log,
//                  [](Result<Removal> r) { ... });  // on the event thread
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "zkr/keeper.hpp"

namespace spdlog {
class logger;
}

namespace zkr::detail {

// What makes a node ours. An ephemeral node: our session owns it, and (when
// known) it has the czxid of our create. A persistent node (session_id 0):
// only the czxid of our own create proves it, so it must be known; a
// persistent node whose create's reply was lost can never be proven ours.
struct Ownership {
  std::int64_t session_id = 0;  // 0: a persistent node
  std::int64_t czxid = 0;       // 0: not known (a create whose reply was lost)
};

// Why a node with this stat is not ours ("owned by session 0x.."), or
// nullopt if it is.
std::optional<std::string> not_ours(const Stat& stat, const Ownership& owner);

// What a delete of a node of ours came to (errors: the link, or the node
// rewritten at every read).
enum class Removal { deleted, gone, not_ours };

// Reads `path`, and deletes it with the version read if it is ours; a
// bad_version (written between read and delete) reads again, a few times.
// on_done gets the outcome once, on the keeper's event thread (or on the
// calling thread if the keeper refused to send). Never throws.
void remove_if_ours(const std::shared_ptr<Keeper>& keeper, std::string path, Ownership owner,
                    std::shared_ptr<spdlog::logger> log,
                    std::function<void(Result<Removal>)> on_done) noexcept;

// The same, waiting at most `timeout` (operation_timeout past it).
Result<Removal> remove_if_ours_now(const std::shared_ptr<Keeper>& keeper, const std::string& path,
                                   Ownership owner, std::shared_ptr<spdlog::logger> log,
                                   std::chrono::milliseconds timeout);

// As a delete's reply: deleted -> ok, gone and not_ours -> no_node (nothing
// of ours is there), errors as they are.
Result<Empty> as_delete_reply(const Result<Removal>& removal, const std::string& path);

}  // namespace zkr::detail
