// See latch_participant.hpp.
#include "latch_participant.hpp"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <random>
#include <stop_token>
#include <thread>
#include <utility>
#include <vector>

#include "zkr/leader_latch.hpp"
#include "zkr/lock.hpp"

namespace zkr::chaos {
namespace {

using std::chrono::milliseconds;

// How long a term may take to say lost once its node is surely gone (the
// checker's kLostNoticeGrace, and a second more).
constexpr milliseconds kLostWait{4000};
// After an await that failed, before the next join.
constexpr milliseconds kErrorPause{200};

// Waits until the term says lost or `timeout` passes; true if it said lost.
bool wait_lost(const Grant& term, milliseconds timeout) {
  std::mutex mutex;
  std::condition_variable_any cv;
  std::unique_lock lock(mutex);
  (void)cv.wait_for(lock, term.lost_token(), timeout, [] { return false; });
  return term.lost();
}

// A guarded write's outcome as the checker reads it (as the lock workers
// record theirs): "rejected" only when the servers refused it because the
// latch node was gone; a session the server had ended leaves it "unknown".
std::string outcome_of(const GuardedWriteResult& result) {
  using Outcome = GuardedWriteResult::Outcome;
  switch (result.outcome) {
    case Outcome::applied: return "ok";
    case Outcome::lock_lost: return result.error == Errc::session_expired ? "unknown" : "rejected";
    case Outcome::conflict: return "conflict";
    case Outcome::unknown: return "unknown";
  }
  return "unknown";
}

class Participant {
 public:
  Participant(const LatchParticipantConfig& config, Client& client, EventLog& log)
      : config_(config), client_(client), log_(log) {}

  // One participant's life: join, await, lead for a while, close.
  void once(const std::string& id, std::mt19937_64& rng, const std::atomic<bool>& stop) {
    const auto pick = [&](std::uint64_t n) { return static_cast<std::int64_t>(rng() % n); };
    LeaderLatchOptions options;
    options.suspended_policy = SuspendedPolicy::lost;
    LeaderLatch latch(client_, config_.latch_path, id, options);
    bool led = false;
    try {
      led = latch.try_await_leadership_for(milliseconds(500 + pick(2500)));
    } catch (const std::exception& e) {
      log_.write("lawait",
                 {{"term", id}, {"led", "0"}, {"err", std::string(e.what()).substr(0, 200)}});
      std::this_thread::sleep_for(kErrorPause);  // a refusal may come back at once
      return;
    }
    log_.write("lawait", {{"term", id}, {"led", led ? "1" : "0"}});
    if (!led) return;
    const Grant term = latch.term();
    const auto epoch = term.fencing_token();
    term.on_lost([this, id](LostReason reason) {
      log_.write("llost", {{"term", id}, {"reason", std::string(to_string(reason))}});
    });
    log_.write("lterm",
               {{"term", id}, {"epoch", std::to_string(epoch)}, {"node", term.node_path()}});
    // Leads for one to eight writes, a little apart; a fault may end the term first.
    const int writes = 1 + static_cast<int>(pick(8));
    bool doubt = false;
    for (int n = 1; n <= writes && !stop && !term.lost(); ++n) {
      const auto outcome = write(id, term, n, false);
      if (outcome != "ok") {
        doubt = true;
        break;
      }
      if (wait_lost(term, milliseconds(pick(400)))) break;
    }
    // A refused or unknown write: the node may be gone, and the lost signal
    // must come (the checker judges a refusal with no signal by the reply).
    if (doubt) (void)wait_lost(term, kLostWait);
    // After a loss, once the term is surely void, one write anyway: fencing
    // must refuse it if the node is gone (one applied while the node still
    // lived is allowed: the record judges it).
    if (term.lost() && !stop && surely_void(term)) (void)write(id, term, writes + 1, true);
    const bool lost = term.lost();
    // From here the participant gives leadership up, whatever close() then
    // waits for: the checker's leader_lost_unnoticed stops counting.
    log_.write("lclose", {{"term", id}, {"lost", lost ? "1" : "0"}});
    latch.close();
    log_.write("lend", {{"term", id}, {"lost", lost ? "1" : "0"}});
  }

 private:
  // The term can never come back: its node was deleted or its session lost,
  // or the Client has moved on to a new session. A suspended link that comes
  // back in the term's session may leave the node (and so the leadership on
  // the servers) alive: then no late write is made, as it would prove nothing.
  bool surely_void(const Grant& term) const {
    const auto gone = [&] {
      return term.session_epoch() != client_.session_epoch() ||
             term.lost_reason() != LostReason::suspended;
    };
    if (gone()) return true;
    try {
      (void)client_.keeper_when_connected(std::chrono::steady_clock::now() +
                                          config_.session_timeout + milliseconds(2000));
    } catch (const std::exception&) {
    }
    return gone();
  }

  std::string write(const std::string& id, const Grant& term, int n, bool late) {
    const auto node = term.node_path();
    const std::string path = config_.write_dir + "/" + node.substr(node.rfind('/') + 1) + "-e" +
                             std::to_string(term.fencing_token()) + "-w";
    const auto sent = monotonic_ns();
    std::string outcome = "unknown";
    std::string err;
    try {
      auto keeper = late ? client_.keeper_when_connected(std::chrono::steady_clock::now() +
                                                         config_.session_timeout)
                         : client_.keeper();
      std::vector<Op> ops{op::Create{path, "", CreateMode::persistent_sequential}};
      if (config_.unguarded) {
        const auto result = keeper->try_multi(std::move(ops));
        outcome = result.ok() ? "ok" : "unknown";
        err = std::string(errc_name(result.error));
      } else {
        const auto result = guarded_write(*keeper, term, std::move(ops), config_.session_timeout);
        outcome = outcome_of(result);
        err = std::string(errc_name(result.error));
      }
    } catch (const std::exception& e) {
      err = std::string(e.what()).substr(0, 200);
    }
    log_.write("lwrite", {{"term", id},
                          {"n", std::to_string(n)},
                          {"sent", std::to_string(sent)},
                          {"result", outcome},
                          {"err", err},
                          {"lost", term.lost() ? "1" : "0"},
                          {"late", late ? "1" : "0"}});
    return outcome;
  }

  const LatchParticipantConfig& config_;
  Client& client_;
  EventLog& log_;
};

}  // namespace

void run_latch_participant(const LatchParticipantConfig& config, Client& client, EventLog& log,
                           const std::atomic<bool>& stop,
                           std::chrono::steady_clock::time_point end) {
  std::mt19937_64 rng(config.seed * 2'000'003 + std::hash<std::string>{}(config.id_prefix));
  Participant participant(config, client, log);
  for (std::int64_t n = 0; !stop && std::chrono::steady_clock::now() < end; ++n) {
    const auto id = config.id_prefix + ".L." + std::to_string(n);
    try {
      participant.once(id, rng, stop);
    } catch (const std::exception& e) {
      log.write("lawait",
                {{"term", id}, {"led", "0"}, {"err", std::string(e.what()).substr(0, 200)}});
      std::this_thread::sleep_for(kErrorPause);
    }
  }
}

}  // namespace zkr::chaos
