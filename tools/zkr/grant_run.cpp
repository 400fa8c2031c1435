#include "grant_run.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

#include <spdlog/logger.h>

#include "args.hpp"
#include "command.hpp"
#include "errors.hpp"
#include "exit_codes.hpp"
#include "grant_watch.hpp"
#include "supervisor.hpp"

namespace zkr::cli {
namespace {

// Set by the grant's lost callback, on a library thread; shared with it, so
// that a loss reported after the run is over (before the verb releases)
// touches nothing gone.
struct LossFlag {
  std::atomic<bool> lost{false};
  std::atomic<LostReason> reason{LostReason::none};
};

// Whether the grant is still ours, asked of the server after the command's
// group is gone: a loss the library has not heard of yet (a deletion on its
// way, a race with the command's exit) must not pass for "held throughout".
// The sync makes our server catch up with the leader first; a queue node
// cannot come back once deleted (its name is unique), so if it exists now,
// owned by our session, it existed all along.
bool still_held(Client& client, const Grant& grant, const LossFlag& loss,
                std::chrono::milliseconds timeout, std::string& why) {
  if (loss.lost) return false;
  try {
    const auto keeper = client.keeper();
    keeper->sync(grant.node_path(), timeout);
    const auto stat = keeper->exists(grant.node_path(), {}, timeout);
    if (!stat) {
      why = "our node " + grant.node_path() + " is gone";
      return false;
    }
    if (stat->ephemeral_owner != keeper->session_id()) {
      why = "our node belongs to another session";
      return false;
    }
  } catch (const KeeperError& e) {
    why = e.what();
    return false;
  }
  return !loss.lost;
}

}  // namespace

std::unique_ptr<SignalInbox> supervision_inbox(spdlog::logger& log) {
  auto inbox = std::make_unique<SignalInbox>(std::initializer_list<int>{
      SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD, SIGTSTP});
  // Processes of the command's group whose parent exits are handed to zkr
  // rather than to init: zkr sees them exit, and reaps them, so it can tell
  // when the group is empty. Without it (it cannot fail on Linux 3.4 and
  // later) the supervisor's once-a-second look still notices.
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
    log.warn("cannot become the subreaper of the command: {}", std::strerror(errno));
  return inbox;
}

Waited wait_for_grant(Client& client, const ConnectionSettings& connection, const std::string& path,
                      SignalInbox& inbox, StatusFile* status, spdlog::logger& log,
                      const std::function<bool(std::stop_token)>& acquire) {
  // The acquire runs on this thread, the one that releases; signals while
  // queued are watched on another. The first stops the acquire, which takes
  // our node out of the queue (or leaves it to the background remover if the
  // link is down) and returns. A second one while that is under way ends zkr
  // at once: closing the session deletes our node, and so does the server
  // when the session expires if even the close cannot be sent.
  std::stop_source stop;
  std::atomic<int> stopped_by{0};
  std::atomic<bool> done{false};
  std::thread watcher([&] {
    while (!done) {
      const auto event = inbox.wait(std::nullopt);
      if (event.kind != SignalInbox::Event::Kind::signal || event.signo == SIGCHLD) continue;
      if (event.signo == SIGTSTP) {
        // ^Z while queued: nothing of ours runs yet; stop as any program does.
        ::kill(::getpid(), SIGSTOP);
        continue;
      }
      if (stopped_by.exchange(event.signo) == 0) {
        log.info("signal {} while queued: leaving the queue", event.signo);
        stop.request_stop();
        continue;
      }
      log.info("signal {} while leaving the queue: closing the session", event.signo);
      client.keeper()->close();
      print_error("interrupted by signal " + std::to_string(event.signo) + " while waiting for " +
                  path);
      if (status) status->write("interrupted", exit_code::signal_base + event.signo, std::nullopt);
      std::fflush(nullptr);
      std::_Exit(exit_code::signal_base + event.signo);
    }
  });
  Waited out;
  try {
    wait_connected(client, connection);
    log.info("connected; queueing for {}", path);
    out.acquired = acquire(stop.get_token());
  } catch (...) {
    out.error = std::current_exception();
  }
  done = true;
  inbox.wake();
  watcher.join();
  if (const int signo = stopped_by.load(); signo != 0) out.signal = signo;
  return out;
}

std::optional<int> end_of_wait(const Waited& waited, const std::string& path,
                               std::optional<std::chrono::milliseconds> timeout, StatusFile* status,
                               const std::function<void()>& give_back) {
  if (waited.signal) {
    // A signal that came as the grant was granted is honoured too.
    if (waited.acquired) give_back();
    print_error("interrupted by signal " + std::to_string(*waited.signal) + " while waiting for " +
                path);
    const int code = exit_code::signal_base + *waited.signal;
    if (status) status->write("interrupted", code, std::nullopt);
    return code;
  }
  if (waited.error) std::rethrow_exception(waited.error);
  if (!waited.acquired) {
    print_error("timed out after " +
                format_duration(timeout.value_or(std::chrono::milliseconds(0))) + " waiting for " +
                path);
    if (status) status->write("timeout", exit_code::timeout, std::nullopt);
    return exit_code::timeout;
  }
  return std::nullopt;
}

int run_under_grant(Client& client, const Grant& grant, const GrantRun& run, SignalInbox& inbox,
                    StatusFile* status, spdlog::logger& log) {
  const auto loss = std::make_shared<LossFlag>();
  grant.on_lost([loss, &inbox](LostReason why) {
    // On a library thread: record and wake the supervisor, nothing more.
    // The inbox outlives the grant: the verb makes it before any grant.
    loss->reason = why;
    loss->lost = true;
    inbox.wake();
  });
  const auto lost_reason = [&] { return std::string(to_string(loss->reason.load())); };

  // Proves the grant while the command runs, and stops the command when
  // zkr cannot (grant_watch.hpp).
  GrantWatch watch(client.keeper(), grant, log);
  if (loss->lost || !watch.prove_first()) {
    print_error(run.held + " was lost (" +
                (loss->lost ? lost_reason() : std::string("the server did not confirm it")) +
                ") before the command started");
    if (status) status->write("lock_lost", exit_code::lock_lost, std::nullopt);
    return exit_code::lock_lost;
  }
  const auto spawned = spawn_command(run.command, run.env, inbox.original_mask(),
                                     [&](pid_t pgid) { watch.arm(pgid); });
  if (!spawned.pid) {
    print_error(run.command[0] + ": " +
                (spawned.error == ENOENT ? std::string("command not found")
                                         : std::string(std::strerror(spawned.error))));
    watch.disarm();  // nothing of the command runs
    const int code = exit_code_for_spawn_error(spawned.error);
    if (status) status->write("command_not_run", code, std::nullopt);
    return code;
  }
  const pid_t pgid = *spawned.pid;
  log.info("running {} as pid {}, in a process group of its own", run.command[0], pgid);
  const GrantHooks hooks{[&] { return watch.may_run(); }, [&] { return watch.may_end_gently(); },
                         [&] { watch.stop_with_command(pgid); }};
  SupervisionResult result;
  try {
    result = supervise(
        pgid, inbox, [&] { return loss->lost.load(); },
        [&] {
          print_error(run.held + " lost (" + lost_reason() +
                      "): terminating the command's group (" + std::to_string(pgid) + ")");
        },
        hooks, run.kill_after, log);
  } catch (...) {
    // We can no longer tell when the group ends: end it before the grant is
    // released.
    ::kill(-pgid, SIGKILL);
    throw;
  }
  watch.disarm();  // the group is empty
  bool held = false;
  std::string why;
  if (result.terminated_for_loss) {
    // said so when it happened
  } else if (!still_held(client, grant, *loss, run.session_timeout, why)) {
    print_error("the command ended (" + std::to_string(result.exit_code) + "), but " + run.held +
                " was lost meanwhile (" + (why.empty() ? lost_reason() : why) + ")");
  } else {
    held = true;
  }
  const int code = held ? result.exit_code : exit_code::lock_lost;
  if (status) status->write(held ? "held_throughout" : "lock_lost", code, result.exit_code);
  log.info("command's group gone (the command exited {}); giving {} up", result.exit_code,
           run.held);
  return code;
}

}  // namespace zkr::cli
