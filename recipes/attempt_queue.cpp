// The lock attempt's queue stage (attempt.hpp): our create, pipelined with
// the directory's and a listing, the recovery of a create whose reply was
// lost, and where a listing puts our node (refusing another lock protocol's
// nodes, and reading a semaphore's limit). Apart because it is the one stage
// that writes our node, and every listing, the grant's too, is read here.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "attempt.hpp"
#include "client_internals.hpp"
#include "lease_rule.hpp"
#include "lock_directory.hpp"
#include "zkr/path.hpp"

namespace zkr::detail {
namespace {

// How many times a create may find the lock directory just removed (by a
// release racing with us, or the server reaping the container) before we call
// it a bug rather than a race.
constexpr int kMaxDirectoryRaces = 100;

}  // namespace

std::string Attempt::prefix_path() const {
  return join_path(lock_.dir_, lock_.leases_ ? protected_lease_prefix(guid_)
                                             : protected_prefix(guid_, lock_.kind_));
}

// The node our create under `guid` made, if listed.
std::optional<std::string> Attempt::find_ours(const std::vector<std::string>& children,
                                              std::string_view guid) const {
  return lock_.leases_ ? find_protected_lease(children, guid)
                       : find_protected_node(children, guid, lock_.kind_);
}

// Creates our node, and learns the queue before it, in one round trip:
// create and listing are sent back to back. The directory is created in
// the same pipeline only when this Client does not know it exists
// (directory_registry.hpp): a create of a directory that exists is a write
// too. Its reply only matters if our create failed: it may fail for
// reasons that do not concern us (no right to create in the parent while
// the directory exists). A create that finds the directory gone (removed
// by someone since we learned it existed) is sent again behind a create of
// the directory.
//
// When the directory's parent is missing too (a bucket of the hashed
// layout, reaped since its last key went), the next round sends creates of
// every ancestor in the same pipeline: one extra round trip, not two.
Task<void> Attempt::enqueue() {
  if (!use_)
    use_ = std::make_unique<DirectoryRegistry::Use>(lock_.directories_, lock_.dir_,
                                                    lock_.options_.remove_directory_on_release,
                                                    lock_.options_.directory_grace);
  if (create_sent_ && co_await recover_node()) co_return;
  bool with_ancestors = false;
  bool with_directory = !lock_.directories_->known(lock_.dir_);
  for (int races = 0;; ++races) {
    const auto create_directory = [&](const std::string& path) {
      return sent<Created>([&](auto on_reply) {
        count_request(lock_.observed_, Request::create);
        keeper_->async_create(path, std::string(kLockDirectoryMark), CreateMode::container,
                              lock_.create_options_, std::move(on_reply));
      });
    };
    std::vector<std::pair<std::string, PendingReply<Result<Created>>>> ancestors;
    if (with_ancestors) {
      for (auto slash = lock_.dir_.find('/', 1); slash != std::string::npos;
           slash = lock_.dir_.find('/', slash + 1)) {
        std::string ancestor = lock_.dir_.substr(0, slash);
        auto reply = create_directory(ancestor);
        ancestors.emplace_back(std::move(ancestor), std::move(reply));
      }
    }
    std::optional<PendingReply<Result<Created>>> dir_created;
    if (with_directory) dir_created = create_directory(lock_.dir_);
    create_sent_ = true;
    auto created = sent<Created>([&](auto on_reply) {
      count_request(lock_.observed_, Request::create);
      keeper_->async_create(prefix_path(), lock_.holder_, CreateMode::ephemeral_sequential,
                            lock_.create_options_, std::move(on_reply));
    });
    // A grant waiter needs the listing watched: watch it now, as Curator
    // does, rather than look again once it knows it waits.
    const bool watch = lock_.leases_.has_value();
    auto looking = look(watch);
    std::optional<KeeperError> ancestor_error;
    for (auto& [path, reply] : ancestors) {
      const auto result = co_await await(reply, path);
      if (!result.ok() && result.error() != Errc::node_exists && !ancestor_error)
        ancestor_error.emplace(result.error(), path, "creating the lock directory's parents");
    }
    std::optional<Result<Created>> dir_result;
    if (dir_created) dir_result = co_await await(*dir_created, lock_.dir_);
    auto create_result = co_await await(created, prefix_path());
    const auto looked = co_await await_look(looking);
    if (create_result.ok()) {
      lock_.directories_->proven(lock_.dir_);
      node_ = std::string(node_name(create_result.value().path));
      czxid_ = create_result.value().stat.czxid;
      // no_node: the directory is gone, so our node is too (deleted by
      // someone, then the directory by a release): as if not listed.
      if (position_from(looked)) {
        leases_watched_ = watch && looked.queue.ok();
        co_return;
      }
      continue;  // our node vanished between create and list: start over
    }
    if (create_result.error() != Errc::no_node || races >= kMaxDirectoryRaces)
      throw KeeperError(create_result.error(), prefix_path(), "creating the lock node");
    // The directory is missing: send its create with ours next time. If we
    // sent one and it failed for want of its parent, the parents too. If
    // we may not create it (no_auth under a protected parent, say), that,
    // not the no_node, is the caller's news.
    lock_.directories_->missing(lock_.dir_);
    create_sent_ = false;
    with_directory = true;
    if (dir_result && !dir_result->ok() && dir_result->error() != Errc::node_exists) {
      if (dir_result->error() != Errc::no_node)
        throw KeeperError(dir_result->error(), lock_.dir_, "creating the lock directory");
      if (ancestor_error) throw *ancestor_error;
      with_ancestors = true;
    }
  }
}

// Our create's reply was lost: the node may exist. Find it by its guid.
Task<bool> Attempt::recover_node() {
  auto looking = look(/*watch=*/false);
  const auto looked = co_await await_look(looking);
  const auto& listed = looked.queue;
  if (listed.error() == Errc::no_node) co_return create_sent_ = false;
  if (!listed.ok()) throw KeeperError(listed.error(), lock_.dir_, "looking for our lock node");
  const auto found = find_ours(listed.value().names, guid_);
  if (!found) {
    // It may yet be created (a create still on its way to the leader):
    // a new name for the next create, and the old one is deleted on sight.
    forget_guid();
    co_return create_sent_ = false;
  }
  const std::string path = join_path(lock_.dir_, *found);
  auto checking = sent<Stat>([&](auto on_reply) {
    count_request(lock_.observed_, Request::exists);
    keeper_->async_exists(path, {}, std::move(on_reply));
  });
  const auto stat = co_await await(checking, path);
  if (stat.error() == Errc::no_node) co_return create_sent_ = false;
  if (!stat.ok()) throw KeeperError(stat.error(), path, "checking our lock node");
  if (stat.value().ephemeral_owner != session_id_) {
    // Not of this session, whatever its name says: never adopt it.
    forget_guid();
    co_return create_sent_ = false;
  }
  node_ = *found;
  czxid_ = stat.value().czxid;
  detail::ClientInternals::log(client_)->debug("lock {}: adopted {} after a lost reply", lock_.dir_,
                                               node_);
  co_return position_from(looked);
}

// A semaphore's grant is decided on the leases' listing, so the path's
// listing (other protocols' nodes) and the limit are read after it, in the
// same pipeline: a session's requests are answered in order, so they show at
// least what was there when the leases were listed. Read before it, they
// could miss a foreign mutex, or a lower limit, that came in between.
Attempt::Look Attempt::look(bool watch) {
  const Watcher watcher = watch ? watch_for_hand_off() : Watcher{};
  Look out{.queue = {}, .semaphore = {}, .count = {}};
  out.queue = sent<Children>([&](auto on_reply) {
    count_request(lock_.observed_, Request::children);
    keeper_->async_children(lock_.dir_, watcher, std::move(on_reply));
  });
  if (lock_.leases_) {
    const auto& leases = *lock_.leases_;
    out.semaphore = sent<Children>([&](auto on_reply) {
      count_request(lock_.observed_, Request::children);
      keeper_->async_children(leases.semaphore_dir, {}, std::move(on_reply));
    });
    if (!leases.fixed_max)
      out.count = sent<NodeData>([&](auto on_reply) {
        count_request(lock_.observed_, Request::get);
        keeper_->async_get(leases.count_path, watcher, std::move(on_reply));
      });
  }
  return out;
}

Task<Attempt::Looked> Attempt::await_look(Look& look) {
  std::optional<Result<Children>> semaphore;
  std::optional<Result<NodeData>> count;
  auto queue = co_await await(look.queue, lock_.dir_);
  if (look.semaphore) semaphore = co_await await(*look.semaphore, lock_.leases_->semaphore_dir);
  if (look.count) count = co_await await(*look.count, lock_.leases_->count_path);
  co_return Looked{std::move(queue), std::move(semaphore), std::move(count)};
}

// Where our node stands in a listing of the directory. False: not there.
// Every listing goes through here, the one a grant is decided on included;
// one showing another lock protocol's nodes ends the attempt (acquire()
// deletes our node): that protocol does not see ours, nor we its.
bool Attempt::position(const Children& listed) {
  const auto& children = listed.names;
  remove_ghosts(children);
  if (lock_.leases_) return place(lease_position(children, node_, lease_limit()), children);
  const auto family = family_of(lock_.kind_);
  const QueuePeers peers{lock_.options_.share_with_kazoo};
  if (const auto foreign = find_foreign_lock_nodes(children, family, peers))
    throw KeeperError(Errc::foreign_lock_protocol, lock_.dir_,
                      foreign->description() +
                          " uses this lock path; neither protocol sees the other's nodes, so "
                          "both would be granted at once: refusing to queue beside it" +
                          with_advice(*foreign, family));
  // Past the counter's wrap Curator and kazoo order by text, newest first: a
  // peer and we would each think ourselves first. No order is right for
  // both, so neither side of the wrap is ours to queue on.
  if (const auto wrapped = wrapped_sequence_node(children, family, peers))
    throw KeeperError(Errc::sequence_wrapped, lock_.dir_,
                      "node " + *wrapped +
                          " has a negative sequence: the directory's counter passed 2^31-1, "
                          "and Curator's order (text) now puts newer nodes first; refusing "
                          "to queue. The counter starts again once the directory is empty "
                          "and removed");
  const std::string_view exclusive = write_held() ? std::string_view(held_write_->name) : "";
  return place(
      queue_position(sorted_queue_nodes(children, family, peers), node_, lock_.kind_, exclusive),
      children);
}

// Our thread's write node exempts us only while it is of this session and
// its grant still held, as of this listing (a delete of it would have
// reached the grant's watch before this reply).
bool Attempt::write_held() const {
  return held_write_ && held_write_->epoch == epoch_ && held_write_->grant &&
         held_write_->grant->reason() == LostReason::none;
}

// Our node's standing by the queue's rule, taken as ours. False: not listed.
bool Attempt::place(QueuePosition where, const std::vector<std::string>& children) {
  if (!where.found) {
    detail::ClientInternals::log(client_)->warn("lock {}: our node {} vanished; queueing again",
                                                lock_.dir_, node_);
    node_.clear();
    create_sent_ = false;
    guid_ = new_guid();
    return false;
  }
  lower_count_ = where.lower.size();
  waits_for_ = where.lower.empty() ? std::string() : std::move(where.lower.back());
  ahead_of_writers_ = where.ahead_of_writers;
  // A read granted while its thread's write node is listed (a downgrade)
  // carries that write grant's fencing token, not its own node's: a writer
  // queued after the write node but before this read is granted after the
  // read ends, and must get a larger token (see zkr/read_write_lock.hpp).
  if (where.holds && write_held() &&
      std::find(children.begin(), children.end(), held_write_->name) != children.end())
    downgrade_token_ = held_write_->grant->fencing_token;
  stage_ = Stage::wait;
  // Someone is before us: watch our own node from now on, so that a delete
  // of it while we wait is known before any later event or reply (a
  // session's come in order): a node of its name made again by someone else
  // is never taken for ours by the listing that grants us the lock.
  if (lower_count_ != 0 && !grant_) {
    grant_ = new_grant();
    watch_own_node(client_, grant_, keeper_);
  }
  detail::ClientInternals::log(client_)->debug(
      "lock {}: queued as {} (session epoch {}), {} before us", lock_.dir_, node_, epoch_,
      lower_count_);
  return true;
}

// Where our node stands by a look's replies. False: ours is gone.
bool Attempt::position_from(const Looked& looked) {
  const auto& listed = looked.queue;
  if (!listed.ok() && listed.error() != Errc::no_node)
    throw KeeperError(listed.error(), lock_.dir_, "listing the lock directory");
  if (looked.semaphore) refuse_other_protocols(*looked.semaphore);
  if (looked.count) read_limit(*looked.count);
  return listed.ok() ? position(listed.value()) : position(Children{});
}

// A semaphore's path shared with another lock protocol: neither would
// see the other's nodes.
void Attempt::refuse_other_protocols(const Result<Children>& siblings) const {
  const auto& dir = lock_.leases_->semaphore_dir;
  if (!siblings.ok() && siblings.error() != Errc::no_node)
    throw KeeperError(siblings.error(), dir, "listing the semaphore's path");
  if (!siblings.ok()) return;
  if (const auto foreign = find_foreign_lock_nodes(siblings.value().names, QueueFamily::semaphore))
    throw KeeperError(Errc::foreign_lock_protocol, dir,
                      foreign->description() +
                          " uses this semaphore's path; neither protocol sees the other's "
                          "nodes, so both would be granted at once: refusing to queue beside it" +
                          with_advice(*foreign, QueueFamily::semaphore));
}

// A SharedCount limit, as this look read it.
void Attempt::read_limit(const Result<NodeData>& node) {
  const auto& path = lock_.leases_->count_path;
  if (node.error() == Errc::no_node)
    throw KeeperError(Errc::bad_arguments, path, "the semaphore's SharedCount node does not exist");
  if (!node.ok()) throw KeeperError(node.error(), path, "reading the semaphore's SharedCount");
  const auto count = decode_shared_count(node.value().data);
  if (!count)
    throw KeeperError(Errc::bad_arguments, path,
                      "a SharedCount holds 4 bytes (a big-endian integer), this node " +
                          std::to_string(node.value().data.size()));
  if (*count < 1)
    throw KeeperError(Errc::bad_arguments, path,
                      "the semaphore's SharedCount is " + std::to_string(*count) +
                          "; at least 1 grant is needed");
  shared_count_ = *count;
}

std::int32_t Attempt::lease_limit() const {
  return lock_.leases_->fixed_max ? *lock_.leases_->fixed_max : shared_count_;
}

// A create under guid_ may still be applied although we gave it up: the
// next create gets a new name, and a node with the old one is deleted
// wherever a listing shows it, so that it can never queue as a second
// node of ours.
void Attempt::forget_guid() { forgotten_guids_.push_back(std::exchange(guid_, new_guid())); }

void Attempt::remove_ghosts(const std::vector<std::string>& children) {
  for (const auto& guid : forgotten_guids_)
    if (auto ghost = find_ours(children, guid)) {
      detail::ClientInternals::log(client_)->warn(
          "lock {}: deleting {}, created late by a create we gave up on", lock_.dir_, *ghost);
      detail::ClientInternals::remove_in_background(client_, join_path(lock_.dir_, *ghost), epoch_);
    }
}

}  // namespace zkr::detail
