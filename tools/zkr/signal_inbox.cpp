#include "signal_inbox.hpp"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <system_error>

namespace zkr::cli {
namespace {

[[noreturn]] void fail(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

bool is_ignored(int signo) {
  struct sigaction current {};
  if (::sigaction(signo, nullptr, &current) != 0) return false;
  return current.sa_handler == SIG_IGN;
}

}  // namespace

SignalInbox::SignalInbox(std::initializer_list<int> signals) {
  sigemptyset(&handled_);
  for (const int signo : signals) {
    if (is_ignored(signo)) {
      if (signo != SIGCHLD) continue;
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      sigemptyset(&dfl.sa_mask);
      if (::sigaction(SIGCHLD, &dfl, nullptr) != 0) fail("sigaction(SIGCHLD)");
    }
    sigaddset(&handled_, signo);
  }
  if (const int e = ::pthread_sigmask(SIG_BLOCK, &handled_, &original_mask_); e != 0)
    throw std::system_error(e, std::generic_category(), "pthread_sigmask");
  signal_fd_ = ::signalfd(-1, &handled_, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signal_fd_ < 0) fail("signalfd");
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    ::close(signal_fd_);
    fail("eventfd");
  }
}

SignalInbox::~SignalInbox() {
  ::close(signal_fd_);
  ::close(wake_fd_);
  ::pthread_sigmask(SIG_SETMASK, &original_mask_, nullptr);
}

void SignalInbox::wake() noexcept {
  const std::uint64_t one = 1;
  // Can only fail if the counter would overflow: it is then non-zero, which
  // is all a wake needs.
  [[maybe_unused]] const auto written = ::write(wake_fd_, &one, sizeof one);
}

SignalInbox::Event SignalInbox::wait(
    std::optional<std::chrono::steady_clock::time_point> deadline) {
  using namespace std::chrono;
  for (;;) {
    // Signals first: a command's exit and a wake-up arriving together must
    // not hide the exit.
    signalfd_siginfo info{};
    const auto got = ::read(signal_fd_, &info, sizeof info);
    if (got == static_cast<ssize_t>(sizeof info)) {
      Event e;
      e.kind = Event::Kind::signal;
      e.signo = static_cast<int>(info.ssi_signo);
      const auto code = info.ssi_code;
      e.from_process = code == SI_USER || code == SI_QUEUE || code == SI_TKILL;
      e.sender = static_cast<pid_t>(info.ssi_pid);
      return e;
    }
    std::uint64_t count = 0;
    if (::read(wake_fd_, &count, sizeof count) == static_cast<ssize_t>(sizeof count))
      return Event{Event::Kind::woken};

    int timeout_ms = -1;
    if (deadline) {
      const auto left = ceil<milliseconds>(*deadline - steady_clock::now());
      if (left <= 0ms) return Event{Event::Kind::deadline};
      timeout_ms = static_cast<int>(std::min<milliseconds::rep>(left.count(), 24 * 3600 * 1000));
    }
    pollfd fds[2] = {{signal_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (::poll(fds, 2, timeout_ms) < 0 && errno != EINTR) fail("poll");
  }
}

}  // namespace zkr::cli
