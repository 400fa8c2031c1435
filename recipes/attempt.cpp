// The lock attempt's driver (attempt.hpp): acquire() takes it through its stages
// and decides what a failure means (retry, give back, fail, or start again in
// a new session), and the attempt binds itself to a session here. Apart from
// the stages themselves (attempt_queue.cpp, attempt_wait.cpp) because this is
// the one place that knows the order of stages and the retry rules.
#include <algorithm>
#include <exception>

#include <spdlog/spdlog.h>

#include "attempt.hpp"
#include "client_internals.hpp"
#include "layout_gate.hpp"

namespace zkr::detail {

// One coroutine runs the whole acquire: the sessions one after another
// (a new attempt in each, after a session lost while we queued), and in
// each the stages, with the retry rules. One, not a coroutine per level:
// its frame stays allocated while the attempt waits, for every waiter, and
// each frame costs its header, its promise and the awaiting slot. For the
// same reason each co_await is a slot of its own here, so the ways out
// share one abandon(): an UnderGrantLost thrown in the stages is abandoned
// as a failure below.
Task<std::shared_ptr<GrantState>> Attempt::acquire(LockInternals& lock, Deadline deadline,
                                                   const HeldWriteNode* held_write,
                                                   std::stop_token stop,
                                                   std::shared_ptr<GrantState> under) {
  Client& client = lock.client_;
  RetryBudget sessions(client.retry_policy(), client.sleeper(), deadline);
  // Held only while we acquire: a lock object that outlives its Client must
  // not keep the thread alive.
  const auto timers = ClientInternals::timers(client);
  std::uint64_t ended_epoch = 0;
  for (;;) {
    if (stop.stop_requested()) co_return nullptr;
    const auto inbox = std::make_shared<AttemptInbox>(timers);
    const std::stop_callback on_stop(stop, [inbox] { inbox->on_stop(); });
    const auto listener =
        client.add_listener([weak = std::weak_ptr<AttemptInbox>(inbox)](ConnectionState state) {
          if (const auto i = weak.lock()) i->on_state(state);
        });
    std::exception_ptr session_failure;
    try {
      Attempt a(lock, inbox, deadline, ended_epoch, held_write, under);
      RetryBudget budget(client.retry_policy(), client.sleeper(), deadline);
      std::shared_ptr<GrantState> grant;
      for (;;) {
        std::exception_ptr failure;
        bool given_up = false;  // the deadline, or a stop
        try {
          co_await a.bind_session();
          co_await a.check_layout();  // before our create: nothing queued on a wrong layout
          while (!given_up) {
            // Checked between stages, the grant's included: a stop that comes
            // as our turn does gives the lock on rather than take it.
            if (inbox->stopped()) break;
            if (a.stage_ == Stage::queue) {
              co_await a.enqueue();  // ends in Stage::wait: a listing showed our node
            } else if (a.stage_ == Stage::wait) {
              switch (co_await a.wait_turn()) {
                case Turn::ours: a.stage_ = Stage::grant; break;
                case Turn::deadline:
                case Turn::stopped: given_up = true; break;
                case Turn::vanished: a.start_over(); break;  // back to Stage::queue
                case Turn::under_lost: throw UnderGrantLost{};
              }
            } else {
              co_await a.check_layout();  // a flag, unless the record's watch fired meanwhile
              if (a.under_lost()) throw UnderGrantLost{};
              grant = a.grant();
              break;
            }
          }
          if (grant) break;
          given_up = true;
        } catch (...) {
          failure = std::current_exception();
        }
        // What to do about it is decided here, and done below: a coroutine
        // cannot wait inside a handler.
        Next next{.action = Action::give_back, .step = {}};
        if (!given_up) next = a.after_failure(failure, budget);
        if (next.action == Action::retry) {
          a.leases_watched_ = false;
          co_await a.pause(budget.timer_delay(next.step));
          continue;
        }
        if (next.action == Action::session_gone) co_await a.abandon_if_session_lives();
        else co_await a.abandon();
        if (next.action == Action::session_gone) throw SessionGone{a.epoch_};
        if (next.action == Action::fail) std::rethrow_exception(failure);
        break;  // given back: grant is null
      }
      client.remove_listener(listener);
      co_return grant;
    } catch (const SessionGone& gone) {
      ended_epoch = std::max(ended_epoch, gone.epoch);
    } catch (...) {
      session_failure = std::current_exception();
    }
    client.remove_listener(listener);
    if (session_failure) std::rethrow_exception(session_failure);
    // Our session ended while we queued: never trust that view; queue again.
    if (!lock.options_.requeue_after_session_loss)
      throw KeeperError(Errc::session_expired, lock.dir_,
                        "the session ended while acquiring the lock");
    if (!co_await lock.pause_after_session_loss(sessions, *inbox)) co_return nullptr;
  }
}

Attempt::Next Attempt::after_failure(const std::exception_ptr& failure, RetryBudget& budget) {
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
    detail::ClientInternals::log(client_)->debug("lock {}: {}; retrying in {} ms", lock_.dir_,
                                                 e.what(), step.delay.count());
    tell_retry(lock_.observed_, budget.retries(), step.delay);
    return {Action::retry, step};
  } catch (...) {
    return {Action::fail, {}};
  }
}

// A retry's delay, on the timer; a stop ends it early.
Task<void> Attempt::pause(milliseconds delay) {
  if (delay <= milliseconds::zero()) co_return;
  const auto until = Clock::now() + delay;
  while (co_await inbox_->until(until))
    if (inbox_->stopped()) co_return;
}

Task<void> Attempt::bind_session() {
  co_await await_session_after(after_epoch_);
  if (inbox_->stopped()) co_return;
  auto [keeper, epoch] = co_await connected_session();
  detail::ClientInternals::log(client_)->debug("lock {}: attempt on session epoch {} (0x{:x})",
                                               lock_.dir_, epoch, keeper->session_id());
  if (epoch_ == 0) {
    epoch_ = epoch;
    session_id_ = keeper->session_id();
  } else if (epoch != epoch_) {
    throw SessionGone{epoch_};
  }
  keeper_ = std::move(keeper);
  if (under_lost()) throw UnderGrantLost{};  // before our create: nothing to undo
}

// The grant we acquire under is lost, or of another session than ours.
bool Attempt::under_lost() const {
  return under_ && (under_->reason() != LostReason::none || under_->epoch != epoch_);
}

// A LockFactory's lock: the root's layout record proven ours in this
// session (layout_gate.hpp). Sends nothing while its watch stands.
Task<void> Attempt::check_layout() {
  const auto& gate = lock_.options_.layout_gate;
  if (!gate || gate->proven(epoch_)) co_return;
  auto until = Clock::now() + keeper_->default_timeout();
  if (deadline_) until = std::min(until, *deadline_ + keeper_->default_timeout());
  co_await gate->verify(keeper_, epoch_, inbox_->timers(), until);
}

// Client::session_when_connected() without a blocked thread: the Client
// calls us back at its next change while none serves.
Task<Client::Session> Attempt::connected_session() {
  const auto until = bounded(zkr::deadline_after(client_.options().connection_timeout));
  for (;;) {
    if (inbox_->stopped())
      throw KeeperError(Errc::connection_loss, "", "stopped while waiting for a connection");
    if (auto session = session_now()) co_return std::move(*session);
    if (!co_await inbox_->until(until)) break;
  }
  if (auto session = ClientInternals::session_now(client_, nullptr)) co_return std::move(*session);
  throw KeeperError(Errc::connection_loss, "",
                    "not connected to " + client_.options().connect_string +
                        " within the connection timeout" + (deadline_ ? " or the deadline" : ""));
}

// After our session ended, the Client may not have heard of it yet: its
// keeper is still the dead one. Binding to it would only fail again.
Task<void> Attempt::await_session_after(std::uint64_t epoch) {
  if (epoch == 0) co_return;
  const auto until = bounded(zkr::deadline_after(client_.options().connection_timeout));
  while (client_.session_epoch() <= epoch) {
    // The Client announces lost after moving to the next epoch: a state wakes us.
    if (!co_await inbox_->until(until))
      throw KeeperError(Errc::connection_loss, lock_.dir_, "no new session after ours ended");
    if (inbox_->stopped()) co_return;  // acquire() sees it next
    (void)inbox_->take_states();
    (void)inbox_->take_events();
  }
}

// The Client's session, if one serves; else none, and the Client calls us
// back at its next change.
std::optional<Client::Session> Attempt::session_now() {
  if (!on_session_change_) {
    if (auto session = ClientInternals::session_now(client_, nullptr)) return session;
    on_session_change_ =
        std::make_shared<std::function<void()>>([weak = std::weak_ptr<AttemptInbox>(inbox_)] {
          if (const auto alive = weak.lock()) alive->wake_on_timer_thread();
        });
  }
  return ClientInternals::session_now(client_, on_session_change_);
}

Clock::time_point Attempt::bounded(Clock::time_point t) const {
  return deadline_ ? std::min(t, *deadline_) : t;
}

}  // namespace zkr::detail
