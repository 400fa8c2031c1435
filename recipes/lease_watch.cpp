// A lease's life after its node is made (lock_internals.hpp declares these):
// the own-node watch and its listener, the loss rules of a granted lease, and
// the release that deletes the node. Apart from the attempt because every
// recipe's lease passes through here, whoever created its node.
#include <exception>
#include <future>
#include <memory>
#include <utility>

#include <spdlog/spdlog.h>

#include "client_internals.hpp"
#include "directory_registry.hpp"
#include "lock_internals.hpp"
#include "owned_delete.hpp"

namespace zkr::detail {

void watch_own_node(Client& client, const std::shared_ptr<LeaseState>& lease,
                    const std::shared_ptr<Keeper>& keeper) {
  std::weak_ptr<LeaseState> weak = lease;
  const auto epoch = lease->epoch;
  // The listener is in place before the first read is sent: a link lost
  // with that read is heard (suspended) and mended (reconnected) here.
  lease->listener = client.add_listener([weak, epoch, &client](ConnectionState state) {
    auto held = weak.lock();
    if (!held) return;
    // A late `lost` may be about the session before ours: the epoch tells.
    // The Client moves to a new epoch before it announces lost.
    if (client.session_epoch() != epoch) {
      if (state == ConnectionState::lost || state == ConnectionState::reconnected ||
          state == ConnectionState::read_only)
        held->mark_lost(LostReason::session_lost);
      return;
    }
    switch (state) {
      case ConnectionState::suspended: {
        held->link_down();
        // A suspension counted after the grant decision is one of this hold.
        const auto mark = held->suspension_mark();
        if (mark && ClientInternals::suspensions(client) > *mark)
          held->mark_lost(LostReason::suspended);
        break;
      }
      case ConnectionState::reconnected:
      case ConnectionState::read_only:
        // The same session: read the node once, re-arming the watch.
        if (const auto k = client.keeper(); k && k->session_id() == held->session_id)
          (void)held->read_if_needed(k);
        break;
      default: break;
    }
  });
  lease->read(keeper);
}

void stop_watching(Client& client, const std::shared_ptr<LeaseState>& lease) noexcept {
  try {
    client.remove_listener(lease->listener);
  } catch (const std::exception& e) {
    detail::ClientInternals::log(client)->error("lock node {}: removing its listener: {}",
                                                lease->node_path, e.what());
  }
}

void let_go_keeping_node(Client& client, const std::shared_ptr<LeaseState>& lease) noexcept {
  lease->mark_released();
  stop_watching(client, lease);
  lease->directory_use.reset();
}

void listen_for_loss(Client& client, const std::shared_ptr<LeaseState>& lease,
                     SuspendedPolicy policy, std::uint64_t suspensions) {
  if (policy == SuspendedPolicy::lost) lease->lose_on_suspension_after(suspensions);
  // A change before this call went by unseen by the policy: look now.
  if (client.session_epoch() != lease->epoch) lease->mark_lost(LostReason::session_lost);
  else if (policy == SuspendedPolicy::lost &&
           (ClientInternals::suspensions(client) > suspensions || !client.is_connected()))
    lease->mark_lost(LostReason::suspended);
}

void release_node(Client& client, const std::shared_ptr<LeaseState>& lease) noexcept {
  try {
    // Our node was deleted by someone: a node of its name now is not ours.
    const bool deleted = lease->reason() == LostReason::node_deleted;
    lease->mark_released();
    client.remove_listener(lease->listener);
    // Ends the directory's use after the delete is sent (below), so that a
    // removal of it is ordered after the delete too.
    auto use = std::move(lease->directory_use);
    if (client.session_epoch() != lease->epoch) return;  // the node went with its session
    if (deleted) return;
    auto keeper = client.keeper();
    if (keeper && client.is_connected()) {
      // Only a node proven ours goes (owned_delete.hpp): by the last read
      // of it (our create's reply, or the own-node watch's read) if nothing
      // was heard of it since, with no request of our own; else by a read
      // sent now, the delete following its reply.
      const Ownership ours{.session_id = keeper->session_id(), .czxid = lease->czxid};
      const auto registry = DirectoryRegistry::of(client);
      if (const auto version = lease->proven_version()) {
        // Sent now, so that the session's next requests (our next acquire's
        // create) come after it, as a release promises.
        registry->watch_release(lease->node_path, lease->epoch, lease->czxid,
                                keeper->async_remove(lease->node_path, *version));
        return;
      }
      auto removed = std::make_shared<std::promise<Result<Empty>>>();
      registry->watch_release(lease->node_path, lease->epoch, lease->czxid, removed->get_future());
      // The directory's use ends once the delete is sent, or found not due.
      auto until_sent = std::make_shared<std::unique_ptr<DirectoryRegistry::Use>>(std::move(use));
      remove_if_ours(keeper, lease->node_path, ours, detail::ClientInternals::log(client),
                     [removed, until_sent, path = lease->node_path](Result<Removal> removal) {
                       until_sent->reset();
                       removed->set_value(as_delete_reply(removal, path));
                     });
      return;
    }
    detail::ClientInternals::remove_in_background(client, lease->node_path, lease->epoch, false,
                                                  lease->czxid);
  } catch (const std::exception& e) {
    detail::ClientInternals::log(client)->error("release of {} failed: {}", lease->node_path,
                                                e.what());
    detail::ClientInternals::remove_in_background(client, lease->node_path, lease->epoch, false,
                                                  lease->czxid);
  }
}

}  // namespace zkr::detail
