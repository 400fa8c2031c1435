// A grant's life after its node is made (lock_internals.hpp declares these):
// the own-node watch and its listener, the loss rules of a granted grant, and
// the release that deletes the node. Apart from the attempt because every
// recipe's grant passes through here, whoever created its node.
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

void watch_own_node(Client& client, const std::shared_ptr<GrantState>& grant,
                    const std::shared_ptr<Keeper>& keeper) {
  std::weak_ptr<GrantState> weak = grant;
  const auto epoch = grant->epoch;
  // The listener is in place before the first read is sent: a link lost
  // with that read is heard (suspended) and mended (reconnected) here.
  grant->listener = client.add_listener([weak, epoch, &client](ConnectionState state) {
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
  grant->read(keeper);
}

void stop_watching(Client& client, const std::shared_ptr<GrantState>& grant) noexcept {
  try {
    client.remove_listener(grant->listener);
  } catch (const std::exception& e) {
    detail::ClientInternals::log(client)->error("lock node {}: removing its listener: {}",
                                                grant->node_path, e.what());
  }
}

void let_go_keeping_node(Client& client, const std::shared_ptr<GrantState>& grant) noexcept {
  grant->mark_released();
  stop_watching(client, grant);
  grant->directory_use.reset();
}

void listen_for_loss(Client& client, const std::shared_ptr<GrantState>& grant,
                     SuspendedPolicy policy, std::uint64_t suspensions) {
  if (policy == SuspendedPolicy::lost) grant->lose_on_suspension_after(suspensions);
  // A change before this call went by unseen by the policy: look now.
  if (client.session_epoch() != grant->epoch) grant->mark_lost(LostReason::session_lost);
  else if (policy == SuspendedPolicy::lost &&
           (ClientInternals::suspensions(client) > suspensions || !client.is_connected()))
    grant->mark_lost(LostReason::suspended);
}

void release_node(Client& client, const std::shared_ptr<GrantState>& grant) noexcept {
  try {
    // Our node was deleted by someone: a node of its name now is not ours.
    const bool deleted = grant->reason() == LostReason::node_deleted;
    grant->mark_released();
    client.remove_listener(grant->listener);
    // Ends the directory's use after the delete is sent (below), so that a
    // removal of it is ordered after the delete too.
    auto use = std::move(grant->directory_use);
    if (client.session_epoch() != grant->epoch) return;  // the node went with its session
    if (deleted) return;
    auto keeper = client.keeper();
    if (keeper && client.is_connected()) {
      // Only a node proven ours goes (owned_delete.hpp): by the last read
      // of it (our create's reply, or the own-node watch's read) if nothing
      // was heard of it since, with no request of our own; else by a read
      // sent now, the delete following its reply.
      const Ownership ours{.session_id = keeper->session_id(), .czxid = grant->czxid};
      const auto registry = DirectoryRegistry::of(client);
      if (const auto version = grant->proven_version()) {
        // Sent now, so that the session's next requests (our next acquire's
        // create) come after it, as a release promises.
        count_request(grant->observed, Request::remove);
        registry->watch_release(grant->node_path, grant->epoch, grant->czxid,
                                keeper->async_remove(grant->node_path, *version));
        return;
      }
      auto removed = std::make_shared<std::promise<Result<Empty>>>();
      registry->watch_release(grant->node_path, grant->epoch, grant->czxid, removed->get_future());
      // The directory's use ends once the delete is sent, or found not due.
      auto until_sent = std::make_shared<std::unique_ptr<DirectoryRegistry::Use>>(std::move(use));
      remove_if_ours(
          keeper, grant->node_path, ours, detail::ClientInternals::log(client),
          counting_removal(grant->observed,
                           [removed, until_sent, path = grant->node_path](Result<Removal> removal) {
                             until_sent->reset();
                             removed->set_value(as_delete_reply(removal, path));
                           }));
      return;
    }
    detail::ClientInternals::remove_in_background(client, grant->node_path, grant->epoch, false,
                                                  grant->czxid);
  } catch (const std::exception& e) {
    detail::ClientInternals::log(client)->error("release of {} failed: {}", grant->node_path,
                                                e.what());
    detail::ClientInternals::remove_in_background(client, grant->node_path, grant->epoch, false,
                                                  grant->czxid);
  }
}

}  // namespace zkr::detail
