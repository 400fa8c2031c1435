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

// Reaps every process of the group that is ours to reap (the command, and
// the orphans handed to us as subreaper); the command's exit code, if it was
// among them. Zombies left unreaped would keep the group from looking empty.
std::optional<int> reap_group(pid_t pgid) {
  std::optional<int> leader_code;
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_PGID, static_cast<id_t>(pgid), &info, WEXITED | WNOHANG) != 0) {
      if (errno == EINTR) continue;
      if (errno == ECHILD) return leader_code;  // none of ours in the group now
      throw std::system_error(errno, std::generic_category(), "waitid");
    }
    if (info.si_pid == 0) return leader_code;  // some run on
    if (info.si_pid == pgid) leader_code = exit_code_of(info);
  }
}

// No process, running or zombie, has the group id any more.
bool group_is_empty(pid_t pgid) { return ::kill(-pgid, 0) != 0 && errno == ESRCH; }

}  // namespace

SupervisionResult supervise(pid_t pgid, SignalInbox& inbox, const std::function<bool()>& lost,
                            const std::function<void()>& on_loss,
                            std::chrono::milliseconds kill_after, spdlog::logger& log) {
  SupervisionResult result;
  std::optional<int> leader_code;
  std::optional<Clock::time_point> kill_at;
  for (;;) {
    // Reap first, every time round: SIGCHLDs can merge, a wake-up cannot hide an exit.
    if (auto code = reap_group(pgid)) {
      leader_code = code;
      log.info("the command (pid {}) exited ({})", pgid, *code);
    }
    if (leader_code && group_is_empty(pgid)) {
      result.exit_code = *leader_code;
      return result;
    }

    if (!result.terminated_for_loss && lost()) {
      result.terminated_for_loss = true;
      on_loss();
      ::kill(-pgid, SIGTERM);
      kill_at = Clock::now() + kill_after;
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
        if (event.from_process)
          log.info("passing signal {} from pid {} on to the command's group ({})",
                   ::strsignal(event.signo), event.sender, pgid);
        else
          log.info("passing signal {} on to the command's group ({})", ::strsignal(event.signo),
                   pgid);
        ::kill(-pgid, event.signo);
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
      case SignalInbox::Event::Kind::woken:
        break;
    }
  }
}

}  // namespace zkr::cli
