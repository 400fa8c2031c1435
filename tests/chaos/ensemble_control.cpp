#include "ensemble_control.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <stdexcept>
#include <system_error>

namespace zkr::chaos {
namespace {

std::string quote(const std::string& s) {
  std::string out = "'";
  for (const char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

}  // namespace

EnsembleControl::EnsembleControl(std::string script, std::string dir)
    : script_(std::move(script)), dir_(std::move(dir)) {}

std::string EnsembleControl::run(const std::string& verb_and_args) const {
  // stderr is folded in so that a failure says why; -q keeps it quiet otherwise.
  const std::string command =
      "bash " + quote(script_) + " --dir " + quote(dir_) + " -q " + verb_and_args + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "re");
  if (!pipe) throw std::runtime_error("popen failed: " + command);
  std::string out;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), static_cast<int>(buffer.size()), pipe)) out += buffer.data();
  const int status = ::pclose(pipe);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("scripts/ensemble " + verb_and_args + " failed: " + out);
  return out;
}

void EnsembleControl::stop() const noexcept {
  try {
    (void)run("stop --keep");
  } catch (...) {
  }
}

void arm_ensemble_guard(const std::string& script, const std::string& dir) {
  static bool armed = false;
  if (armed) return;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::system_error(errno, std::generic_category(), "pipe2");
  const pid_t pid = ::fork();
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
  if (pid == 0) {
    // The guard: its own session, deaf to the signals meant for the run (a
    // Ctrl-C or ctest's kill of the group), until the runner is gone.
    ::close(fds[1]);
    ::setsid();
    ::signal(SIGINT, SIG_IGN);
    ::signal(SIGTERM, SIG_IGN);
    ::signal(SIGHUP, SIG_IGN);
    // Not holding the runner's stdout: whoever reads it (ctest) must see its
    // end when the runner exits, not when the guard does.
    const int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 1);
      ::dup2(null, 2);
    }
    char byte;
    while (::read(fds[0], &byte, 1) < 0 && errno == EINTR) {
    }
    // EOF: the runner exited (normally it has stopped the ensemble already,
    // and this is a no-op).
    ::execlp("bash", "bash", script.c_str(), "--dir", dir.c_str(), "-q", "stop", "--keep",
             static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[0]);  // the write end stays open, close-on-exec, until we exit
  armed = true;
}

}  // namespace zkr::chaos
