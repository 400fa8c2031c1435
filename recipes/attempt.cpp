// The lock attempt's driver (attempt.hpp): run() takes it through its stages
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

// Each co_await is a slot in the frame that stays allocated while the
// attempt waits, so the ways out share one abandon(): an UnderLeaseLost
// thrown in the stages is abandoned as a failure below.
Task<std::shared_ptr<LeaseState>> Attempt::run() {
  RetryBudget budget(client_.retry_policy(), client_.sleeper(), deadline_);
  for (;;) {
    std::exception_ptr failure;
    bool given_up = false;  // the deadline, or a stop
    try {
      co_await bind_session();
      co_await check_layout();  // before our create: nothing queued on a wrong layout
      while (!given_up) {
        // Checked between stages, the grant's included: a stop that comes
        // as our turn does gives the lock on rather than take it.
        if (inbox_->stopped()) break;
        switch (stage_) {
          case Stage::queue:
            co_await enqueue();  // ends in Stage::wait: a listing showed our node
            break;
          case Stage::wait:
            switch (co_await wait_turn()) {
              case Turn::ours: stage_ = Stage::grant; break;
              case Turn::deadline:
              case Turn::stopped: given_up = true; break;
              case Turn::vanished: start_over(); break;  // back to Stage::queue
              case Turn::under_lost: throw UnderLeaseLost{};
            }
            break;
          case Stage::grant:
            co_await check_layout();  // a flag, unless the record's watch fired meanwhile
            if (under_lost()) throw UnderLeaseLost{};
            co_return grant();
        }
      }
      given_up = true;
    } catch (...) {
      failure = std::current_exception();
    }
    // What to do about it is decided here, and done below: a coroutine
    // cannot wait inside a handler.
    Next next{.action = Action::give_back, .step = {}};
    if (!given_up) next = after_failure(failure, budget);
    if (next.action == Action::retry) {
      leases_watched_ = false;
      co_await pause(budget.timer_delay(next.step));
      continue;
    }
    if (next.action == Action::session_gone) co_await abandon_if_session_lives();
    else co_await abandon();
    if (next.action == Action::session_gone) throw SessionGone{epoch_};
    if (next.action == Action::fail) std::rethrow_exception(failure);
    co_return nullptr;  // given back
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
  if (under_lost()) throw UnderLeaseLost{};  // before our create: nothing to undo
}

// The lease we acquire under is lost, or of another session than ours.
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
    if (inbox_->stopped()) co_return;  // run() sees it next
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
