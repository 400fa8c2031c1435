#include "group_guard.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "pause_rule.hpp"

namespace zkr::cli {
namespace {

// One message, one datagram of a SOCK_SEQPACKET socket: never split, never
// merged.
struct Message {
  char kind;           // see the constants below
  std::int64_t value;  // kProved: the send time of the proof
};
constexpr char kProved = 'p';
constexpr char kHold = 'h';
constexpr char kRelease = 'r';
constexpr char kTerminating = 't';
constexpr char kDisarm = 'd';

void act(pid_t pgid, PauseRule::Action action) {
  switch (action) {
    case PauseRule::Action::stop: ::kill(-pgid, SIGSTOP); break;
    case PauseRule::Action::resume: ::kill(-pgid, SIGCONT); break;
    case PauseRule::Action::kill: ::kill(-pgid, SIGKILL); break;
    case PauseRule::Action::none: break;
  }
}

// The guard itself. It was forked from a process with threads: until it
// exits it may only make async-signal-safe calls (and system calls), and it
// does.
[[noreturn]] void guard_main(int socket, pid_t pgid, PauseRule rule) {
  ::setpgid(0, 0);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  // SIGKILL and SIGSTOP cannot be ignored, and glibc refuses its own
  // real-time signals: both fail harmlessly.
  for (int signo = 1; signo < NSIG; ++signo) ::sigaction(signo, &ignore, nullptr);
  // Hold nothing of zkr's: neither its ZooKeeper socket (the server should see
  // a dead zkr's connection close) nor the command's start-up socket.
  if (socket > 0) ::close_range(0, static_cast<unsigned>(socket) - 1, 0);
  ::close_range(static_cast<unsigned>(socket) + 1, ~0U, 0);
  // A timer on the clock the rule counts in: CLOCK_BOOTTIME goes on through
  // a suspend of the host, as the servers' clocks do; poll()'s own timeout
  // would not, and serves only if the kernel gives us no timer.
  const int timer = ::timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC | TFD_NONBLOCK);
  for (;;) {
    // Act on the time first: a message that came late must not hide it.
    for (auto action = rule.next(boottime_ns()); action != PauseRule::Action::none;
         action = rule.next(boottime_ns()))
      act(pgid, action);
    const auto at = rule.wake_at();
    int poll_timeout_ms = -1;
    if (timer >= 0) {
      itimerspec when{};
      if (at != PauseRule::kNever) {
        when.it_value.tv_sec = at / 1'000'000'000;
        when.it_value.tv_nsec = at % 1'000'000'000;
      }  // else all zero: disarmed
      ::timerfd_settime(timer, TFD_TIMER_ABSTIME, &when, nullptr);
    } else if (at != PauseRule::kNever) {
      const auto left_ms = (at - boottime_ns()) / 1'000'000 + 1;
      poll_timeout_ms = static_cast<int>(left_ms < 0 ? 0 : left_ms > 60'000 ? 60'000 : left_ms);
    }
    pollfd fds[2] = {{socket, POLLIN, 0}, {timer, POLLIN, 0}};
    if (::poll(fds, timer >= 0 ? 2 : 1, poll_timeout_ms) < 0) continue;  // EINTR
    if (timer >= 0 && (fds[1].revents & POLLIN) != 0) {
      std::uint64_t expirations = 0;
      (void)::read(timer, &expirations, sizeof expirations);
    }
    for (;;) {
      Message message{};
      const ssize_t got = ::recv(socket, &message, sizeof message, MSG_DONTWAIT);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      // End of file (or an error, which can only mean the same): zkr is gone
      // without disarming us.
      if (got <= 0) {
        ::kill(-pgid, SIGKILL);
        ::_exit(0);
      }
      if (got != static_cast<ssize_t>(sizeof message)) continue;
      switch (message.kind) {
        case kProved: rule.proved(message.value); break;
        case kHold: rule.hold(); break;
        case kRelease: rule.release(); break;
        case kTerminating: rule.terminating(); break;
        case kDisarm: ::_exit(0);
        default: break;
      }
    }
  }
}

}  // namespace

GroupGuard::GroupGuard(pid_t pgid, std::chrono::milliseconds session_timeout,
                       std::int64_t proven_ns) {
  const PauseRule rule(
      std::chrono::duration_cast<std::chrono::nanoseconds>(session_timeout).count(), proven_ns);
  // A socket rather than a pipe: zkr's write to a guard that someone killed
  // must fail (MSG_NOSIGNAL), not raise SIGPIPE in zkr. Sequenced packets, so
  // that each message arrives whole.
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0)
    throw std::system_error(errno, std::generic_category(), "socketpair");
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    ::close(ends[0]);
    ::close(ends[1]);
    throw std::system_error(error, std::generic_category(), "fork (group guard)");
  }
  if (pid == 0) {
    ::close(ends[0]);
    guard_main(ends[1], pgid, rule);
  }
  // As the guard does: whichever runs first, it is out of zkr's group.
  ::setpgid(pid, pid);
  ::close(ends[1]);
  pid_ = pid;
  socket_ = ends[0];
}

GroupGuard::~GroupGuard() { disarm(); }

void GroupGuard::send(char kind, std::int64_t value, int flags) noexcept {
  if (socket_ < 0) return;
  const Message message{kind, value};
  while (::send(socket_, &message, sizeof message, MSG_NOSIGNAL | flags) < 0 && errno == EINTR) {
  }
}

void GroupGuard::proved(std::int64_t sent_ns) noexcept { send(kProved, sent_ns, MSG_DONTWAIT); }

void GroupGuard::hold() noexcept { send(kHold, 0, 0); }

void GroupGuard::release() noexcept { send(kRelease, 0, 0); }

void GroupGuard::terminating() noexcept { send(kTerminating, 0, 0); }

void GroupGuard::disarm() noexcept {
  if (pid_ < 0) return;
  send(kDisarm, 0, 0);
  ::close(socket_);
  // It exits as soon as it reads the message (or end of file, if it missed it).
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  socket_ = -1;
}

}  // namespace zkr::cli
