#include "group_guard.hpp"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace zkr::cli {
namespace {

// The guard itself. It was forked from a process with threads: until it
// exits it may only make async-signal-safe calls, and it does.
[[noreturn]] void guard_main(int socket, pid_t pgid) {
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
  for (;;) {
    char byte = 0;
    const ssize_t got = ::read(socket, &byte, 1);
    if (got < 0 && errno == EINTR) continue;
    // End of file (or an error, which can only mean the same): zkr is gone
    // without disarming us.
    if (got != 1) ::kill(-pgid, SIGKILL);
    ::_exit(0);
  }
}

}  // namespace

GroupGuard::GroupGuard(pid_t pgid) {
  // A socket rather than a pipe: zkr's write to a guard that someone killed
  // must fail (MSG_NOSIGNAL), not raise SIGPIPE in zkr.
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
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
    guard_main(ends[1], pgid);
  }
  // As the guard does: whichever runs first, it is out of zkr's group.
  ::setpgid(pid, pid);
  ::close(ends[1]);
  pid_ = pid;
  socket_ = ends[0];
}

GroupGuard::~GroupGuard() { disarm(); }

void GroupGuard::disarm() noexcept {
  if (pid_ < 0) return;
  const char byte = 'd';
  (void)::send(socket_, &byte, 1, MSG_NOSIGNAL);
  ::close(socket_);
  // It exits as soon as it reads the byte (or end of file, if it missed it).
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  socket_ = -1;
}

}  // namespace zkr::cli
