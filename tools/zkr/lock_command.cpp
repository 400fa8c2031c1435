// `zkr lock PATH [options] [--] CMD ARGS...`: flock(1) across machines.
//
// Three steps, each with its own way out:
//   1. queue for the lock (on a thread of its own, so that this thread can
//      watch for signals meanwhile): a signal closes the session, which
//      deletes our queue node, and zkr exits 128+S; a timeout exits 75;
//   2. run the command (supervisor.hpp): signals passed on, and if the lease
//      says lost, the command is terminated and zkr exits 79;
//   3. release the lock (delete our node) whatever happened, including when
//      the command could not be started (127, 126).
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include <spdlog/logger.h>

#include "args.hpp"
#include "command.hpp"
#include "connection.hpp"
#include "errors.hpp"
#include "exit_codes.hpp"
#include "signal_inbox.hpp"
#include "supervisor.hpp"
#include "verbs.hpp"
#include "zkr/lock.hpp"
#include "zkr/path.hpp"

namespace zkr::cli {
namespace {

using namespace std::chrono_literals;

std::vector<OptionSpec> lock_specs() {
  auto specs = connection_option_specs();
  const std::vector<OptionSpec> own{
      {"timeout", 't', true, "D", "give up if the lock is not ours within D of connecting (0: one try)"},
      {"kill-after", 'k', true, "D", "if the lock is lost: SIGKILL the command D after SIGTERM (default 10s)"},
      {"holder", 0, true, "TEXT", "who holds the lock, for `zkr ls` (default host=..;pid=..;thread=..)"},
      {"ignore-suspended", 0, false, "", "count the lock lost only when the session is, not when the link drops"},
  };
  specs.insert(specs.begin(), own.begin(), own.end());
  return specs;
}

struct LockSettings {
  std::string path;
  std::vector<std::string> command;
  std::optional<std::chrono::milliseconds> timeout;
  std::chrono::milliseconds kill_after = 10s;
  LockOptions lock_options;
};

LockSettings lock_settings(const ParsedArgs& parsed) {
  LockSettings s;
  const auto& operands = parsed.operands();
  if (operands.empty()) throw UsageError("missing lock PATH and command");
  if (operands.size() < 2) throw UsageError("missing the command to run under the lock");
  s.path = operands[0];
  s.command.assign(operands.begin() + 1, operands.end());
  // The library checks the path too, but only once connected: a typo should
  // fail at once, even with no ensemble around.
  validate_path(s.path);
  if (s.path == "/") throw UsageError("a lock path cannot be the root \"/\"");
  if (auto v = parsed.value("timeout")) s.timeout = parse_duration(*v, "--timeout");
  if (auto v = parsed.value("kill-after")) s.kill_after = parse_duration(*v, "--kill-after");
  if (auto v = parsed.value("holder")) {
    if (v->empty()) throw UsageError("--holder needs a non-empty TEXT");
    s.lock_options.holder_id = *v;
  }
  if (parsed.has("ignore-suspended")) s.lock_options.suspended_policy = SuspendedPolicy::ignore;
  return s;
}

// The outcome of step 1 (a signal meanwhile ends zkr at once).
struct Queued {
  bool acquired = false;
  std::exception_ptr error;
};

Queued queue_for_lock(Client& client, InterProcessSemaphoreMutex& mutex,
                      const ConnectionSettings& connection, const LockSettings& settings,
                      SignalInbox& inbox, spdlog::logger& log) {
  Queued out;
  std::atomic<bool> done{false};
  bool acquired = false;
  std::exception_ptr error;
  std::thread waiter([&] {
    try {
      wait_connected(client, connection);
      log.info("connected; queueing for {}", settings.path);
      if (!settings.timeout) {
        mutex.acquire();
        acquired = true;
      } else if (*settings.timeout == 0ms) {
        acquired = mutex.try_acquire();
      } else {
        acquired = mutex.try_acquire_for(*settings.timeout);
      }
    } catch (...) {
      error = std::current_exception();
    }
    done = true;
    inbox.wake();
  });

  while (!done) {
    const auto event = inbox.wait(std::nullopt);
    if (event.kind != SignalInbox::Event::Kind::signal || event.signo == SIGCHLD) continue;
    // The library's acquire cannot be cancelled. Closing the session is what
    // removes our queue node (the server drops a closed session's ephemeral
    // nodes, and zookeeper_close has sent the close when it returns), so
    // do that, and leave: the waiter thread would only notice after the
    // connection timeout (it takes the ended session for an expiry and waits
    // for a new one to queue again), and it still uses the objects that
    // orderly unwinding would destroy. Nothing else of ours needs cleaning up.
    log.info("signal {} while queued: closing the session, which deletes our node", event.signo);
    client.keeper()->close();
    print_error("interrupted by signal " + std::to_string(event.signo) + " while waiting for " +
                settings.path);
    std::fflush(nullptr);
    std::_Exit(exit_code::signal_base + event.signo);
  }
  waiter.join();
  out.acquired = acquired;
  out.error = error;
  return out;
}

}  // namespace

std::string lock_help() {
  return "Usage: zkr lock PATH [options] [--] CMD [ARGS...]\n"
         "\n"
         "Runs CMD while holding the ZooKeeper lock PATH, like flock(1) across machines.\n"
         "Waiters queue first come, first served, in one queue with every zkrecipes\n"
         "lock and Apache Curator InterProcessMutex on the same PATH. The lock is\n"
         "released (its node deleted) when CMD ends, however it ends. Options after\n"
         "CMD belong to CMD. CMD gets ZKR_LOCK_PATH, ZKR_LOCK_NODE and\n"
         "ZKR_FENCING_TOKEN (the lock node's czxid: larger for every later holder) in\n"
         "its environment.\n"
         "\n"
         "If the lock is lost while CMD runs (the session expired, the node was\n"
         "deleted, or the link to ZooKeeper dropped, unless --ignore-suspended), CMD\n"
         "gets SIGTERM, then SIGKILL after --kill-after. SIGINT, SIGTERM, SIGHUP,\n"
         "SIGQUIT, SIGUSR1 and SIGUSR2 sent to zkr are passed on to CMD.\n"
         "\n"
         "Options:\n" +
         format_options(lock_specs()) + "\n" + connection_help_footer() +
         "\n"
         "Exit status:\n"
         "  CMD's own      CMD ran with the lock held throughout (128+S: CMD killed by signal S)\n"
         "  64             bad usage: options, PATH, durations\n"
         "  69             ZooKeeper unreachable within --connect-timeout, or the link failed\n"
         "  75             the lock was not acquired within --timeout\n"
         "  76             ZooKeeper refused an operation (e.g. no permission on PATH)\n"
         "  79             the lock was lost while CMD ran; CMD was terminated\n"
         "  126, 127       CMD could not be run, or was not found\n"
         "  128+S          zkr got signal S while waiting for the lock\n"
         "\n"
         "Example:\n"
         "  zkr lock /app/locks/nightly --timeout 10s -- ./nightly-job.sh --full\n";
}

int lock_main(const std::vector<std::string>& args) {
  return run_reporting_errors("lock", [&]() -> int {
    const auto specs = lock_specs();
    // Options end at CMD's first word: what follows is CMD's.
    const auto parsed = parse_args(args, specs, 1);
    if (parsed.has("help")) {
      std::fputs(lock_help().c_str(), stdout);
      return exit_code::ok;
    }
    const auto settings = lock_settings(parsed);
    const auto connection = connection_settings(parsed);
    auto log = cli_logger(connection.verbosity);

    // Before any thread exists, so that every thread inherits the blocked mask.
    SignalInbox inbox({SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD});
    // Declared before the lock, so it outlives the lease callback that sets it.
    std::atomic<bool> lost{false};
    std::atomic<LostReason> lost_reason{LostReason::none};

    auto client = open_client(connection);
    InterProcessSemaphoreMutex mutex(*client, settings.path, settings.lock_options);
    const auto queued = queue_for_lock(*client, mutex, connection, settings, inbox, *log);
    if (queued.error) std::rethrow_exception(queued.error);
    if (!queued.acquired) {
      print_error("timed out after " + format_duration(*settings.timeout) + " waiting for " +
                  settings.path);
      return exit_code::timeout;
    }

    const LockLease& lease = mutex.lease();
    log->info("holding {} as {} (fencing token {})", settings.path, lease.node_path(),
              lease.fencing_token());
    lease.on_lost([&](LostReason why) {
      // On a library thread: record and wake the supervisor, nothing more.
      lost_reason = why;
      lost = true;
      inbox.wake();
    });

    int code = exit_code::ok;
    if (lost) {
      print_error("lock " + settings.path + " was lost (" +
                  std::string(to_string(lost_reason.load())) + ") before the command started");
      code = exit_code::lock_lost;
    } else {
      const auto spawned = spawn_command(
          settings.command,
          {"ZKR_LOCK_PATH=" + settings.path, "ZKR_LOCK_NODE=" + lease.node_path(),
           "ZKR_FENCING_TOKEN=" + std::to_string(lease.fencing_token())},
          inbox.original_mask());
      if (!spawned.pid) {
        print_error(settings.command[0] + ": " +
                    (spawned.error == ENOENT ? std::string("command not found")
                                             : std::string(std::strerror(spawned.error))));
        code = exit_code_for_spawn_error(spawned.error);
      } else {
        log->info("running {} as pid {}", settings.command[0], *spawned.pid);
        const auto result = supervise(
            *spawned.pid, inbox, [&] { return lost.load(); },
            [&] {
              print_error("lock " + settings.path + " lost (" +
                          std::string(to_string(lost_reason.load())) +
                          "): terminating the command (pid " + std::to_string(*spawned.pid) + ")");
            },
            settings.kill_after, *log);
        code = result.terminated_for_loss ? exit_code::lock_lost : exit_code_of(result.wait_status);
        log->info("command exited ({}); releasing {}", exit_code_of(result.wait_status),
                  settings.path);
      }
    }
    (void)mutex.release();
    return code;
  });
}

}  // namespace zkr::cli
