// Attempt: one lock attempt, from our create to the grant, within one
// session (internal to LockInternals, lock_internals.hpp). One state machine
// (the stages below), declared here and defined by stage, so that each file
// reads in one sitting: attempt.cpp runs the stages and binds the session,
// attempt_queue.cpp queues our node and reads where it stands,
// attempt_wait.cpp waits for our turn, grants, and abandons.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attempt_inbox.hpp"
#include "directory_registry.hpp"
#include "grant_state.hpp"
#include "lock_driver.hpp"
#include "lock_internals.hpp"
#include "pending_reply.hpp"
#include "task.hpp"
#include "zkr/client.hpp"
#include "zkr/keeper.hpp"
#include "zkr/retry.hpp"

namespace zkr::detail {

// The session our view of the queue belongs to has ended: every node we knew,
// ours included, is gone or going, and nothing we saw may be trusted.
struct SessionGone {
  std::uint64_t epoch;  // of the session that ended
};

inline bool passed(const Deadline& deadline) { return deadline && Clock::now() >= *deadline; }

// How a wait for our turn ended.
enum class Turn { ours, deadline, stopped, vanished, under_lost };

// A request's reply to await later: sent() hands the handler to `send`.
template <class T, class Send>
PendingReply<Result<T>> sent(Send send) {
  PendingReply<Result<T>> reply;
  send(reply.handler());
  return reply;
}

// One acquire, from our create to the grant, within one session. A
// coroutine (task.hpp): it parks no thread while it waits, and runs on the
// thread that ends each wait, so nothing in it blocks.
class Attempt {
 public:
  // after_epoch: a session this acquire already lost; wait for a later one.
  // held_write, if not null, outlives the attempt.
  Attempt(LockInternals& lock, std::shared_ptr<AttemptInbox> inbox, Deadline deadline,
          std::uint64_t after_epoch, const HeldWriteNode* held_write,
          std::shared_ptr<GrantState> under)
      : after_epoch_(after_epoch),
        held_write_(held_write),
        under_(std::move(under)),
        lock_(lock),
        client_(lock.client_),
        inbox_(std::move(inbox)),
        deadline_(deadline) {
    // A node of ours to take up again: looked for as after a lost create
    // reply (recover_node), by the guid in its name.
    if (const auto node = lock.take_adoption();
        node.starts_with(kProtectedPrefix) && node.size() > kProtectedPrefix.size() + kGuidLength) {
      guid_ = node.substr(kProtectedPrefix.size(), kGuidLength);
      create_sent_ = true;
    }
    // The grant we acquire under, lost while we wait: wake and look.
    if (under_)
      on_under_lost_ = std::make_unique<std::stop_callback<std::function<void()>>>(
          under_->token(), [weak = std::weak_ptr<AttemptInbox>(inbox_)] {
            if (const auto alive = weak.lock()) alive->wake_on_timer_thread();
          });
  }
  ~Attempt() { drop_waiting_lease(); }
  Attempt(const Attempt&) = delete;
  Attempt& operator=(const Attempt&) = delete;

  // LockInternals::acquisition(): attempts, one session after another, until
  // one grants (the grant), gives up (nullptr: the deadline, or a stop), or
  // fails (KeeperError for what the retry policy will not retry).
  static Task<std::shared_ptr<GrantState>> acquire(LockInternals& lock, Deadline deadline,
                                                   const HeldWriteNode* held_write,
                                                   std::stop_token stop,
                                                   std::shared_ptr<GrantState> under);

 private:
  enum class Action { retry, give_back, fail, session_gone };
  struct Next {
    Action action;
    RetryBudget::Step step;
  };
  // What one look at the queue sends: a listing of it; for a semaphore's
  // leases, also a listing of the semaphore's path and a read of a
  // SharedCount limit. Watched (by a waiter of the grant queue): what
  // changes there may let us in.
  struct Look {
    PendingReply<Result<Children>> queue;
    std::optional<PendingReply<Result<Children>>> semaphore;
    std::optional<PendingReply<Result<NodeData>>> count;
  };
  struct Looked {
    Result<Children> queue;
    std::optional<Result<Children>> semaphore;
    std::optional<Result<NodeData>> count;
  };
  enum class Change { deleted, look_again, deadline, stopped, under_lost };

  // Running the stages, the session, and waits (attempt.cpp).
  Next after_failure(const std::exception_ptr& failure, RetryBudget& budget);
  Task<void> pause(milliseconds delay);
  Task<void> bind_session();
  bool under_lost() const;
  Task<void> check_layout();
  Task<Client::Session> connected_session();
  std::optional<Client::Session> session_now();
  Task<void> await_session_after(std::uint64_t epoch);
  // Waits for one reply, at most a session timeout (past that the link is as
  // good as lost, and the retry loop decides), and never more than a session
  // timeout past our deadline: the deadline is for waiting on other holders,
  // but a round trip under way may finish, so that try_acquire() still gets
  // its one attempt. (What a request we stop waiting for may have created,
  // abandon() deletes.)
  template <class T>
  auto await(PendingReply<Result<T>>& reply, const std::string& path) {
    const auto timeout = keeper_->default_timeout();
    auto until = Clock::now() + timeout;
    if (deadline_) until = std::min(until, detail::later_by(*deadline_, timeout));
    return reply.until(inbox_->timers(), until, Result<T>(Errc::operation_timeout, path));
  }
  Clock::time_point bounded(Clock::time_point t) const;

  // Stage queue: our node, and where it stands (attempt_queue.cpp).
  std::string prefix_path() const;
  std::optional<std::string> find_ours(const std::vector<std::string>& children,
                                       std::string_view guid) const;
  Task<void> enqueue();
  Task<bool> recover_node();
  Look look(bool watch);
  Task<Looked> await_look(Look& look);
  bool position(const Children& listed);
  bool write_held() const;
  bool place(QueuePosition where, const std::vector<std::string>& children);
  bool position_from(const Looked& looked);
  void refuse_other_protocols(const Result<Children>& siblings) const;
  void read_limit(const Result<NodeData>& node);
  std::int32_t lease_limit() const;
  void forget_guid();
  void remove_ghosts(const std::vector<std::string>& children);

  // Stages wait and grant, and giving up (attempt_wait.cpp).
  Task<Turn> wait_turn();
  Task<Turn> walk_down();
  Task<Turn> wait_for_leases();
  bool own_watch_lost();
  std::optional<Turn> interrupted();
  Task<bool> watch_before();
  Task<bool> look_again(bool watch);
  Watcher watch_for_hand_off();
  bool own_node_lost();
  bool watched(const std::string& path) const;
  Clock::time_point change_deadline() const;
  std::optional<Change> what_changed(bool woken);
  std::shared_ptr<GrantState> new_grant() const;
  std::shared_ptr<GrantState> grant();
  Task<void> abandon_if_session_lives();
  void start_over();
  void drop_waiting_lease() noexcept;
  Task<void> abandon();
  Task<bool> remove_now(const std::string& path);

  const std::uint64_t after_epoch_;
  // The attempt lives in a coroutine frame for as long as it waits, so
  // what only some locks use is held by pointer (8 bytes where unused).
  const HeldWriteNode* const held_write_;    // may be null
  const std::shared_ptr<GrantState> under_;  // granted only while it holds; may be null
  std::unique_ptr<std::stop_callback<std::function<void()>>> on_under_lost_;
  LockInternals& lock_;
  Client& client_;
  const std::shared_ptr<AttemptInbox> inbox_;
  const Deadline deadline_;
  // Made once we wait for a connection (none is up when we bind), and kept
  // while we may; the Client holds it weakly.
  std::shared_ptr<std::function<void()>> on_session_change_;

  std::shared_ptr<Keeper> keeper_;
  std::uint64_t epoch_ = 0;
  std::int64_t session_id_ = 0;
  std::string guid_ = new_guid();
  std::vector<std::string> forgotten_guids_;  // see forget_guid()
  bool create_sent_ = false;                  // a create may have been applied
  std::string node_;                          // our node's name, once known
  std::int64_t czxid_ = 0;
  // Where the attempt stands; each stage ends on a reply (or a watch event
  // and the reply that follows it), never on a flag set elsewhere:
  //   queue  our create and the listing (enqueue), until a listing shows
  //          our node: then waits_for_ names the last node before it;
  //   wait   until a reply after the last of those went shows none left
  //          (grant), our node gone (queue again), or the deadline;
  //   grant  the grant is made and handed out.
  // A retry after a link error resumes the stage it was in.
  enum class Stage { queue, wait, grant };
  Stage stage_ = Stage::queue;
  // Of the nodes before ours that keep us waiting (and may still exist), how
  // many, and the last: the one a queue waiter watches. Only that one is
  // kept: a waiter parks with this state, and the rest are only counted.
  std::size_t lower_count_ = 0;
  std::string waits_for_;
  bool ahead_of_writers_ = false;      // see QueuePosition
  std::shared_ptr<GrantState> grant_;  // once someone was before us: watches our node
  // Granted at once through our thread's write node: that grant's token.
  std::optional<std::int64_t> downgrade_token_;
  std::int32_t shared_count_ = 0;  // a SharedCount limit, as the last look read it
  // The queue's look that placed us set the grant waiter's watches, and its
  // reply came: the first wait needs no look of its own. Cleared as it is
  // used, and by a retry (a reply lost with the link set nothing).
  bool leases_watched_ = false;
  // From our first create to the release (the grant takes it) or abandon().
  std::unique_ptr<DirectoryRegistry::Use> use_;
};

}  // namespace zkr::detail
