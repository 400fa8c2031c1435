#include "supervisor.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <system_error>

#include <spdlog/logger.h>

#include "args.hpp"
#include "errors.hpp"

namespace zkr::cli {

SupervisionResult supervise(pid_t pid, SignalInbox& inbox, const std::function<bool()>& lost,
                            const std::function<void()>& on_loss,
                            std::chrono::milliseconds kill_after, spdlog::logger& log) {
  using Clock = std::chrono::steady_clock;
  SupervisionResult result;
  std::optional<Clock::time_point> kill_at;
  for (;;) {
    // Reap first, every time round: SIGCHLDs can merge, a wake-up cannot hide an exit.
    int status = 0;
    const pid_t reaped = ::waitpid(pid, &status, WNOHANG);
    if (reaped == pid) {
      result.wait_status = status;
      return result;
    }
    if (reaped < 0 && errno != EINTR)
      throw std::system_error(errno, std::generic_category(), "waitpid");

    if (!result.terminated_for_loss && lost()) {
      result.terminated_for_loss = true;
      on_loss();
      ::kill(pid, SIGTERM);
      kill_at = Clock::now() + kill_after;
    }

    const auto event = inbox.wait(kill_at);
    switch (event.kind) {
      case SignalInbox::Event::Kind::signal:
        if (event.signo == SIGCHLD) break;
        if (event.from_process) {
          log.info("passing signal {} from pid {} on to the command (pid {})",
                   ::strsignal(event.signo), event.sender, pid);
          ::kill(pid, event.signo);
        } else {
          log.info("signal {} came from the terminal: the command has it already",
                   ::strsignal(event.signo));
        }
        break;
      case SignalInbox::Event::Kind::deadline:
        print_error("the command (pid " + std::to_string(pid) + ") is still running " +
                    format_duration(kill_after) + " after SIGTERM: sending SIGKILL");
        ::kill(pid, SIGKILL);
        result.killed = true;
        kill_at.reset();
        break;
      case SignalInbox::Event::Kind::woken:
        break;
    }
  }
}

}  // namespace zkr::cli
