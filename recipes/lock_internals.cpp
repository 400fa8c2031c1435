// One lock attempt from create to grant, and release. Long because the
// attempt (stages queue, wait, grant, and abandon) is one state machine.
#include "lock_internals.hpp"

#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <mutex>

#include "client_internals.hpp"
#include "layout_gate.hpp"
#include "lease_rule.hpp"
#include "lock_directory.hpp"
#include "lock_driver.hpp"
#include "owned_delete.hpp"
#include "pending_reply.hpp"
#include "timer_thread.hpp"
#include "wakeup.hpp"
#include "zkr/path.hpp"

namespace zkr::detail {
namespace {

// The session our view of the queue belongs to has ended: every node we knew,
// ours included, is gone or going, and nothing we saw may be trusted.
struct SessionGone {
  std::uint64_t epoch;  // of the session that ended
};

// How many times a create may find the lock directory just removed (by a
// release racing with us, or the server reaping the container) before we call
// it a bug rather than a race.
constexpr int kMaxDirectoryRaces = 100;

// What reaches a waiting attempt from other threads, and the wakeup it waits
// on. A watch event runs the attempt at once, on the keeper's event thread:
// the listing a hand-off is granted on is sent from there, with no thread
// switch. Connection states (from the Client's listener thread, where an
// acquire must not run), stops (from any thread, inside request_stop()) and
// session changes (from the Client's session thread) run it on the timer
// thread instead.
class AttemptInbox {
 public:
  explicit AttemptInbox(std::shared_ptr<TimerThread> timers)
      : timers_(std::move(timers)), wakeup_(Wakeup::make(*timers_)) {}

  void on_event(const WatchEvent& event) {
    {
      std::lock_guard lock(mutex_);
      events_.push_back(event);
    }
    wakeup_->wake();
  }
  void on_state(ConnectionState state) {
    {
      std::lock_guard lock(mutex_);
      states_.push_back(state);
    }
    wake_on_timer_thread();
  }
  // The caller's stop_token was stopped (from any thread).
  void on_stop() {
    {
      std::lock_guard lock(mutex_);
      stopped_ = true;
    }
    wake_on_timer_thread();
  }
  void wake_on_timer_thread() {
    (void)timers_->at(Clock::now(), [weak = std::weak_ptr<Wakeup>(wakeup_)] {
      if (const auto wakeup = weak.lock()) wakeup->wake();
    });
  }

  bool stopped() {
    std::lock_guard lock(mutex_);
    return stopped_;
  }
  // co_await until(t): false if t came with nothing new.
  auto until(Deadline deadline) { return wakeup_->until(deadline); }
  std::deque<WatchEvent> take_events() {
    std::lock_guard lock(mutex_);
    return std::exchange(events_, {});
  }
  std::deque<ConnectionState> take_states() {
    std::lock_guard lock(mutex_);
    return std::exchange(states_, {});
  }
  TimerThread& timers() { return *timers_; }

 private:
  const std::shared_ptr<TimerThread> timers_;
  const std::shared_ptr<Wakeup> wakeup_;
  std::mutex mutex_;
  std::deque<WatchEvent> events_;       // guarded by mutex_
  std::deque<ConnectionState> states_;  // guarded by mutex_
  bool stopped_ = false;                // guarded by mutex_
};

bool passed(const Deadline& deadline) { return deadline && Clock::now() >= *deadline; }

// How a wait for our turn ended.
enum class Turn { ours, deadline, stopped, vanished, under_lost };

// A request's reply to await later: sent() hands the handler to `send`.
template <class T, class Send>
PendingReply<Result<T>> sent(Send send) {
  PendingReply<Result<T>> reply;
  send(reply.handler());
  return reply;
}

}  // namespace

// One acquire, from our create to the grant, within one session. A
// coroutine (task.hpp): it parks no thread while it waits, and runs on the
// thread that ends each wait, so nothing in it blocks.
class Attempt {
 public:
  // after_epoch: a session this acquire already lost; wait for a later one.
  Attempt(LockInternals& lock, std::shared_ptr<AttemptInbox> inbox, Deadline deadline,
          std::uint64_t after_epoch, std::optional<HeldWriteNode> held_write,
          std::shared_ptr<LeaseState> under)
      : after_epoch_(after_epoch),
        held_write_(std::move(held_write)),
        under_(std::move(under)),
        lock_(lock),
        client_(lock.client_),
        inbox_(std::move(inbox)),
        deadline_(deadline),
        on_session_change_(
            std::make_shared<std::function<void()>>([weak = std::weak_ptr<AttemptInbox>(inbox_)] {
              if (const auto alive = weak.lock()) alive->wake_on_timer_thread();
            })) {
    // The lease we acquire under, lost while we wait: wake and look.
    if (under_)
      on_under_lost_.emplace(under_->token(), [weak = std::weak_ptr<AttemptInbox>(inbox_)] {
        if (const auto alive = weak.lock()) alive->wake_on_timer_thread();
      });
  }
  ~Attempt() { drop_waiting_lease(); }
  Attempt(const Attempt&) = delete;
  Attempt& operator=(const Attempt&) = delete;

  // The lease, or nullptr if the deadline passed or a stop came. Throws SessionGone, or
  // KeeperError for what the retry policy will not retry.
  Task<std::shared_ptr<LeaseState>> run() {
    RetryBudget budget(client_.retry_policy(), client_.sleeper(), deadline_);
    for (;;) {
      std::exception_ptr failure;
      try {
        co_await bind_session();
        co_await check_layout();  // before our create: nothing queued on a wrong layout
        for (;;) {
          // Checked between stages, the grant's included: a stop that comes
          // as our turn does gives the lock on rather than take it.
          if (inbox_->stopped()) {
            co_await abandon();
            co_return nullptr;
          }
          switch (stage_) {
            case Stage::queue:
              co_await enqueue();  // ends in Stage::wait: a listing showed our node
              break;
            case Stage::wait:
              switch (co_await wait_turn()) {
                case Turn::ours: stage_ = Stage::grant; break;
                case Turn::deadline:
                case Turn::stopped: co_await abandon(); co_return nullptr;
                case Turn::vanished: start_over(); break;  // back to Stage::queue
                case Turn::under_lost: co_await abandon(); throw UnderLeaseLost{};
              }
              break;
            case Stage::grant:
              co_await check_layout();  // a flag, unless the record's watch fired meanwhile
              if (under_lost()) {
                co_await abandon();
                throw UnderLeaseLost{};
              }
              co_return grant();
          }
        }
      } catch (...) {
        failure = std::current_exception();
      }
      // What to do about it is decided here, and done below: a coroutine
      // cannot wait inside a handler.
      const auto next = after_failure(failure, budget);
      switch (next.action) {
        case Action::session_gone: co_await abandon_if_session_lives(); throw SessionGone{epoch_};
        case Action::give_back: co_await abandon(); co_return nullptr;
        case Action::fail: co_await abandon(); std::rethrow_exception(failure);
        case Action::retry: co_await pause(budget.timer_delay(next.step)); break;
      }
    }
  }

 private:
  enum class Action { retry, give_back, fail, session_gone };
  struct Next {
    Action action;
    RetryBudget::Step step;
  };

  Next after_failure(const std::exception_ptr& failure, RetryBudget& budget) {
    try {
      std::rethrow_exception(failure);
    } catch (const SessionGone&) {
      return {Action::session_gone, {}};
    } catch (const KeeperError& e) {
      if (inbox_->stopped()) return {Action::give_back, {}};  // whatever the error: out
      // session_expired, or any link error from a session the Client has
      // already replaced (closing it, so its requests answer `closing`).
      const bool replaced = epoch_ != 0 && client_.session_epoch() != epoch_;
      if (e.errc() == Errc::session_expired || (replaced && is_connection_error(e.errc())))
        return {Action::session_gone, {}};
      // A link error at the deadline (a connection waited for until then,
      // say): the caller's time ran out, not the retry policy's.
      if (is_retryable(e.errc()) && passed(deadline_)) return {Action::give_back, {}};
      const auto step = is_retryable(e.errc()) ? budget.next() : RetryBudget::Step{};
      if (step.verdict == RetryBudget::Verdict::give_up) return {Action::fail, step};
      if (step.verdict == RetryBudget::Verdict::past_deadline) return {Action::give_back, step};
      client_.logger().debug("lock {}: {}; retrying in {} ms", lock_.dir_, e.what(),
                             step.delay.count());
      return {Action::retry, step};
    } catch (...) {
      return {Action::fail, {}};
    }
  }

  // A retry's delay, on the timer; a stop ends it early.
  Task<void> pause(milliseconds delay) {
    if (delay <= milliseconds::zero()) co_return;
    const auto until = Clock::now() + delay;
    while (co_await inbox_->until(until))
      if (inbox_->stopped()) co_return;
  }

  Task<void> bind_session() {
    co_await await_session_after(after_epoch_);
    if (inbox_->stopped()) co_return;
    auto [keeper, epoch] = co_await connected_session();
    client_.logger().debug("lock {}: attempt on session epoch {} (0x{:x})", lock_.dir_, epoch,
                           keeper->session_id());
    if (epoch_ == 0) {
      epoch_ = epoch;
      session_id_ = keeper->session_id();
    } else if (epoch != epoch_) {
      throw SessionGone{epoch_};
    }
    keeper_ = std::move(keeper);
    if (under_lost()) throw UnderLeaseLost{};  // before our create: nothing to undo
  }

  // The lease we acquire under is lost, or of another session than ours.
  bool under_lost() const {
    return under_ && (under_->reason() != LostReason::none || under_->epoch != epoch_);
  }

  // A LockFactory's lock: the root's layout record proven ours in this
  // session (layout_gate.hpp). Sends nothing while its watch stands.
  Task<void> check_layout() {
    const auto& gate = lock_.options_.layout_gate;
    if (!gate || gate->proven(epoch_)) co_return;
    auto until = Clock::now() + keeper_->default_timeout();
    if (deadline_) until = std::min(until, *deadline_ + keeper_->default_timeout());
    co_await gate->verify(keeper_, epoch_, inbox_->timers(), until);
  }

  // Client::session_when_connected() without a blocked thread: the Client
  // calls us back at its next change while none serves.
  Task<Client::Session> connected_session() {
    const auto until = bounded(zkr::deadline_after(client_.options().connection_timeout));
    for (;;) {
      if (inbox_->stopped())
        throw KeeperError(Errc::connection_loss, "", "stopped while waiting for a connection");
      if (auto session = ClientInternals::session_now(client_, on_session_change_))
        co_return std::move(*session);
      if (!co_await inbox_->until(until)) break;
    }
    if (auto session = ClientInternals::session_now(client_, nullptr))
      co_return std::move(*session);
    throw KeeperError(Errc::connection_loss, "",
                      "not connected to " + client_.options().connect_string +
                          " within the connection timeout" + (deadline_ ? " or the deadline" : ""));
  }

  // After our session ended, the Client may not have heard of it yet: its
  // keeper is still the dead one. Binding to it would only fail again.
  Task<void> await_session_after(std::uint64_t epoch) {
    if (epoch == 0) co_return;
    const auto until = bounded(zkr::deadline_after(client_.options().connection_timeout));
    while (client_.session_epoch() <= epoch) {
      // The Client announces lost after moving to the next epoch: a state wakes us.
      if (!co_await inbox_->until(until))
        throw KeeperError(Errc::connection_loss, lock_.dir_, "no new session after ours ended");
      if (inbox_->stopped()) co_return;  // run() sees it next
      (void)inbox_->take_states();
      (void)inbox_->take_events();
    }
  }

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
  Clock::time_point bounded(Clock::time_point t) const {
    return deadline_ ? std::min(t, *deadline_) : t;
  }

  std::string prefix_path() const {
    return join_path(lock_.dir_, lock_.leases_ ? protected_lease_prefix(guid_)
                                               : protected_prefix(guid_, lock_.kind_));
  }
  // The node our create under `guid` made, if listed.
  std::optional<std::string> find_ours(const std::vector<std::string>& children,
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
  Task<void> enqueue() {
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
        keeper_->async_create(prefix_path(), lock_.holder_, CreateMode::ephemeral_sequential,
                              lock_.create_options_, std::move(on_reply));
      });
      auto looking = look(/*watch=*/false);
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
        if (position_from(looked)) co_return;
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
  Task<bool> recover_node() {
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
    auto checking =
        sent<Stat>([&](auto on_reply) { keeper_->async_exists(path, {}, std::move(on_reply)); });
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
    client_.logger().debug("lock {}: adopted {} after a lost reply", lock_.dir_, node_);
    co_return position_from(looked);
  }

  // What one look at the queue sends: a listing of it; for a semaphore's
  // leases, also a listing of the semaphore's path and a read of a
  // SharedCount limit. Watched (by a waiter of the lease queue): what
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
  Look look(bool watch) {
    const Watcher watcher = watch ? watch_for_hand_off() : Watcher{};
    Look out{.queue = {}, .semaphore = {}, .count = {}};
    if (lock_.leases_) {
      const auto& leases = *lock_.leases_;
      out.semaphore = sent<Children>([&](auto on_reply) {
        keeper_->async_children(leases.semaphore_dir, {}, std::move(on_reply));
      });
      if (!leases.fixed_max)
        out.count = sent<NodeData>([&](auto on_reply) {
          keeper_->async_get(leases.count_path, watcher, std::move(on_reply));
        });
    }
    out.queue = sent<Children>(
        [&](auto on_reply) { keeper_->async_children(lock_.dir_, watcher, std::move(on_reply)); });
    return out;
  }
  Task<Looked> await_look(Look& look) {
    std::optional<Result<Children>> semaphore;
    std::optional<Result<NodeData>> count;
    if (look.semaphore) semaphore = co_await await(*look.semaphore, lock_.leases_->semaphore_dir);
    if (look.count) count = co_await await(*look.count, lock_.leases_->count_path);
    auto queue = co_await await(look.queue, lock_.dir_);
    co_return Looked{std::move(queue), std::move(semaphore), std::move(count)};
  }
  // Where our node stands in a listing of the directory. False: not there.
  // Every listing goes through here, the one a grant is decided on included;
  // one showing another lock protocol's nodes ends the attempt (run()
  // deletes our node): that protocol does not see ours, nor we its.
  bool position(const Children& listed) {
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
  // its lease still held, as of this listing (a delete of it would have
  // reached the lease's watch before this reply).
  bool write_held() const {
    return held_write_ && held_write_->epoch == epoch_ && held_write_->lease &&
           held_write_->lease->reason() == LostReason::none;
  }

  // Our node's standing by the queue's rule, taken as ours. False: not listed.
  bool place(QueuePosition where, const std::vector<std::string>& children) {
    if (!where.found) {
      client_.logger().warn("lock {}: our node {} vanished; queueing again", lock_.dir_, node_);
      node_.clear();
      create_sent_ = false;
      guid_ = new_guid();
      return false;
    }
    lower_ = std::move(where.lower);
    ahead_of_writers_ = where.ahead_of_writers;
    // A read granted while its thread's write node is listed (a downgrade)
    // carries that write grant's fencing token, not its own node's: a writer
    // queued after the write node but before this read is granted after the
    // read ends, and must get a larger token (see zkr/read_write_lock.hpp).
    if (where.holds && write_held() &&
        std::find(children.begin(), children.end(), held_write_->name) != children.end())
      downgrade_token_ = held_write_->lease->fencing_token;
    stage_ = Stage::wait;
    // Someone is before us: watch our own node from now on, so that a delete
    // of it while we wait is known before any later event or reply (a
    // session's come in order): a node of its name made again by someone else
    // is never taken for ours by the listing that grants us the lock.
    if (!lower_.empty() && !lease_) {
      lease_ = new_lease();
      watch_own_node(client_, lease_, keeper_);
    }
    client_.logger().debug("lock {}: queued as {} (session epoch {}), {} before us", lock_.dir_,
                           node_, epoch_, lower_.size());
    return true;
  }

  // Walks down the nodes before ours until none is left. Only the server's
  // word says who is before us: a node's existence, or a listing. What is
  // written in a node (by its owner, Curator's revoker, or anyone allowed to
  // write it) is never read as a sign of anything.
  Task<Turn> wait_turn() {
    for (;;) {
      const auto turn = co_await walk_down();
      if (turn != Turn::ours) co_return turn;
      // No node before ours. The grant needs our node's watch armed: a read
      // whose reply the link lost armed nothing (LeaseState::read_needed),
      // and a delete after the grant would go unheard. So read it again and
      // list again: the read's reply comes first, and the listing says where
      // we stand after it. Once per lost read.
      if (!lease_ || !lease_->read_if_needed(keeper_)) co_return Turn::ours;
      auto looking = look(/*watch=*/false);
      if (!position_from(co_await await_look(looking))) co_return Turn::vanished;
    }
  }

  // Down the nodes before ours, until none is left (ours), the deadline, a
  // stop, or our node gone (vanished).
  Task<Turn> walk_down() {
    if (lock_.leases_) co_return co_await wait_for_leases();
    while (!lower_.empty()) {
      if (passed(deadline_)) co_return Turn::deadline;
      if (inbox_->stopped()) co_return Turn::stopped;
      if (own_node_lost()) co_return Turn::vanished;
      if (under_lost()) co_return Turn::under_lost;
      const std::string before = join_path(lock_.dir_, lower_.back());
      // A get, not an exists: it arms no watch when the node is already gone,
      // and lock node names are never used twice, so such a watch would stay
      // in the session for ever.
      auto watching = sent<NodeData>([&](auto on_reply) {
        keeper_->async_get(before, watch_for_hand_off(), std::move(on_reply));
      });
      const auto watched = co_await await(watching, before);
      bool gone = watched.error() == Errc::no_node;
      if (!gone && !watched.ok())
        throw KeeperError(watched.error(), before, "watching the node before ours");
      if (!gone) {
        client_.logger().debug("lock {}: {} waits for {}", lock_.dir_, node_, lower_.back());
        std::vector<std::string> paths{before};  // (a named vector: GCC 12 coroutines)
        switch (co_await await_change(std::move(paths))) {
          case Change::deleted: gone = true; break;
          case Change::look_again: break;
          case Change::deadline: co_return Turn::deadline;
          case Change::stopped: co_return Turn::stopped;
          case Change::under_lost: co_return Turn::under_lost;
        }
      }
      if (!gone) continue;
      // The nodes below the one that went may be gone too (typically: it held
      // the lock, so they were), or not: one listing says which, however many,
      // and it is the reply a grant is decided on. The event that brought us
      // here may be old: a process stopped (SIGSTOP, a long GC, a swapped-out
      // VM) wakes to events read before its session expired, and a grant
      // decided on them alone would hold a lock that another process was
      // granted meanwhile. A reply that comes after the decision says the
      // session still lives and our node is still there; a listing also shows
      // what arrived while we waited (another protocol's nodes: position()).
      // lower_ is replaced only by that reply: a retry after a lost one
      // watches (and lists) again rather than granting on the event alone.
      // The deletion event ran us on the event thread, so the listing leaves
      // from there, with no thread switch.
      auto looking = look(/*watch=*/false);
      if (!position_from(co_await await_look(looking))) co_return Turn::vanished;
    }
    co_return own_node_lost() ? Turn::vanished : Turn::ours;
  }

  // The lease queue's wait: any lease going (or the count rising) may let us
  // in, so each look watches the listing (and the count), and the next look,
  // after an event or a reconnect, is what we are granted on. A look whose
  // reply was lost armed nothing: the retry looks again before it waits.
  Task<Turn> wait_for_leases() {
    while (!lower_.empty()) {
      if (passed(deadline_)) co_return Turn::deadline;
      if (inbox_->stopped()) co_return Turn::stopped;
      if (own_node_lost()) co_return Turn::vanished;
      if (under_lost()) co_return Turn::under_lost;
      auto looking = look(/*watch=*/true);
      if (!position_from(co_await await_look(looking))) co_return Turn::vanished;
      if (lower_.empty()) break;
      client_.logger().debug("lock {}: {} waits for one of {} leases", lock_.dir_, node_,
                             lower_.size());
      std::vector<std::string> watched{lock_.dir_};
      if (!lock_.leases_->fixed_max) watched.push_back(lock_.leases_->count_path);
      switch (co_await await_change(watched)) {
        case Change::deleted:
        case Change::look_again: break;
        case Change::deadline: co_return Turn::deadline;
        case Change::stopped: co_return Turn::stopped;
        case Change::under_lost: co_return Turn::under_lost;
      }
    }
    if (own_node_lost()) co_return Turn::vanished;
    co_return under_lost() ? Turn::under_lost : Turn::ours;
  }

  // The watch on the node before ours: its event runs this attempt (the
  // inbox wakes it on the event thread).
  Watcher watch_for_hand_off() {
    return [inbox = std::weak_ptr<AttemptInbox>(inbox_)](const WatchEvent& event) {
      if (const auto waiting = inbox.lock()) waiting->on_event(event);
    };
  }

  // Our node was deleted while we waited (the own-node watch says so).
  bool own_node_lost() {
    if (!lease_) return false;
    const auto why = lease_->reason();
    if (why == LostReason::session_lost) throw SessionGone{epoch_};
    return why == LostReason::node_deleted;
  }

  // Where our node stands by a look's replies. False: ours is gone.
  bool position_from(const Looked& looked) {
    const auto& listed = looked.queue;
    if (!listed.ok() && listed.error() != Errc::no_node)
      throw KeeperError(listed.error(), lock_.dir_, "listing the lock directory");
    if (looked.semaphore) refuse_other_protocols(*looked.semaphore);
    if (looked.count) read_limit(*looked.count);
    return listed.ok() ? position(listed.value()) : position(Children{});
  }

  // A semaphore's path shared with another lock protocol: neither would
  // see the other's nodes.
  void refuse_other_protocols(const Result<Children>& siblings) const {
    const auto& dir = lock_.leases_->semaphore_dir;
    if (!siblings.ok() && siblings.error() != Errc::no_node)
      throw KeeperError(siblings.error(), dir, "listing the semaphore's path");
    if (!siblings.ok()) return;
    if (const auto foreign =
            find_foreign_lock_nodes(siblings.value().names, QueueFamily::semaphore))
      throw KeeperError(Errc::foreign_lock_protocol, dir,
                        foreign->description() +
                            " uses this semaphore's path; neither protocol sees the other's "
                            "nodes, so both would be granted at once: refusing to queue beside it" +
                            with_advice(*foreign, QueueFamily::semaphore));
  }

  // A SharedCount limit, as this look read it.
  void read_limit(const Result<NodeData>& node) {
    const auto& path = lock_.leases_->count_path;
    if (node.error() == Errc::no_node)
      throw KeeperError(Errc::bad_arguments, path,
                        "the semaphore's SharedCount node does not exist");
    if (!node.ok()) throw KeeperError(node.error(), path, "reading the semaphore's SharedCount");
    const auto count = decode_shared_count(node.value().data);
    if (!count)
      throw KeeperError(Errc::bad_arguments, path,
                        "a SharedCount holds 4 bytes (a big-endian integer), this node " +
                            std::to_string(node.value().data.size()));
    if (*count < 1)
      throw KeeperError(Errc::bad_arguments, path,
                        "the semaphore's SharedCount is " + std::to_string(*count) +
                            "; at least 1 lease is needed");
    shared_count_ = *count;
  }
  std::int32_t lease_limit() const {
    return lock_.leases_->fixed_max ? *lock_.leases_->fixed_max : shared_count_;
  }

  enum class Change { deleted, look_again, deadline, stopped, under_lost };

  // The next change to one of the watched paths (an event of a spent watch
  // on an earlier one is passed over), a reconnect, or the end of the wait.
  Task<Change> await_change(std::vector<std::string> watched) {
    for (;;) {
      // Without a deadline we still look again once per session timeout: a
      // watch is one message, and a lost one must not mean waiting forever.
      const auto safety = Clock::now() + keeper_->default_timeout();
      const auto until = deadline_ ? std::min(*deadline_, safety) : safety;
      if (!co_await inbox_->until(until))
        co_return passed(deadline_) ? Change::deadline : Change::look_again;
      if (inbox_->stopped()) co_return Change::stopped;
      if (under_lost()) co_return Change::under_lost;
      for (const auto state : inbox_->take_states()) {
        // States reach listeners late: a `lost` may belong to the session
        // before ours. The Client moves to a new epoch before it announces
        // lost, so the epoch says whether it is about ours.
        if (state == ConnectionState::lost || state == ConnectionState::reconnected) {
          if (client_.session_epoch() != epoch_) throw SessionGone{epoch_};
          co_return Change::look_again;  // the watch survives; looking again is cheap and sure
        }
        // suspended, read_only: the watch stays armed; keep waiting.
      }
      for (const auto& event : inbox_->take_events()) {
        if (std::find(watched.begin(), watched.end(), event.path) == watched.end())
          continue;  // a spent watch on an earlier node
        if (event.type == EventType::deleted) co_return Change::deleted;
        if (event.type == EventType::session_ended) throw SessionGone{epoch_};
        co_return Change::look_again;  // changed: perhaps marked; the next get reads it
      }
    }
  }

  std::shared_ptr<LeaseState> new_lease() const {
    return std::make_shared<LeaseState>(join_path(lock_.dir_, node_), czxid_, epoch_, session_id_,
                                        detail::ClientInternals::callback_thread(client_),
                                        downgrade_token_);
  }

  // The lease. A contender that waited watches its node since it queued
  // (and wait_turn() saw that watch armed); one granted at once starts now,
  // without waiting for the reply: its node was in the listing that granted
  // it, and a reply saying it is gone, or not ours, marks the lease lost.
  std::shared_ptr<LeaseState> grant() {
    // Taken before anything is sent: a suspension counted later fell after
    // the decision.
    const auto suspensions = detail::ClientInternals::suspensions(client_);
    auto lease = std::exchange(lease_, nullptr);
    if (!lease) {
      lease = new_lease();
      watch_own_node(client_, lease, keeper_);
    }
    lease->directory_use = std::move(use_);
    lease->ahead_of_writers = ahead_of_writers_;
    listen_for_loss(client_, lease, lock_.options_.suspended_policy, suspensions);
    return lease;
  }

  // Our node went with our session, unless that session is still the
  // Client's: then it is alive, and left alone it would block the queue.
  Task<void> abandon_if_session_lives() {
    if (epoch_ != 0 && client_.session_epoch() == epoch_) co_await abandon();
  }

  void start_over() {
    client_.logger().warn("lock {}: our node {} was deleted while we waited; queueing again",
                          lock_.dir_, node_);
    node_.clear();
    create_sent_ = false;
    stage_ = Stage::queue;
    lower_.clear();
    drop_waiting_lease();
    guid_ = new_guid();
  }

  // The own-node watch of a node we no longer wait with (its listener goes).
  void drop_waiting_lease() noexcept {
    if (lease_) stop_watching(client_, std::exchange(lease_, nullptr));
  }

  // A create under guid_ may still be applied although we gave it up: the
  // next create gets a new name, and a node with the old one is deleted
  // wherever a listing shows it, so that it can never queue as a second
  // node of ours.
  void forget_guid() { forgotten_guids_.push_back(std::exchange(guid_, new_guid())); }

  void remove_ghosts(const std::vector<std::string>& children) {
    for (const auto& guid : forgotten_guids_)
      if (auto ghost = find_ours(children, guid)) {
        client_.logger().warn("lock {}: deleting {}, created late by a create we gave up on",
                              lock_.dir_, *ghost);
        detail::ClientInternals::remove_in_background(client_, join_path(lock_.dir_, *ghost),
                                                      epoch_);
      }
  }

  // Deletes our node, known or not. When the link is up the delete is done by
  // the time we return, so a caller told "not acquired" sees no node of ours;
  // otherwise the Client goes on in the background. Never throws.
  Task<void> abandon() {
    if (epoch_ == 0) co_return;
    try {
      if (!node_.empty()) {
        const std::string path = join_path(lock_.dir_, node_);
        if (!co_await remove_now(path))
          detail::ClientInternals::remove_in_background(client_, path, epoch_, false, czxid_);
      } else if (create_sent_) {
        detail::ClientInternals::remove_in_background(client_, prefix_path(), epoch_,
                                                      /*by_name_prefix=*/true);
      }
    } catch (const std::exception& e) {
      client_.logger().error("lock {}: abandoning our node failed: {}", lock_.dir_, e.what());
    }
    node_.clear();
    create_sent_ = false;
    // The directory stays known to this Client, idle; a directory we created
    // and never had a child (a container the server never reaps) goes too.
    use_.reset();
  }

  Task<bool> remove_now(const std::string& path) {
    if (!keeper_ || client_.session_epoch() != epoch_ || !client_.is_connected()) co_return false;
    // Cleaning up may take a round trip past the deadline (never more than
    // one session timeout past it, as every wait here): better than leaving
    // a node in the queue for the background to find.
    // Only if a read shows it ours (owned_delete.hpp): a node of its name
    // made by someone else is theirs.
    PendingReply<Result<Removal>> removing;
    remove_if_ours(keeper_, path, {.session_id = session_id_, .czxid = czxid_},
                   client_.options().logger, removing.handler());
    const auto removed = co_await await(removing, path);
    co_return removed.ok();  // deleted, gone, or not ours (logged)
  }

  const std::uint64_t after_epoch_;
  const std::optional<HeldWriteNode> held_write_;
  const std::shared_ptr<LeaseState> under_;  // granted only while it holds; may be null
  std::optional<std::stop_callback<std::function<void()>>> on_under_lost_;
  LockInternals& lock_;
  Client& client_;
  const std::shared_ptr<AttemptInbox> inbox_;
  const Deadline deadline_;
  // Kept while we may wait for a connection; the Client holds it weakly.
  const std::shared_ptr<std::function<void()>> on_session_change_;

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
  //          our node: then lower_ holds the nodes before it;
  //   wait   until a reply after the last of those went shows none left
  //          (grant), our node gone (queue again), or the deadline;
  //   grant  the lease is made and handed out.
  // A retry after a link error resumes the stage it was in.
  enum class Stage { queue, wait, grant };
  Stage stage_ = Stage::queue;
  std::vector<std::string> lower_;     // nodes before ours that keep us waiting, may still exist
  bool ahead_of_writers_ = false;      // see QueuePosition
  std::shared_ptr<LeaseState> lease_;  // once someone was before us: watches our node
  // Granted at once through our thread's write node: that grant's token.
  std::optional<std::int64_t> downgrade_token_;
  std::int32_t shared_count_ = 0;  // a SharedCount limit, as the last look read it
  // From our first create to the release (the lease takes it) or abandon().
  std::unique_ptr<DirectoryRegistry::Use> use_;
};

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
    client.logger().error("lock node {}: removing its listener: {}", lease->node_path, e.what());
  }
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
      remove_if_ours(keeper, lease->node_path, ours, client.options().logger,
                     [removed, until_sent, path = lease->node_path](Result<Removal> removal) {
                       until_sent->reset();
                       removed->set_value(as_delete_reply(removal, path));
                     });
      return;
    }
    detail::ClientInternals::remove_in_background(client, lease->node_path, lease->epoch, false,
                                                  lease->czxid);
  } catch (const std::exception& e) {
    client.logger().error("release of {} failed: {}", lease->node_path, e.what());
    detail::ClientInternals::remove_in_background(client, lease->node_path, lease->epoch, false,
                                                  lease->czxid);
  }
}

LockInternals::LockInternals(Client& client, std::string dir, LockOptions options, QueueKind kind,
                             std::optional<LeaseQueue> leases)
    : client_(client),
      dir_(std::move(dir)),
      options_(std::move(options)),
      kind_(kind),
      leases_(std::move(leases)),
      holder_(checked_holder_id(options_.holder_id)),
      create_options_{.acl = options_.acl.value_or(open_acl_unsafe()), .ttl = {}},
      directories_(DirectoryRegistry::of(client)) {
  validate_path(dir_);
  if (dir_ == "/") throw std::invalid_argument("a lock path cannot be the root \"/\"");
  if (options_.directory_grace < std::chrono::milliseconds::zero())
    throw std::invalid_argument("LockOptions::directory_grace is negative");
  directories_->attach(dir_);
}

LockInternals::~LockInternals() {
  // Touches only the registry: the Client may be gone (then it is closed).
  directories_->detach(dir_, options_.remove_directory_on_release);
}

Task<std::shared_ptr<LeaseState>> LockInternals::acquisition(
    Deadline deadline, std::optional<HeldWriteNode> held_write, std::stop_token stop,
    std::shared_ptr<LeaseState> under) {
  RetryBudget budget(client_.retry_policy(), client_.sleeper(), deadline);
  // Held only while we acquire: a lock object that outlives its Client must
  // not keep the thread alive.
  const auto timers = ClientInternals::timers(client_);
  std::uint64_t ended_epoch = 0;
  for (;;) {
    if (stop.stop_requested()) co_return nullptr;
    const auto inbox = std::make_shared<AttemptInbox>(timers);
    const std::stop_callback on_stop(stop, [inbox] { inbox->on_stop(); });
    const auto listener =
        client_.add_listener([weak = std::weak_ptr<AttemptInbox>(inbox)](ConnectionState state) {
          if (const auto i = weak.lock()) i->on_state(state);
        });
    std::exception_ptr failure;
    try {
      Attempt attempt(*this, inbox, deadline, ended_epoch, held_write, under);
      auto lease = co_await attempt.run();
      client_.remove_listener(listener);
      co_return lease;
    } catch (const SessionGone& gone) {
      ended_epoch = std::max(ended_epoch, gone.epoch);
    } catch (...) {
      failure = std::current_exception();
    }
    client_.remove_listener(listener);
    if (failure) std::rethrow_exception(failure);
    // Our session ended while we queued: never trust that view; queue again.
    if (!options_.requeue_after_session_loss)
      throw KeeperError(Errc::session_expired, dir_, "the session ended while acquiring the lock");
    const auto step = budget.next();
    if (step.verdict == RetryBudget::Verdict::give_up)
      throw KeeperError(Errc::session_expired, dir_,
                        "the session ended while acquiring the lock, and the retry policy gave up");
    if (step.verdict == RetryBudget::Verdict::past_deadline) co_return nullptr;
    client_.logger().info("lock {}: session ended while queued; queueing again", dir_);
    // The delay on the timer; a stop ends it early.
    const auto delay = budget.timer_delay(step);
    if (delay > milliseconds::zero()) {
      const auto until = Clock::now() + delay;
      while (co_await inbox->until(until))
        if (inbox->stopped()) break;
    }
  }
}

std::shared_ptr<LeaseState> LockInternals::acquire(Deadline deadline,
                                                   const std::optional<HeldWriteNode>& held_write,
                                                   std::stop_token stop,
                                                   std::shared_ptr<LeaseState> under) {
  // Shared with the callback, which may still be returning from set_value
  // when this thread wakes and leaves.
  const auto granted = std::make_shared<std::promise<std::shared_ptr<LeaseState>>>();
  auto outcome = granted->get_future();
  spawn(acquisition(deadline, held_write, std::move(stop), std::move(under)),
        [granted](std::exception_ptr error, std::optional<std::shared_ptr<LeaseState>> lease) {
          if (error) granted->set_exception(error);
          else granted->set_value(std::move(*lease));
        });
  return outcome.get();
}

// Sends the delete and returns: the session's later requests (the next
// acquire's create, say) are ordered after it by the server. The registry
// looks at the reply; a lost one hands the delete to the background remover.
// (Only when no read proves the node ours, after a watch event or a failed
// read of it, does a read go first: then the next requests may overtake the
// delete, and an acquire of the same lock may find our old node still there
// and wait for it.)
void LockInternals::release(const std::shared_ptr<LeaseState>& lease) noexcept {
  release_node(client_, lease);
}

std::vector<std::string> LockInternals::participant_nodes() const {
  const auto names = client_.with_retry([&](Keeper& keeper) {
    auto listed = keeper.try_children(dir_);
    if (listed.error() == Errc::no_node) return std::vector<std::string>{};
    return std::move(listed).value().names;  // throws: retried if retryable
  });
  std::vector<std::string> paths;
  for (const auto& name :
       sorted_queue_nodes(names, family_of(kind_), QueuePeers{options_.share_with_kazoo}))
    paths.push_back(join_path(dir_, name));
  return paths;
}

std::string checked_holder_id(const std::string& holder_id) {
  if (holder_id.empty()) return default_holder_id();
  if (holder_id.size() > kMaxHolderIdLength)
    throw std::invalid_argument("LockOptions::holder_id is " + std::to_string(holder_id.size()) +
                                " bytes long; " + std::to_string(kMaxHolderIdLength) + " at most");
  for (std::size_t i = 0; i < holder_id.size(); ++i) {
    const auto c = static_cast<unsigned char>(holder_id[i]);
    if (c < 0x20 || c == 0x7f)
      throw std::invalid_argument("LockOptions::holder_id has a control character (byte " +
                                  std::to_string(c) + ") at offset " + std::to_string(i) +
                                  "; it is text for operators, one line of printable characters");
  }
  return holder_id;
}

std::string default_holder_id() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return "host=" + std::string(host) + ";pid=" + std::to_string(::getpid()) +
         ";thread=" + std::to_string(::gettid());
}

}  // namespace zkr::detail
