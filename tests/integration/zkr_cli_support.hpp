// tests/integration/zkr_cli_support.hpp: running the zkr command as a user
// runs it, for the tests of its verbs: as a separate process, judged by its
// exit code, its output and the znodes it leaves.
//
// The commands zkr runs are small shell scripts that report to the test
// through FIFOs ("started", "got-term") and wait on FIFOs the test writes
// to ("go"), so every step waits on a condition with a deadline: a line on a
// FIFO, a number of nodes in a lock directory (watched), a process's exit.
#pragma once

#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "support/child_process.hpp"
#include "support/ensemble.hpp"
#include "support/waits.hpp"
#include "zkr/client.hpp"
#include "zkr/path.hpp"

#ifndef ZKR_CLI
#error "ZKR_CLI must name the zkr executable (tests/CMakeLists.txt)"
#endif

namespace zkr::test::cli {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

using test::kWait;                  // for a condition that should hold in well under a second
constexpr auto kProcessWait = 90s;  // for a zkr run to end
// zkr's own connect deadline in these tests: generous, because the machine
// running them may be loaded (once, under a load average of 10, a zkr run
// failed to queue within 30 s and its reason went unseen; failures now show
// zkr's stderr).
constexpr const char* kConnectTimeout = "45s";

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

inline std::vector<std::string> words_of(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// A shell word: single quotes, for paths made by the test.
inline std::string quoted(const std::string& s) { return "'" + s + "'"; }

// A temporary directory for FIFOs and output files, removed at the end.
class TempDir {
 public:
  TempDir() {
    std::string templ = std::filesystem::temp_directory_path() / "zkr-cli-XXXXXX";
    if (!::mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed");
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// A FIFO the test holds open at both ends: a command's `echo x > fifo` never
// blocks and `read x < fifo` blocks until the test writes a line; the test's
// own reads wait with a deadline and never see end-of-file.
class Fifo {
 public:
  explicit Fifo(std::filesystem::path path) : path_(std::move(path)) {
    if (::mkfifo(path_.c_str(), 0600) != 0) throw std::runtime_error("mkfifo " + path_.string());
    read_fd_ = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    write_fd_ = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (read_fd_ < 0 || write_fd_ < 0) throw std::runtime_error("open " + path_.string());
  }
  ~Fifo() {
    ::close(read_fd_);
    ::close(write_fd_);
  }
  Fifo(const Fifo&) = delete;
  Fifo& operator=(const Fifo&) = delete;

  std::string path() const { return path_.string(); }

  // For a command reading the FIFO.
  void write_line(const std::string& line) {
    const std::string text = line + "\n";
    ASSERT_EQ(::write(write_fd_, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  }

  // The next line a command wrote, or nullopt at the deadline.
  std::optional<std::string> read_line(milliseconds timeout = kWait) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      if (const auto nl = buffer_.find('\n'); nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      const auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now());
      if (left <= 0ms) return std::nullopt;
      pollfd fd{read_fd_, POLLIN, 0};
      if (::poll(&fd, 1, static_cast<int>(left.count())) <= 0) continue;
      char chunk[256];
      const auto got = ::read(read_fd_, chunk, sizeof chunk);
      if (got > 0) buffer_.append(chunk, static_cast<std::size_t>(got));
    }
  }

 private:
  std::filesystem::path path_;
  int read_fd_ = -1;
  int write_fd_ = -1;
  std::string buffer_;
};

// A process that is not the test's child (the command zkr runs, or one it
// started): its pidfd becomes readable once it has exited, whoever its
// parent is, so the test can wait for it with a deadline. Open it while the
// process surely runs (it has just reported itself and waits), so that the
// pid cannot have been reused.
class Pidfd {
 public:
  // A system call rather than glibc 2.36's pidfd_open(), whose header lacks
  // extern "C" and so cannot be linked from C++.
  explicit Pidfd(pid_t pid) : pid_(pid), fd_(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0))) {}
  // Kills the process if it still runs (a test that failed leaves nothing
  // behind); through the pidfd, so never another process that got its pid.
  ~Pidfd() {
    if (fd_ < 0) return;
    if (!exited_within(0ms)) ::syscall(SYS_pidfd_send_signal, fd_, SIGKILL, nullptr, 0);
    ::close(fd_);
  }
  Pidfd(const Pidfd&) = delete;
  Pidfd& operator=(const Pidfd&) = delete;

  pid_t pid() const { return pid_; }
  bool valid() const { return fd_ >= 0; }
  // True once the process has exited; false if it still runs after timeout.
  bool exited_within(milliseconds timeout) const {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      pollfd fd{fd_, POLLIN, 0};
      const auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now());
      const int ready =
          ::poll(&fd, 1, static_cast<int>(std::max<milliseconds::rep>(0, left.count())));
      if (ready > 0) return true;
      if (ready == 0 || left <= 0ms) return false;  // else EINTR: poll again
    }
  }

 private:
  pid_t pid_;
  int fd_;
};

// "started 123 456" -> {123, 456}: pids a command reported after a word.
inline std::vector<pid_t> pids_after_word(const std::optional<std::string>& line) {
  std::vector<pid_t> pids;
  if (!line) return pids;
  const auto words = words_of(*line);
  for (std::size_t i = 1; i < words.size(); ++i) pids.push_back(std::stoi(words[i]));
  return pids;
}

// One run of zkr, stdout and stderr into files.
class Zkr {
 public:
  Zkr(const TempDir& dir, const std::vector<std::string>& args, bool without_zk_connect = false) {
    static std::atomic<int> counter{0};
    const std::string stem = "zkr-" + std::to_string(++counter);
    out_ = dir / (stem + ".out");
    err_ = dir / (stem + ".err");
    // exec: the shell only redirects; the process the test signals is zkr.
    std::vector<std::string> argv;
    if (without_zk_connect) argv = {"/usr/bin/env", "-u", "ZK_CONNECT"};
    argv.insert(
        argv.end(),
        {"/bin/sh", "-c", "exec \"$0\" \"$@\" >" + quoted(out_) + " 2>" + quoted(err_), ZKR_CLI});
    argv.insert(argv.end(), args.begin(), args.end());
    process_ = std::make_unique<test::ChildProcess>(argv);
  }

  pid_t pid() const { return process_->pid(); }
  void signal(int signo) { process_->kill(signo); }

  // zkr's exit code as a shell reports it; -1 if it overran (then killed).
  int wait(milliseconds timeout = kProcessWait) {
    const auto status = process_->wait_until(Clock::now() + timeout);
    if (!status) {
      process_->kill();
      ADD_FAILURE() << "zkr overran " << timeout.count() << " ms and was killed; stderr:\n"
                    << err();
      return -1;
    }
    if (WIFEXITED(*status)) return WEXITSTATUS(*status);
    if (WIFSIGNALED(*status)) return 128 + WTERMSIG(*status);
    return -1;
  }
  std::string out() const { return read_file(out_); }
  std::string err() const { return read_file(err_); }

  // True once zkr's stderr contains `text`; false after timeout. Waits on
  // inotify for the file to be written to.
  bool err_says(const std::string& text, milliseconds timeout = kWait) const {
    const int fd = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (fd < 0 || ::inotify_add_watch(fd, err_.c_str(), IN_MODIFY) < 0) {
      if (fd >= 0) ::close(fd);
      ADD_FAILURE() << "inotify on " << err_;
      return false;
    }
    const auto deadline = Clock::now() + timeout;
    bool found = false;
    for (;;) {
      // Read after the watch is set, so that no write can come in between.
      if (err().find(text) != std::string::npos) {
        found = true;
        break;
      }
      const auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now());
      if (left <= 0ms) break;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) > 0) {
        char events[4096];
        while (::read(fd, events, sizeof events) > 0) {
        }
      }
    }
    ::close(fd);
    return found;
  }

 private:
  std::filesystem::path out_, err_;
  std::unique_ptr<test::ChildProcess> process_;
};

struct Ran {
  int code = -1;
  std::string out, err;
};

inline Ran run_zkr(const TempDir& dir, const std::vector<std::string>& args,
                   bool without_zk_connect = false) {
  Zkr zkr(dir, args, without_zk_connect);
  Ran ran;
  ran.code = zkr.wait();
  ran.out = zkr.out();
  ran.err = zkr.err();
  return ran;
}

class ZkrCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ZKR_REQUIRE_ENSEMBLE();
    ClientOptions options;
    options.connect_string = test::connect_string();
    client_ = std::make_unique<Client>(options);
    ASSERT_TRUE(client_->block_until_connected(kWait));
    root_ = test::unique_path("zkr-cli");
    client_->with_retry([&](Keeper& k) {
      auto created = k.try_create(root_);
      if (!created.ok() && created.error() != Errc::node_exists) (void)std::move(created).value();
      return 0;
    });
  }

  void TearDown() override {
    // Synced first: our server may not have applied what zkr made through
    // another one yet, and a listing it answers would miss those nodes.
    if (client_ && !root_.empty())
      client_->with_retry([&](Keeper& k) {
        k.sync(root_);
        remove_tree(k, root_);
      });
  }

  static void remove_tree(Keeper& keeper, const std::string& path) {
    auto listed = keeper.try_children(path);
    if (listed.error() == Errc::no_node) return;
    for (const auto& name : listed.value().names) remove_tree(keeper, join_path(path, name));
    const auto removed = keeper.try_remove(path);
    if (!removed.ok() && removed.error() != Errc::no_node) throw KeeperError(removed.error(), path);
  }

  Keeper& keeper() { return *client_->keeper(); }

  // `zkr lock PATH OPTIONS -- sh -c SCRIPT`, with the ensemble given explicitly.
  std::unique_ptr<Zkr> start_lock(const std::string& path, const std::string& script,
                                  const std::vector<std::string>& options = {}) {
    std::vector<std::string> args{
        "lock", path, "--connect", test::connect_string(), "--connect-timeout", kConnectTimeout};
    args.insert(args.end(), options.begin(), options.end());
    args.insert(args.end(), {"--", "/bin/sh", "-c", script});
    return std::make_unique<Zkr>(dir_, args);
  }

  // True once the lock directory holds exactly n nodes (a missing one holds
  // none). Not test::wait_children: when the directory is missing it lists
  // first and then sets an exists watch, so a directory created between the
  // two (zkr creates it and its node back to back) leaves it watching the
  // directory's data, which never changes, until the deadline. Here the
  // exists watch comes first, and the listing only once the directory exists.
  bool queue_reaches(const std::string& path, std::size_t n) {
    const auto deadline = Clock::now() + kWait;
    for (;;) {
      auto changed = std::make_shared<test::Latch>();
      const auto watch = [changed](const WatchEvent&) { changed->open(); };
      std::optional<std::size_t> count;
      // Retried: a server of ours may be catching up after a freeze test.
      if (!client_->with_retry([&](Keeper& k) { return k.exists(path, watch); })) {
        count = 0;
      } else if (auto listed = client_->with_retry([&](Keeper& k) {
                   auto r = k.try_children(path, watch);
                   if (!r.ok() && is_retryable(r.error())) throw KeeperError(r.error(), path);
                   return r;
                 });
                 listed.ok()) {
        count = listed.value().names.size();
      } else if (listed.error() != Errc::no_node) {
        ADD_FAILURE() << "listing " << path << ": " << errc_name(listed.error());
        return false;
      }  // else deleted meanwhile: the exists watch has fired; look again
      if (count == n) return true;
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      if (left <= 0ms || !changed->wait(left)) return false;
    }
  }

  std::vector<std::string> nodes_of(const std::string& path) {
    auto listed = keeper().try_children(path);
    if (listed.error() == Errc::no_node) return {};
    return listed.value().names;
  }

  bool exists(const std::string& path) { return keeper().exists(path).has_value(); }

  TempDir dir_;
  std::unique_ptr<Client> client_;
  std::string root_;
};

}  // namespace zkr::test::cli
