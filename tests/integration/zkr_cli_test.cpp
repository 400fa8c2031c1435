// The zkr command-line tool, run as a user runs it: as a separate process,
// judged by its exit code, its output and the znodes it leaves.
//
// The commands zkr runs are small shell scripts that report to the test
// through FIFOs ("started", "got-term") and wait on FIFOs the test writes
// to ("go"), so every step waits on a condition with a deadline: a line on a
// FIFO, a number of nodes in a lock directory (watched), a process's exit.
// The tests of usage errors, help and an unreachable ensemble need no
// ensemble; the others skip without one.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "support/ensemble.hpp"
#include "support/waits.hpp"
#include "zkr/client.hpp"
#include "zkr/path.hpp"

#ifndef ZKR_CLI
#error "ZKR_CLI must name the zkr executable (tests/CMakeLists.txt)"
#endif

namespace zkr {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr auto kWait = 30s;        // for a condition that should hold in well under a second
constexpr auto kProcessWait = 90s; // for a zkr run to end
// zkr's own connect deadline in these tests: generous, because the machine
// running them may be loaded (once, under a load average of 10, a zkr run
// failed to queue within 30 s and its reason went unseen; failures now show
// zkr's stderr).
constexpr const char* kConnectTimeout = "45s";

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> words_of(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// A shell word: single quotes, for paths made by the test.
std::string quoted(const std::string& s) { return "'" + s + "'"; }

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
    argv.insert(argv.end(), {"/bin/sh", "-c",
                             "exec \"$0\" \"$@\" >" + quoted(out_) + " 2>" + quoted(err_),
                             ZKR_CLI});
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

 private:
  std::filesystem::path out_, err_;
  std::unique_ptr<test::ChildProcess> process_;
};

struct Ran {
  int code = -1;
  std::string out, err;
};

Ran run_zkr(const TempDir& dir, const std::vector<std::string>& args,
            bool without_zk_connect = false) {
  Zkr zkr(dir, args, without_zk_connect);
  Ran ran;
  ran.code = zkr.wait();
  ran.out = zkr.out();
  ran.err = zkr.err();
  return ran;
}

// ---- Without an ensemble: help, usage errors, an unreachable ensemble.

TEST(ZkrCliUsage, HelpForEveryVerb) {
  TempDir dir;
  const std::vector<std::vector<std::string>> helps{
      {"--help"}, {"help"}, {"help", "lock"}, {"lock", "--help"},
      {"help", "ls"}, {"ls", "--help"}, {"help", "cleanup"}, {"cleanup", "-h"}};
  for (const auto& args : helps) {
    const auto ran = run_zkr(dir, args);
    std::string shown;
    for (const auto& a : args) shown += a + " ";
    EXPECT_EQ(ran.code, 0) << shown << ran.err;
    EXPECT_NE(ran.out.find("Usage: zkr"), std::string::npos) << shown << ran.out;
  }
  // Each verb's help names its own synopsis and the exit codes a script needs.
  const auto lock = run_zkr(dir, {"lock", "--help"});
  EXPECT_NE(lock.out.find("Usage: zkr lock PATH"), std::string::npos);
  for (const char* code : {"64", "69", "75", "79", "126", "127"})
    EXPECT_NE(lock.out.find(code), std::string::npos) << "exit code " << code << " undocumented";
  EXPECT_NE(run_zkr(dir, {"ls", "--help"}).out.find("Usage: zkr ls ROOT"), std::string::npos);
  EXPECT_NE(run_zkr(dir, {"cleanup", "--help"}).out.find("--dry-run"), std::string::npos);

  // bench belongs to the benchmarks, which may or may not be built in.
  const auto bench = run_zkr(dir, {"bench", "--help"});
  EXPECT_EQ(bench.code, 0) << bench.err;
  EXPECT_FALSE(bench.out.empty() && bench.err.empty());
  EXPECT_EQ(run_zkr(dir, {"help", "bench"}).code, 0);

  const auto version = run_zkr(dir, {"--version"});
  EXPECT_EQ(version.code, 0);
  EXPECT_NE(version.out.find("zkr"), std::string::npos);
}

TEST(ZkrCliUsage, BadInputIsRefusedWithAClearMessage) {
  TempDir dir;
  struct Case {
    std::vector<std::string> args;
    std::string says;
    bool without_zk_connect = false;
  };
  const std::vector<Case> cases{
      {{}, "Usage: zkr"},
      {{"frobnicate"}, "unknown verb 'frobnicate'"},
      {{"--frob"}, "unknown option '--frob'"},
      {{"help", "frobnicate"}, "unknown verb 'frobnicate'"},
      {{"lock", "/a", "--frob", "--", "true"}, "unknown option --frob"},
      {{"lock", "/a", "--timeout", "5x", "--", "true"}, "--timeout: bad duration '5x'"},
      {{"lock", "/a", "--timeout", "-1s", "--", "true"}, "--timeout: bad duration '-1s'"},
      {{"lock", "/a", "--kill-after", "soon", "--", "true"}, "--kill-after: bad duration 'soon'"},
      {{"lock", "/a", "--timeout"}, "--timeout needs a value"},
      {{"lock", "/a"}, "missing the command"},
      {{"lock"}, "missing lock PATH"},
      {{"lock", "relative/path", "--", "true"}, "invalid znode path \"relative/path\""},
      {{"lock", "/a//b", "--", "true"}, "invalid znode path \"/a//b\""},
      {{"lock", "/", "--", "true"}, "cannot be the root"},
      {{"lock", "/a", "--connect", "no-port-here", "--", "true"}, "no-port-here"},
      {{"lock", "/a", "--", "true"}, "no ensemble given", true},
      {{"ls"}, "missing ROOT"},
      {{"ls", "/a", "/b"}, "one ROOT"},
      {{"ls", "/a", "--max-children", "0"}, "--max-children: expected a positive whole number"},
      {{"ls", "bad"}, "invalid znode path \"bad\""},
      {{"cleanup", "/a", "--dry-run=yes"}, "--dry-run takes no value"},
  };
  for (const auto& c : cases) {
    std::string shown;
    for (const auto& a : c.args) shown += a + " ";
    const auto ran = run_zkr(dir, c.args, c.without_zk_connect);
    EXPECT_EQ(ran.code, 64) << "zkr " << shown << "\n" << ran.err;
    EXPECT_NE(ran.err.find(c.says), std::string::npos)
        << "zkr " << shown << ": stderr does not say '" << c.says << "':\n" << ran.err;
    EXPECT_TRUE(ran.out.empty()) << "zkr " << shown << " wrote on stdout:\n" << ran.out;
  }
}

TEST(ZkrCliUsage, UnreachableEnsembleFailsAtTheConnectDeadline) {
  TempDir dir;
  // Nothing listens on port 1 of the loopback: connections are refused.
  const std::vector<std::vector<std::string>> runs{
      {"lock", "/zkr-cli-unreachable", "--", "true"},
      {"ls", "/zkr-cli-unreachable"},
      {"cleanup", "/zkr-cli-unreachable"}};
  for (const auto& args : runs) {
    auto with_connect = args;
    with_connect.insert(with_connect.begin() + 1,
                        {"--connect", "127.0.0.1:1", "--connect-timeout", "1s"});
    const auto start = Clock::now();
    const auto ran = run_zkr(dir, with_connect);
    const auto took = Clock::now() - start;
    EXPECT_EQ(ran.code, 69) << args[0] << ": " << ran.err;
    EXPECT_NE(ran.err.find("cannot reach ZooKeeper at 127.0.0.1:1 within 1s"), std::string::npos)
        << ran.err;
    EXPECT_GE(took, 1s);
    EXPECT_LT(took, 20s) << "the deadline was 1s";
  }
}

// ---- On the live ensemble.

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
    if (client_ && !root_.empty()) client_->with_retry([&](Keeper& k) { remove_tree(k, root_); });
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
    std::vector<std::string> args{"lock", path, "--connect", test::connect_string(), "--connect-timeout", kConnectTimeout};
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
      } else if (auto listed = client_->with_retry(
                     [&](Keeper& k) {
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

TEST_F(ZkrCliTest, ExitCodeOfTheCommandPassesThrough) {
  const std::string path = root_ + "/codes";
  const std::vector<std::pair<std::string, int>> cases{
      {"exit 0", 0},
      {"exit 3", 3},
      {"exit 125", 125},
      {"kill -TERM $$", 128 + SIGTERM},
      {"kill -KILL $$", 128 + SIGKILL},
      // The command is told which lock it holds, and its fencing token.
      {"test \"$ZKR_LOCK_PATH\" = " + quoted(path) +
           " && test -n \"$ZKR_FENCING_TOKEN\" && test -n \"$ZKR_LOCK_NODE\"",
       0},
  };
  for (const auto& [script, code] : cases) {
    auto zkr = start_lock(path, script);
    EXPECT_EQ(zkr->wait(), code) << script << "\n" << zkr->err();
    EXPECT_TRUE(queue_reaches(path, 0)) << script << ": a lock node was left behind";
  }
}

TEST_F(ZkrCliTest, ConcurrentRunsExcludeEachOther) {
  const std::string path = root_ + "/exclusive";
  const auto log = dir_ / "log";
  // Each command writes start and end markers around a pause: without the
  // lock, four runs started together would interleave them.
  std::vector<std::unique_ptr<Zkr>> runs;
  for (int i = 0; i < 4; ++i) {
    runs.push_back(start_lock(path, "echo start " + std::to_string(i) + " >> " + quoted(log) +
                                        "; sleep 0.2; echo end " + std::to_string(i) + " >> " +
                                        quoted(log)));
  }
  for (auto& run : runs) EXPECT_EQ(run->wait(), 0) << run->err();
  const auto lines = lines_of(read_file(log));
  ASSERT_EQ(lines.size(), 8u) << read_file(log);
  std::set<std::string> seen;
  for (std::size_t i = 0; i < lines.size(); i += 2) {
    const auto start = words_of(lines[i]), end = words_of(lines[i + 1]);
    ASSERT_EQ(start.size(), 2u);
    ASSERT_EQ(end.size(), 2u);
    EXPECT_EQ(start[0], "start") << read_file(log);
    EXPECT_EQ(end[0], "end") << read_file(log);
    EXPECT_EQ(start[1], end[1]) << "two commands ran at once:\n" << read_file(log);
    seen.insert(start[1]);
  }
  EXPECT_EQ(seen.size(), 4u) << read_file(log);
  EXPECT_TRUE(queue_reaches(path, 0));
}

TEST_F(ZkrCliTest, WaitersRunInArrivalOrder) {
  const std::string path = root_ + "/fifo";
  const auto log = dir_ / "log";
  Fifo gate(dir_ / "gate");
  auto first = start_lock(path, "echo A >> " + quoted(log) + "; read go < " + quoted(gate.path()));
  ASSERT_TRUE(queue_reaches(path, 1)) << first->err();
  std::vector<std::unique_ptr<Zkr>> waiters;
  for (const std::string name : {"B", "C", "D"}) {
    waiters.push_back(start_lock(path, "echo " + name + " >> " + quoted(log)));
    // Queued behind the ones before it before the next one starts.
    ASSERT_TRUE(queue_reaches(path, waiters.size() + 1))
        << name << " did not queue: " << waiters.back()->err();
  }
  gate.write_line("go");
  EXPECT_EQ(first->wait(), 0) << first->err();
  for (auto& w : waiters) EXPECT_EQ(w->wait(), 0) << w->err();
  EXPECT_EQ(lines_of(read_file(log)), (std::vector<std::string>{"A", "B", "C", "D"}));
  EXPECT_TRUE(queue_reaches(path, 0));
}

TEST_F(ZkrCliTest, TimeoutWhileAnotherHoldsExitsWithItsOwnCode) {
  const std::string path = root_ + "/busy";
  Fifo gate(dir_ / "gate");
  auto holder = start_lock(path, "read go < " + quoted(gate.path()));
  ASSERT_TRUE(queue_reaches(path, 1)) << holder->err();
  const auto marker = dir_ / "ran";
  for (const std::string timeout : {"300ms", "0"}) {
    const auto start = Clock::now();
    const auto ran = run_zkr(dir_, {"lock", path, "--connect", test::connect_string(), "--connect-timeout", kConnectTimeout,
                                    "--timeout", timeout, "--", "/bin/sh", "-c",
                                    "touch " + quoted(marker)});
    EXPECT_EQ(ran.code, 75) << ran.err;
    EXPECT_NE(ran.err.find("timed out"), std::string::npos) << ran.err;
    if (timeout == "300ms") {
      EXPECT_GE(Clock::now() - start, 300ms);
    }
    EXPECT_FALSE(std::filesystem::exists(marker)) << "the command ran without the lock";
    EXPECT_TRUE(queue_reaches(path, 1)) << "the timed-out waiter left its node";
  }
  gate.write_line("go");
  EXPECT_EQ(holder->wait(), 0) << holder->err();
  EXPECT_TRUE(queue_reaches(path, 0));
}

TEST_F(ZkrCliTest, LostLockTerminatesTheCommandAndExitsWithItsOwnCode) {
  const std::string path = root_ + "/lost";
  Fifo events(dir_ / "events");
  const auto ev = quoted(events.path());
  // The command reports SIGTERM and exits 0: zkr must still say "lost".
  auto holder = start_lock(path,
                           "trap 'kill $! 2>/dev/null; echo got-term > " + ev + "; exit 0' TERM; "
                           "echo started > " + ev + "; sleep 300 & wait",
                           {"--kill-after", "20s"});
  ASSERT_EQ(events.read_line(), "started") << holder->err();
  ASSERT_TRUE(queue_reaches(path, 1));  // our server has seen the node too
  const auto nodes = nodes_of(path);
  ASSERT_EQ(nodes.size(), 1u);
  keeper().remove(join_path(path, nodes[0]));  // an operator, or a lost session's cleanup

  EXPECT_EQ(events.read_line(), "got-term") << "the command was not signalled";
  EXPECT_EQ(holder->wait(), 79) << holder->err();
  EXPECT_NE(holder->err().find("lost (node_deleted)"), std::string::npos) << holder->err();
  EXPECT_TRUE(queue_reaches(path, 0));
}

TEST_F(ZkrCliTest, LinkToTheEnsembleLostCountsAsLockLost) {
  ZKR_REQUIRE_SERVER_FAULTS();
  const std::string path = root_ + "/suspended";
  Fifo events(dir_ / "events");
  const auto ev = quoted(events.path());
  // One server only, so that zkr cannot move to another when it freezes; a
  // short session so that the C client notices the silence within seconds.
  const std::string server = "127.0.0.1:" + test::ensemble("port 1");
  auto holder = std::make_unique<Zkr>(
      dir_, std::vector<std::string>{
                "lock", path, "--connect", server, "--connect-timeout", kConnectTimeout,
                "--session-timeout", "4s", "--kill-after", "20s", "--", "/bin/sh", "-c",
                "trap 'kill $! 2>/dev/null; echo got-term > " + ev + "; exit 0' TERM; "
                "echo started > " + ev + "; sleep 300 & wait"});
  ASSERT_EQ(events.read_line(), "started") << holder->err();
  test::Repair thaw("thaw 1");
  test::ensemble("freeze 1");
  // Suspended counts as lost under the default policy (Curator's standard one).
  EXPECT_EQ(events.read_line(), "got-term") << holder->err();
  EXPECT_EQ(holder->wait(), 79) << holder->err();
  EXPECT_NE(holder->err().find("lost (suspended)"), std::string::npos) << holder->err();
  thaw.now();
  // Its session ends once the server hears nothing more from it.
  EXPECT_TRUE(queue_reaches(path, 0));
  // Leave the server serving again for the tests that follow.
  ClientOptions options;
  options.connect_string = server;
  Client again(options);
  EXPECT_TRUE(again.block_until_connected(kWait)) << "server 1 did not come back";
}

TEST_F(ZkrCliTest, CommandIgnoringSigtermIsKilledAfterTheGracePeriod) {
  const std::string path = root_ + "/stubborn";
  Fifo events(dir_ / "events");
  auto holder = start_lock(path,
                           "trap '' TERM; echo started > " + quoted(events.path()) +
                               "; exec sleep 300",
                           {"--kill-after", "500ms"});
  ASSERT_EQ(events.read_line(), "started") << holder->err();
  ASSERT_TRUE(queue_reaches(path, 1));  // our server has seen the node too
  const auto nodes = nodes_of(path);
  ASSERT_EQ(nodes.size(), 1u);
  const auto deleted_at = Clock::now();
  keeper().remove(join_path(path, nodes[0]));
  EXPECT_EQ(holder->wait(), 79) << holder->err();
  EXPECT_GE(Clock::now() - deleted_at, 500ms) << "SIGKILL came before the grace period";
  EXPECT_NE(holder->err().find("sending SIGKILL"), std::string::npos) << holder->err();
}

TEST_F(ZkrCliTest, CommandThatCannotRunExitsLikeAShellAndLeavesNoNode) {
  const std::string path = root_ + "/notfound";
  const auto missing = run_zkr(dir_, {"lock", path, "--connect", test::connect_string(), "--connect-timeout", kConnectTimeout, "--",
                                      "zkr-cli-test-no-such-command", "arg"});
  EXPECT_EQ(missing.code, 127) << missing.err;
  EXPECT_NE(missing.err.find("zkr-cli-test-no-such-command: command not found"),
            std::string::npos)
      << missing.err;
  EXPECT_TRUE(queue_reaches(path, 0)) << "the lock was not released";

  const auto not_executable = dir_ / "not-executable";
  std::ofstream(not_executable) << "#!/bin/sh\nexit 0\n";  // mode 0644
  const auto denied = run_zkr(dir_, {"lock", path, "--connect", test::connect_string(), "--connect-timeout", kConnectTimeout, "--",
                                     not_executable.string()});
  EXPECT_EQ(denied.code, 126) << denied.err;
  EXPECT_TRUE(queue_reaches(path, 0)) << "the lock was not released";
}

TEST_F(ZkrCliTest, SignalsToZkrArePassedOnToTheCommand) {
  const std::string path = root_ + "/signals";
  for (const int signo : {SIGTERM, SIGHUP, SIGINT}) {
    Fifo events(dir_ / ("events-" + std::to_string(signo)));
    const auto ev = quoted(events.path());
    const std::string name = signo == SIGTERM ? "TERM" : signo == SIGHUP ? "HUP" : "INT";
    auto holder = start_lock(path, "trap 'kill $! 2>/dev/null; echo got-" + name + " > " + ev +
                                       "; exit 7' " + name + "; echo started > " + ev +
                                       "; sleep 300 & wait");
    ASSERT_EQ(events.read_line(), "started") << holder->err();
    holder->signal(signo);
    EXPECT_EQ(events.read_line(), "got-" + name) << holder->err();
    // The command handled it: its own code comes back, not zkr's.
    EXPECT_EQ(holder->wait(), 7) << holder->err();
    EXPECT_TRUE(queue_reaches(path, 0));
  }
}

TEST_F(ZkrCliTest, SignalWhileQueuedLeavesTheQueueAndNoNode) {
  const std::string path = root_ + "/queued";
  Fifo gate(dir_ / "gate");
  auto holder = start_lock(path, "read go < " + quoted(gate.path()));
  ASSERT_TRUE(queue_reaches(path, 1)) << holder->err();
  const auto marker = dir_ / "ran";
  auto waiter = start_lock(path, "touch " + quoted(marker));
  ASSERT_TRUE(queue_reaches(path, 2)) << waiter->err();
  waiter->signal(SIGINT);
  EXPECT_EQ(waiter->wait(), 128 + SIGINT) << waiter->err();
  EXPECT_TRUE(queue_reaches(path, 1)) << "the interrupted waiter left its node";
  gate.write_line("go");
  EXPECT_EQ(holder->wait(), 0) << holder->err();
  EXPECT_FALSE(std::filesystem::exists(marker));
  EXPECT_TRUE(queue_reaches(path, 0));
}

TEST_F(ZkrCliTest, LsShowsHolderAndWaiters) {
  const std::string path = root_ + "/listed";
  Fifo gate(dir_ / "gate");
  auto holder = start_lock(path, "read go < " + quoted(gate.path()), {"--holder", "holder-A"});
  ASSERT_TRUE(queue_reaches(path, 1)) << holder->err();
  auto second = start_lock(path, "true", {"--holder", "waiter-B"});
  ASSERT_TRUE(queue_reaches(path, 2)) << second->err();
  auto third = start_lock(path, "true", {"--holder", "waiter-C"});
  ASSERT_TRUE(queue_reaches(path, 3)) << third->err();

  const auto table = run_zkr(dir_, {"ls", root_, "--connect", test::connect_string(), "--connect-timeout", kConnectTimeout});
  EXPECT_EQ(table.code, 0) << table.err;
  const auto lines = lines_of(table.out);
  ASSERT_EQ(lines.size(), 2u) << table.out;
  EXPECT_EQ(words_of(lines[0]), (std::vector<std::string>{"LOCK", "HOLDER", "WAITERS", "AGE"}));
  const auto row = words_of(lines[1]);
  ASSERT_EQ(row.size(), 4u) << lines[1];
  EXPECT_EQ(row[0], path);
  EXPECT_EQ(row[1], "holder-A");
  EXPECT_EQ(row[2], "2");
  EXPECT_TRUE(row[3].ends_with("s")) << "age: " << row[3];

  const auto json = run_zkr(dir_, {"ls", root_, "--json", "--connect", test::connect_string(), "--connect-timeout", kConnectTimeout});
  EXPECT_EQ(json.code, 0) << json.err;
  const auto objects = lines_of(json.out);
  ASSERT_EQ(objects.size(), 1u) << json.out;
  for (const auto& field :
       {"\"path\":\"" + path + "\"", std::string("\"holder\":\"holder-A\""),
        std::string("\"waiters\":2"), std::string("\"holder\":\"waiter-C\"")})
    EXPECT_NE(objects[0].find(field), std::string::npos) << field << " not in " << objects[0];
  EXPECT_TRUE(objects[0].starts_with("{") && objects[0].ends_with("}")) << objects[0];

  gate.write_line("go");
  EXPECT_EQ(holder->wait(), 0) << holder->err();
  EXPECT_EQ(second->wait(), 0) << second->err();
  EXPECT_EQ(third->wait(), 0) << third->err();
}

TEST_F(ZkrCliTest, LsRefusesADirectoryTooLargeToListAndSaysHowToProceed) {
  for (const std::string name : {"a", "b", "c"}) keeper().create(root_ + "/" + name);
  const auto refused =
      run_zkr(dir_, {"ls", root_, "--max-children", "2", "--connect", test::connect_string(), "--connect-timeout", kConnectTimeout});
  EXPECT_EQ(refused.code, 65) << refused.err;
  EXPECT_NE(refused.err.find(root_ + " has 3 children"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--max-children"), std::string::npos) << refused.err;

  const auto allowed =
      run_zkr(dir_, {"ls", root_, "--max-children", "3", "--connect", test::connect_string(), "--connect-timeout", kConnectTimeout});
  EXPECT_EQ(allowed.code, 0) << allowed.err;
  EXPECT_NE(allowed.err.find("no locks under"), std::string::npos) << allowed.err;
}

TEST_F(ZkrCliTest, MissingRootIsReportedAsSuch) {
  for (const std::string verb : {"ls", "cleanup"}) {
    const auto ran =
        run_zkr(dir_, {verb, root_ + "/not-there", "--connect", test::connect_string(), "--connect-timeout", kConnectTimeout});
    EXPECT_EQ(ran.code, 66) << verb << ": " << ran.err;
    EXPECT_NE(ran.err.find("no such path: " + root_ + "/not-there"), std::string::npos)
        << ran.err;
  }
}

TEST_F(ZkrCliTest, CleanupDryRunListsThenCleanupRemovesOnlyWhatIsUnused) {
  const std::vector<std::string> empties{root_ + "/empty-1", root_ + "/empty-2",
                                         root_ + "/nested/empty-3"};
  keeper().create(root_ + "/nested");
  for (const auto& p : empties) keeper().create(p);
  const std::string held = root_ + "/held";
  Fifo gate(dir_ / "gate");
  auto holder = start_lock(held, "read go < " + quoted(gate.path()));
  ASSERT_TRUE(queue_reaches(held, 1)) << holder->err();
  const auto held_node = nodes_of(held).at(0);

  const auto dry = run_zkr(dir_, {"cleanup", root_, "--dry-run", "--connect",
                                  test::connect_string()});
  EXPECT_EQ(dry.code, 0) << dry.err;
  const auto listed = lines_of(dry.out);
  for (const auto& p : empties)
    EXPECT_NE(std::find(listed.begin(), listed.end(), p), listed.end()) << p << " not listed:\n"
                                                                        << dry.out;
  for (const auto& line : listed) {
    EXPECT_TRUE(line.starts_with(root_ + "/")) << "not a path under the root: " << line;
    EXPECT_FALSE(line.starts_with(held)) << "a held lock would be removed: " << line;
  }
  EXPECT_NE(dry.err.find("dry run: would remove"), std::string::npos) << dry.err;
  for (const auto& p : empties) EXPECT_TRUE(exists(p)) << "--dry-run removed " << p;

  const auto swept = run_zkr(dir_, {"cleanup", root_, "--connect", test::connect_string(), "--connect-timeout", kConnectTimeout});
  EXPECT_EQ(swept.code, 0) << swept.err;
  for (const auto& p : empties) {
    EXPECT_FALSE(exists(p)) << p << " was not removed";
    EXPECT_NE(swept.out.find(p + "\n"), std::string::npos) << p << " not reported:\n" << swept.out;
  }
  EXPECT_NE(swept.err.find("removed "), std::string::npos) << swept.err;
  EXPECT_TRUE(exists(join_path(held, held_node))) << "the held lock's node was removed";
  EXPECT_TRUE(exists(root_)) << "the root was removed without --remove-root";

  gate.write_line("go");
  EXPECT_EQ(holder->wait(), 0) << holder->err();
}

}  // namespace
}  // namespace zkr
