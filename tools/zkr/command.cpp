#include "command.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "exit_codes.hpp"

extern char** environ;

namespace zkr::cli {
namespace {

std::string env_name(const std::string& entry) { return entry.substr(0, entry.find('=')); }

// What the child needs, prepared before the fork: after it, in a process
// that had threads, only async-signal-safe calls are allowed.
struct ChildPlan {
  char* const* argv;
  char* const* envp;
  const sigset_t* mask;
  pid_t zkr;
  int socket;         // the child's end: "go" comes in, an exec errno goes out
  unsigned fd_limit;  // for the fallback when close_range cannot mark
};

[[noreturn]] void become_command(const ChildPlan& plan) {
  ::setpgid(0, 0);
  // The parent here is the thread that forked: zkr's main thread, which
  // lives as long as zkr does.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // zkr may have died before the line above: then nothing would kill us.
  if (::getppid() != plan.zkr) ::_exit(exit_code::internal);
  // Every descriptor above stderr closes at exec, including those another
  // thread of zkr opened without O_CLOEXEC while we forked. Marking rather
  // than closing keeps our socket open until the exec succeeds.
  if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    for (unsigned fd = 3; fd < plan.fd_limit; ++fd)
      ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
  }
  ::sigprocmask(SIG_SETMASK, plan.mask, nullptr);
  // Wait until zkr has armed what must be in place before the command runs.
  char go = 0;
  ssize_t got;
  while ((got = ::read(plan.socket, &go, 1)) < 0 && errno == EINTR) {
  }
  if (got != 1) ::_exit(exit_code::internal);
  // glibc's execvpe allocates nothing: it is what posix_spawnp runs in its
  // child too.
  ::execvpe(plan.argv[0], plan.argv, plan.envp);
  const int error = errno;
  (void)::write(plan.socket, &error, sizeof error);
  ::_exit(exit_code::not_found);
}

void reap(pid_t pid) {
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

Spawned spawn_command(const std::vector<std::string>& argv,
                      const std::vector<std::string>& extra_env, const sigset_t& mask,
                      const std::function<void(pid_t)>& before_exec) {
  std::vector<std::string> env_strings;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry(*e);
    bool replaced = false;
    for (const auto& extra : extra_env) replaced = replaced || env_name(extra) == env_name(entry);
    if (!replaced) env_strings.push_back(entry);
  }
  env_strings.insert(env_strings.end(), extra_env.begin(), extra_env.end());

  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> env;
  for (auto& e : env_strings) env.push_back(e.data());
  env.push_back(nullptr);

  rlimit files{};
  const unsigned fd_limit = ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < 1'048'576
                                ? static_cast<unsigned>(files.rlim_cur)
                                : 1'048'576;
  // A socket, not a pipe: zkr's "go" to a child someone killed must fail
  // (MSG_NOSIGNAL), not raise SIGPIPE in zkr.
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) return {std::nullopt, errno};
  const ChildPlan plan{args.data(), env.data(), &mask, ::getpid(), ends[1], fd_limit};
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    ::close(ends[0]);
    ::close(ends[1]);
    return {std::nullopt, error};
  }
  if (pid == 0) {
    ::close(ends[0]);
    become_command(plan);
  }
  ::close(ends[1]);
  // As the child does: whichever runs first, the group exists from here on.
  ::setpgid(pid, pid);
  try {
    before_exec(pid);
  } catch (...) {
    ::close(ends[0]);  // end of file: the child exits without running anything
    reap(pid);
    throw;
  }
  const char go = 'g';
  int error = 0;
  if (::send(ends[0], &go, 1, MSG_NOSIGNAL) != 1) error = errno;
  // The child's end closes at exec: end of file means the command runs.
  ssize_t got = 0;
  if (error == 0) {
    while ((got = ::read(ends[0], &error, sizeof error)) < 0 && errno == EINTR) {
    }
    if (got != 0 && got != static_cast<ssize_t>(sizeof error)) error = EIO;
  }
  ::close(ends[0]);
  if (error != 0) {
    reap(pid);
    return {std::nullopt, error};
  }
  return {pid, 0};
}

int exit_code_for_spawn_error(int error) {
  return error == ENOENT || error == ENOTDIR ? exit_code::not_found : exit_code::not_executable;
}

int exit_code_of(const siginfo_t& info) {
  if (info.si_code == CLD_EXITED) return info.si_status;
  if (info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED)
    return exit_code::signal_base + info.si_status;
  return exit_code::internal;
}

}  // namespace zkr::cli
