#include "grant_watch.hpp"

#include <signal.h>
#include <unistd.h>

#include <condition_variable>
#include <exception>
#include <mutex>

#include <spdlog/logger.h>

#include "pause_rule.hpp"
#include "zkr/keeper.hpp"
#include "zkr/lock.hpp"

namespace zkr::cli {
namespace {

std::int64_t to_ns(std::chrono::milliseconds d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

}  // namespace

GrantWatch::GrantWatch(std::shared_ptr<Keeper> keeper, const Grant& grant, spdlog::logger& log)
    : keeper_(std::move(keeper)),
      node_path_(grant.node_path()),
      log_(log),
      session_timeout_(keeper_->session_timeout()) {}

GrantWatch::~GrantWatch() { disarm(); }

std::optional<std::int64_t> GrantWatch::prove_once() noexcept {
  // Dated before the request is handed to the client: the server receives it
  // later still, so the session lives at least a session timeout past this.
  const auto sent = boottime_ns();
  try {
    // A reply later than half a session timeout proves nothing the guard can
    // use: the group is stopped by then.
    const auto stat = keeper_->exists(node_path_, {}, session_timeout_ / 2);
    if (stat && stat->ephemeral_owner == keeper_->session_id()) return sent;
    log_.debug("grant not proved: {}",
               stat ? "our node belongs to another session" : "our node is gone");
  } catch (const std::exception& e) {
    log_.debug("grant not proved: {}", e.what());
  }
  return std::nullopt;
}

bool GrantWatch::prove_first() {
  const auto sent = prove_once();
  if (sent) proven_ns_ = *sent;
  return sent.has_value();
}

void GrantWatch::arm(pid_t pgid) {
  guard_.emplace(pgid, session_timeout_, proven_ns_.load());
  prover_ = std::jthread([this](std::stop_token stop) { prove_every(stop); });
}

void GrantWatch::prove_every(std::stop_token stop) {
  const auto interval =
      std::chrono::nanoseconds(PauseRule::proof_interval(to_ns(session_timeout_)));
  std::mutex mutex;
  std::condition_variable_any never;
  auto next = std::chrono::steady_clock::now() + interval;
  for (;;) {
    {
      std::unique_lock lock(mutex);
      if (never.wait_until(lock, stop, next, [] { return false; }) || stop.stop_requested()) return;
    }
    // The next round counts from the send, not the reply: a slow reply must
    // not stretch the interval between proofs.
    next = std::chrono::steady_clock::now() + interval;
    const auto sent = prove_once();
    if (!sent) continue;
    // The guard first: may_run() must never say yes to what the guard has
    // not been told.
    guard_->proved(*sent);
    if (*sent > proven_ns_.load()) proven_ns_ = *sent;
  }
}

bool GrantWatch::may_run() const noexcept {
  if (ending_) return true;
  PauseRule rule(to_ns(session_timeout_), proven_ns_.load());
  if (holding_) rule.hold();
  return rule.may_run(boottime_ns());
}

bool GrantWatch::may_end_gently() noexcept {
  if (!PauseRule(to_ns(session_timeout_), proven_ns_.load()).unexpired(boottime_ns())) return false;
  ending_ = true;
  if (guard_) guard_->terminating();
  return true;
}

void GrantWatch::stop_with_command(pid_t pgid) {
  holding_ = true;
  if (guard_) guard_->hold();
  // SIGSTOP, not the SIGTSTP we got: a command may catch or ignore SIGTSTP,
  // and must not run on while zkr cannot watch its grant.
  ::kill(-pgid, SIGSTOP);
  log_.info("stopping, and the command's group ({}) with us", pgid);
  // The whole of zkr stops here, every thread; kill() returns once a SIGCONT
  // (the shell's fg or bg) has continued it.
  ::kill(::getpid(), SIGSTOP);
  log_.info("continued: the command's group goes on once our grant is proved");
  holding_ = false;
  if (guard_) guard_->release();
}

void GrantWatch::disarm() noexcept {
  if (prover_.joinable()) {
    prover_.request_stop();
    prover_.join();
  }
  if (guard_) guard_->disarm();
}

}  // namespace zkr::cli
