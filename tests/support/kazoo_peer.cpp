#include "support/kazoo_peer.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <system_error>
#include <vector>

#include "support/child_process.hpp"

#ifndef ZKR_INTEROP_DIR
#error "ZKR_INTEROP_DIR must name tests/interop, where kazoo_lock_peer.py is (tests/CMakeLists.txt)"
#endif

extern char** environ;

namespace zkr::test {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Debian's interpreter, where python3-kazoo is installed: a python3 earlier
// in PATH (pyenv, a virtualenv) may lack it.
constexpr const char* kPython = "/usr/bin/python3";
constexpr const char* kScript = ZKR_INTEROP_DIR "/kazoo_lock_peer.py";

std::string find_skip_reason() {
  if (::access(kPython, X_OK) != 0) return std::string(kPython) + " missing (scripts/setup)";
  ChildProcess probe({kPython, "-c", "import kazoo.recipe.lock"});
  const auto status = probe.wait_until(Clock::now() + std::chrono::seconds(60));
  if (!status) {
    probe.kill();
    return "python3 -c 'import kazoo' did not finish in 60 s";
  }
  if (*status != 0)
    return std::string(kPython) + " cannot import kazoo (scripts/setup installs python3-kazoo): " +
           describe_wait_status(*status);
  return "";
}

}  // namespace

const std::string& kazoo_peer_skip_reason() {
  static const std::string reason = find_skip_reason();
  return reason;
}

// A socket pair rather than two pipes: a write to a peer that died fails
// with EPIPE (MSG_NOSIGNAL) instead of killing the test with SIGPIPE.
KazooPeer::KazooPeer(const std::string& connect_string) {
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
    throw std::system_error(errno, std::system_category(), "socketpair");
  fd_ = ends[0];
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, ends[1], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, ends[1], STDOUT_FILENO);
  std::vector<std::string> argv = {kPython, kScript, connect_string};
  std::vector<char*> args;
  for (auto& arg : argv) args.push_back(arg.data());
  args.push_back(nullptr);
  const int error = ::posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(ends[1]);
  if (error != 0) {
    ::close(fd_);
    throw std::system_error(error, std::generic_category(), "posix_spawn " + argv[0]);
  }
}

KazooPeer::~KazooPeer() {
  ::shutdown(fd_, SHUT_WR);
  bool exited = false;
  if (!::testing::Test::HasFailure()) {
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    for (Read r; (r = read_some(deadline)) != Read::timeout;) {
      if (r == Read::eof) {
        exited = true;
        break;
      }
      buffer_.clear();
    }
  }
  if (!exited) ::kill(pid_, SIGKILL);
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  ::close(fd_);
}

void KazooPeer::send(const std::string& command) {
  const std::string line = command + "\n";
  for (std::size_t sent = 0; sent < line.size();) {
    const auto n = ::send(fd_, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;  // the peer is gone: reply() says so
    sent += static_cast<std::size_t>(n);
  }
}

std::string KazooPeer::reply(milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (const auto end = buffer_.find('\n'); end != std::string::npos) {
      std::string line = buffer_.substr(0, end);
      buffer_.erase(0, end + 1);
      return line;
    }
    switch (read_some(deadline)) {
      case Read::data: break;
      case Read::timeout: return std::string(kNoReply);
      case Read::eof: return std::string(kGone);
    }
  }
}

KazooPeer::Read KazooPeer::read_some(Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now());
    pollfd ready{fd_, POLLIN, 0};
    const int polled = ::poll(&ready, 1, static_cast<int>(std::max(left, milliseconds(0)).count()));
    if (polled < 0 && errno == EINTR) continue;
    if (polled == 0) return Read::timeout;
    char chunk[4096];
    const auto n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Read::eof;
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return Read::data;
  }
}

}  // namespace zkr::test
