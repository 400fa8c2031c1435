#include "command.hpp"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>

#include "exit_codes.hpp"

extern char** environ;

namespace zkr::cli {
namespace {

std::string env_name(const std::string& entry) { return entry.substr(0, entry.find('=')); }

}  // namespace

Spawned spawn_command(const std::vector<std::string>& argv,
                      const std::vector<std::string>& extra_env, const sigset_t& mask) {
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

  posix_spawnattr_t attr;
  if (const int e = ::posix_spawnattr_init(&attr); e != 0) return {std::nullopt, e};
  // zkr blocks the signals it handles (see SignalInbox); the command must not
  // start with them blocked. Their dispositions were never changed, so the
  // command gets default ones, or ignored ones if zkr was started with them
  // ignored (nohup).
  int error = ::posix_spawnattr_setsigmask(&attr, &mask);
  if (error == 0) error = ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = -1;
  // glibc's posix_spawnp reports a failed exec (not found, not executable)
  // as its return value, so no pipe dance is needed to learn it.
  if (error == 0) error = ::posix_spawnp(&pid, args[0], nullptr, &attr, args.data(), env.data());
  ::posix_spawnattr_destroy(&attr);
  if (error != 0) return {std::nullopt, error};
  return {pid, 0};
}

int exit_code_for_spawn_error(int error) {
  return error == ENOENT || error == ENOTDIR ? exit_code::not_found : exit_code::not_executable;
}

int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return exit_code::signal_base + WTERMSIG(wait_status);
  return exit_code::internal;
}

}  // namespace zkr::cli
