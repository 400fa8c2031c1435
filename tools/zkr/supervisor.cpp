#include "supervisor.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <system_error>

#include <spdlog/logger.h>

#include "args.hpp"
#include "command.hpp"
#include "errors.hpp"

namespace zkr::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct Reaped {
  std::optional<int> leader_code;    // the command's exit code, if it was reaped
  bool stopped_on_terminal = false;  // one of them stopped on SIGTTIN/SIGTTOU
};

// Reaps every process of the group that is ours to reap (the command, and
// the orphans handed to us as subreaper). Zombies left unreaped would keep
// the group from looking empty. Stops are reported too: the group is not in
// the terminal's foreground, so using the terminal stops it, for good.
Reaped reap_group(pid_t pgid) {
  Reaped out;
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_PGID, static_cast<id_t>(pgid), &info, WEXITED | WSTOPPED | WNOHANG) != 0) {
      if (errno == EINTR) continue;
      if (errno == ECHILD) return out;  // none of ours in the group now
      throw std::system_error(errno, std::generic_category(), "waitid");
    }
    if (info.si_pid == 0) return out;  // some run on
    if (info.si_code == CLD_STOPPED) {
      if (info.si_status == SIGTTIN || info.si_status == SIGTTOU) {
        print_error("the command's process " + std::to_string(info.si_pid) + " stopped on " +
                    ::strsignal(info.si_status) +
                    ": it runs in a process group of its own, outside the terminal's "
                    "foreground, and cannot use the terminal (give it input from a file or "
                    "pipe); it stays stopped, holding the lock, until zkr is signalled");
        out.stopped_on_terminal = true;
      }
      continue;
    }
    if (info.si_pid == pgid) out.leader_code = exit_code_of(info);
  }
}

// Signals the group, and wakes it if stopped, so that it acts on the signal
// now (a stopped process only takes SIGKILL and SIGCONT).
void signal_group(pid_t pgid, int signo, bool stopped) {
  ::kill(-pgid, signo);
  if (stopped && signo != SIGKILL) ::kill(-pgid, SIGCONT);
}

// No process, running or zombie, has the group id any more.
bool group_is_empty(pid_t pgid) { return ::kill(-pgid, 0) != 0 && errno == ESRCH; }

}  // namespace

SupervisionResult supervise(pid_t pgid, SignalInbox& inbox, const std::function<bool()>& lost,
                            const std::function<void()>& on_loss, const GrantHooks& grant,
                            std::chrono::milliseconds kill_after, spdlog::logger& log) {
  SupervisionResult result;
  std::optional<int> leader_code;
  std::optional<Clock::time_point> kill_at;
  bool stopped = false;  // some of the group stopped on the terminal
  for (;;) {
    // Reap first, every time round: SIGCHLDs can merge, a wake-up cannot hide an exit.
    const auto reaped = reap_group(pgid);
    stopped = stopped || reaped.stopped_on_terminal;
    if (reaped.leader_code) {
      leader_code = reaped.leader_code;
      log.info("the command (pid {}) exited ({})", pgid, *leader_code);
    }
    if (leader_code && group_is_empty(pgid)) {
      result.exit_code = *leader_code;
      return result;
    }

    if (!result.terminated_for_loss && lost()) {
      result.terminated_for_loss = true;
      on_loss();
      if (grant.may_end_gently()) {
        // Woken whatever stopped it (the terminal, the guard): a stopped
        // process acts on no SIGTERM.
        signal_group(pgid, SIGTERM, true);
        kill_at = Clock::now() + kill_after;
      } else {
        print_error(
            "our grant was last proved more than a session timeout ago: the next "
            "holder may be running; sending SIGKILL to the command's group (" +
            std::to_string(pgid) + ")");
        ::kill(-pgid, SIGKILL);
        result.killed = true;
      }
    }

    // Once the command's own process is gone, the last of its group may be
    // no child of ours (its parent left the group and lives on elsewhere):
    // its exit would then tell us nothing. So look again every second until
    // the group is empty; in every other case a SIGCHLD wakes us first.
    std::optional<Clock::time_point> deadline = kill_at;
    if (leader_code) {
      const auto recheck = Clock::now() + std::chrono::seconds(1);
      deadline = deadline ? std::min(*deadline, recheck) : recheck;
    }
    const auto event = inbox.wait(deadline);
    switch (event.kind) {
      case SignalInbox::Event::Kind::signal:
        if (event.signo == SIGCHLD) break;
        if (event.signo == SIGTSTP) {
          grant.stop_with_command();
          break;
        }
        if (event.from_process)
          log.info("passing signal {} from pid {} on to the command's group ({})",
                   ::strsignal(event.signo), event.sender, pgid);
        else
          log.info("passing signal {} on to the command's group ({})", ::strsignal(event.signo),
                   pgid);
        signal_group(pgid, event.signo, stopped && grant.may_run());
        break;
      case SignalInbox::Event::Kind::deadline:
        if (kill_at && Clock::now() >= *kill_at) {
          print_error("the command's group (" + std::to_string(pgid) + ") is still running " +
                      format_duration(kill_after) + " after SIGTERM: sending SIGKILL");
          ::kill(-pgid, SIGKILL);
          result.killed = true;
          kill_at.reset();
        }
        break;
      case SignalInbox::Event::Kind::woken: break;
    }
  }
}

}  // namespace zkr::cli
