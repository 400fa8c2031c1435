// Child processes of the orchestrator: workers and the ensemble script.
#include "process.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <stdexcept>

extern char** environ;

namespace trainyard {
namespace {

// The orchestrator blocks the termination signals in all its threads and
// takes them in one thread of its own (see run_orchestrator); its children
// must not inherit that mask.
struct Unblocked {
  posix_spawnattr_t attr;
  Unblocked() {
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  }
  ~Unblocked() { posix_spawnattr_destroy(&attr); }
  Unblocked(const Unblocked&) = delete;
  Unblocked& operator=(const Unblocked&) = delete;
};

}  // namespace

// Stdout goes to our stderr, so that nothing but the summary reaches our stdout.
pid_t spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
  Unblocked attributes;
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &actions, &attributes.attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + args[0]);
  return pid;
}

int wait_exit(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string ensemble_leader(const std::string& script) {
  int ends[2];
  if (pipe(ends) != 0) return "";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, ends[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, ends[0]);
  std::vector<std::string> args{"bash", script, "-q", "leader"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  Unblocked attributes;
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, "bash", &actions, &attributes.attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(ends[1]);
  std::string out;
  char buffer[64];
  // Bounded: the script waits at most ZKR_LEADER_TIMEOUT, then exits and closes the pipe.
  for (ssize_t n; rc == 0 && (n = read(ends[0], buffer, sizeof buffer)) > 0;)
    out.append(buffer, static_cast<std::size_t>(n));
  close(ends[0]);
  if (rc != 0 || wait_exit(pid) != 0) return "";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out.find_first_not_of("0123456789") == std::string::npos ? out : "";
}

}  // namespace trainyard
