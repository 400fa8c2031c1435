// LeaderLatch: a term is a grant of the latch queue (QueueKind::latch) of the
// one queue engine; what is here is only who may join when, and reading the
// participants' ids. Safety (the grant rule, own-node checks, lost signals,
// leaving no node) is the engine's.
#include "zkr/leader_latch.hpp"

#include <cstdint>
#include <future>
#include <mutex>
#include <stdexcept>

#include "acquire_calls.hpp"
#include "callback_thread.hpp"
#include "client_internals.hpp"
#include "leadership.hpp"
#include "lock_driver.hpp"
#include "queue_lock.hpp"
#include "task.hpp"
#include "zkr/deadline.hpp"
#include "zkr/path.hpp"

namespace zkr {

using detail::Deadline;
using detail::GrantState;

namespace {

LockOptions latch_lock_options(std::string id, const LeaderLatchOptions& options) {
  LockOptions lock;
  try {
    lock.holder_id = detail::checked_holder_id(id);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("LeaderLatch id: ") + e.what());
  }
  lock.acl = options.acl;
  lock.suspended_policy = options.suspended_policy;
  return lock;
}

// A stop of the caller's token or of the latch's close, as one token.
struct JoinStop {
  JoinStop(const std::stop_token& caller, const std::stop_token& closing)
      : on_caller(caller, Stopper{&source}), on_close(closing, Stopper{&source}) {}
  struct Stopper {
    std::stop_source* source;
    void operator()() const noexcept { source->request_stop(); }
  };
  std::stop_source source;
  std::stop_callback<Stopper> on_caller;
  std::stop_callback<Stopper> on_close;
};

}  // namespace

struct LeaderLatch::Impl {
  Impl(Client& client, std::string path, LockOptions options)
      : id(options.holder_id),
        queue(client, std::move(path), std::move(options), detail::QueueKind::latch) {}

  // Starts a join, or says there is no need: true while a term is held. The
  // last term, if lost, is handed back in `lost_term`.
  bool begin_join(std::optional<Grant>& lost_term) {
    std::lock_guard lock(queue.mutex);
    if (closed) throw std::logic_error("LeaderLatch " + path() + ": closed");
    if (joining)
      throw std::logic_error("LeaderLatch " + path() +
                             ": an await of this latch is already under way (one participant, "
                             "one await at a time)");
    if (term) {
      if (Grant(term).held()) return true;
      lost_term = Grant(term);
    }
    joining = true;
    return false;
  }

  // Ends a join with what it got: true if it is now our term.
  bool end_join(std::shared_ptr<GrantState> granted) {
    settle_adoption(granted);
    {
      std::lock_guard lock(queue.mutex);
      joining = false;
      if (!granted) return false;
      if (!closed) {
        last_term = Grant(granted);
        term = std::move(granted);
        return true;
      }
    }
    give_back(granted);  // closed meanwhile
    return false;
  }

  void end_join_failed() noexcept {
    settle_adoption(nullptr);
    std::lock_guard lock(queue.mutex);
    joining = false;
  }

  // The lost term is given up before we queue again, so that one latch never
  // has two nodes. Lost to a suspension, its node may live on, ours: the
  // attempt takes it up again rather than queue a new one behind everybody
  // (the engine checks that it still exists and is of our session), and
  // settle_adoption() gives it back unless it became the new term's.
  void set_aside_lost_term() {
    std::shared_ptr<GrantState> old;
    {
      std::lock_guard lock(queue.mutex);
      old = std::move(term);
      if (old && old->reason() == LostReason::suspended) {
        queue.internals.adopt_next(std::string(node_name(old->node_path)));
        adopting = std::move(old);
        return;
      }
    }
    if (old) give_back(old);
  }

  // After a join: the node set aside for adoption is either the new term's
  // (its old grant goes, the node stays) or given back (deleted if it is
  // still ours: the join ended before its attempt took it up, or queued
  // another node).
  void settle_adoption(const std::shared_ptr<GrantState>& granted) noexcept {
    std::shared_ptr<GrantState> old;
    {
      std::lock_guard lock(queue.mutex);
      old = std::move(adopting);
    }
    if (!old) return;
    (void)queue.internals.take_adoption();
    if (granted && granted->node_path == old->node_path && granted->czxid == old->czxid) {
      detail::ClientLifeline::Visit visit(*queue.lifeline);
      if (visit) detail::let_go_keeping_node(queue.internals.client(), old);
      else old->mark_released();
      return;
    }
    give_back(old);
  }

  void give_back(const std::shared_ptr<GrantState>& state) noexcept {
    detail::give_back(*queue.lifeline, queue.internals, state);
  }

  const std::string& path() const noexcept { return queue.internals.dir(); }

  // Reads ids, in queue order, until `limit` are found.
  std::vector<LatchParticipant> read_participants(std::size_t limit) const;

  const std::string id;  // as written into our node
  detail::QueueLock queue;
  std::shared_ptr<GrantState> term;      // guarded by queue.mutex: the current term, if any
  std::optional<Grant> last_term;        // guarded by queue.mutex: the current or last one
  std::shared_ptr<GrantState> adopting;  // guarded by queue.mutex: see set_aside_lost_term()
  bool joining = false;                  // guarded by queue.mutex: an await is under way
  bool closed = false;                   // guarded by queue.mutex
  std::stop_source closing;              // stopped by close(): ends a join under way
};

LeaderLatch::LeaderLatch(Client& client, std::string path, std::string id,
                         LeaderLatchOptions options)
    : impl_(std::make_shared<Impl>(client,
                                   detail::checked_lock_path(std::move(path), kMaxLatchPathLength),
                                   latch_lock_options(std::move(id), options))) {}

LeaderLatch::~LeaderLatch() { close(); }

bool LeaderLatch::take(Deadline deadline, std::stop_token stop) {
  auto& impl = *impl_;
  detail::ClientLifeline::Visit visit(*impl.queue.lifeline);
  auto& internals = impl.queue.internals;
  detail::check_may_acquire(visit, internals.client(), "LeaderLatch", internals.dir());
  std::optional<Grant> lost_term;
  if (impl.begin_join(lost_term)) return true;
  try {
    if (lost_term) {
      detail::await_lost_signal(internals.client(), *lost_term);
      impl.set_aside_lost_term();
    }
    JoinStop joined(stop, impl.closing.get_token());
    auto granted =
        detail::acquire_when_connected(internals, deadline, {}, joined.source.get_token());
    return impl.end_join(std::move(granted));
  } catch (...) {
    impl.end_join_failed();
    throw;
  }
}

bool LeaderLatch::await_leadership(std::stop_token stop) {
  if (take(std::nullopt, stop)) return true;
  if (stop.stop_requested() || impl_->closing.stop_requested()) return false;
  throw KeeperError(Errc::operation_timeout, path(), "await_leadership gave up");
}

bool LeaderLatch::try_await_leadership_for(std::chrono::milliseconds timeout,
                                           std::stop_token stop) {
  return take(deadline_after(timeout), std::move(stop));
}

bool LeaderLatch::try_await_leadership_until(std::chrono::steady_clock::time_point deadline,
                                             std::stop_token stop) {
  return take(deadline, std::move(stop));
}

bool LeaderLatch::try_await_leadership() { return take(std::chrono::steady_clock::now(), {}); }

void LeaderLatch::start_await(Deadline deadline, std::stop_token stop,
                              std::function<void(std::exception_ptr, bool)> on_done) {
  auto impl = impl_;
  std::optional<Grant> lost_term;
  if (impl->begin_join(lost_term)) return on_done(nullptr, true);
  auto joined = std::make_shared<JoinStop>(stop, impl->closing.get_token());
  auto start = [impl, joined, deadline, on_done = std::move(on_done)]() mutable {
    auto& internals = impl->queue.internals;
    // ~Client waits for a visit: held until the join ends.
    auto visit = std::make_shared<detail::ClientLifeline::Visit>(*impl->queue.lifeline);
    try {
      if (!*visit) throw detail::client_gone(internals.dir());
      impl->set_aside_lost_term();
      detail::spawn(internals.acquisition(deadline, nullptr, joined->source.get_token()),
                    [impl, joined, visit, on_done](
                        std::exception_ptr error,
                        std::optional<std::shared_ptr<GrantState>> granted) mutable {
                      error = detail::naming(error, impl->path());
                      const bool leader =
                          impl->end_join(error ? nullptr : std::move(granted).value_or(nullptr));
                      visit.reset();
                      on_done(error, leader);
                    });
    } catch (...) {
      impl->end_join_failed();
      on_done(std::current_exception(), false);
    }
  };
  // After the lost term's signal: the callback runs on the callback thread
  // behind the term's own lost callbacks.
  if (lost_term) lost_term->on_lost([start](LostReason) mutable { start(); });
  else start();
}

bool LeaderLatch::has_leadership() const {
  std::lock_guard lock(impl_->queue.mutex);
  return impl_->term && Grant(impl_->term).held();
}

std::optional<std::int64_t> LeaderLatch::epoch() const {
  std::lock_guard lock(impl_->queue.mutex);
  if (!impl_->term || !Grant(impl_->term).held()) return std::nullopt;
  return impl_->term->fencing_token;
}

Grant LeaderLatch::term() const {
  std::lock_guard lock(impl_->queue.mutex);
  if (!impl_->last_term)
    throw std::logic_error("LeaderLatch " + path() + ": this participant never led");
  return *impl_->last_term;
}

void LeaderLatch::close() noexcept {
  auto& impl = *impl_;
  std::shared_ptr<GrantState> ending;
  {
    std::lock_guard lock(impl.queue.mutex);
    if (impl.closed) return;
    impl.closed = true;
    ending = std::move(impl.term);
  }
  impl.closing.request_stop();
  if (ending) impl.give_back(ending);
}

std::vector<LatchParticipant> LeaderLatch::Impl::read_participants(std::size_t limit) const {
  detail::ClientLifeline::Visit visit(*queue.lifeline);
  if (!visit) throw detail::client_gone(path());
  return detail::read_participants(
      queue.internals.client(), detail::participant_nodes_naming(*queue.lifeline, queue.internals),
      limit);
}

std::vector<LatchParticipant> LeaderLatch::participants() const {
  return impl_->read_participants(SIZE_MAX);
}

std::optional<LatchParticipant> LeaderLatch::leader() const {
  auto first = impl_->read_participants(1);
  if (first.empty()) return std::nullopt;
  return std::move(first.front());
}

const std::string& LeaderLatch::path() const noexcept { return impl_->path(); }
const std::string& LeaderLatch::id() const noexcept { return impl_->id; }

}  // namespace zkr
