#include "support/child_process.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <stdexcept>
#include <system_error>

extern char** environ;

namespace zkr::test {

namespace {

// posix_spawn's file actions, destroyed on every path out.
class FileActions {
 public:
  FileActions() { ::posix_spawn_file_actions_init(&actions_); }
  ~FileActions() { ::posix_spawn_file_actions_destroy(&actions_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  posix_spawn_file_actions_t* get() { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_;
};

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::string& stderr_path) {
  if (argv.empty()) throw std::invalid_argument("ChildProcess: empty argv");
  std::vector<char*> args;
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  FileActions actions;
  if (!stderr_path.empty()) {
    const int error = ::posix_spawn_file_actions_addopen(
        actions.get(), STDERR_FILENO, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (error != 0)
      throw std::system_error(error, std::generic_category(), "stderr to " + stderr_path);
  }
  const int error = ::posix_spawn(&pid_, args[0], actions.get(), nullptr, args.data(), environ);
  if (error != 0) throw std::system_error(error, std::generic_category(), "posix_spawn " + argv[0]);
  reaper_ = std::thread([this] { reap(); });
}

ChildProcess::~ChildProcess() {
  kill();
  reaper_.join();
}

void ChildProcess::reap() noexcept {
  // First wait without reaping: while the child is a zombie its pid cannot be
  // reused, so kill() may still signal it safely until exited_ is set.
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) != 0 &&
         errno == EINTR) {
  }
  std::lock_guard lock(mutex_);
  exited_ = true;
  int status = 0;
  pid_t reaped = -1;
  do {
    reaped = ::waitpid(pid_, &status, 0);
  } while (reaped < 0 && errno == EINTR);
  status_ = reaped == pid_ ? status : kNotReaped;
  done_.notify_all();
}

std::optional<int> ChildProcess::wait_until(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  done_.wait_until(lock, deadline, [&] { return status_.has_value(); });
  return status_;
}

void ChildProcess::kill(int signo) noexcept {
  std::lock_guard lock(mutex_);
  if (!exited_) ::kill(pid_, signo);
}

std::string describe_wait_status(int status) {
  if (status == kNotReaped) return "not reaped (someone else waited for it)";
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "wait status " + std::to_string(status);
}

}  // namespace zkr::test
