// A stopped `zkr lock` must not leave its command running past its lock:
// zkr stopped by SIGSTOP (which it cannot catch) or by ^Z (SIGTSTP) for
// longer than its session timeout, while a second zkr waits for the lock.
//
// The two commands append lines to one file, "A" (the first holder) and "B"
// (the second): appends land in the file in the order they happen, so the
// file itself says whether the first command made progress inside the
// second's hold. Every wait is on a condition with a deadline; the second
// command's hold is counted in its own lines, not in seconds, so a slow host
// stretches both commands alike.
#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
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

using test::kLongWait;
constexpr const char* kConnectTimeout = "45s";
// The first holder's session: short, so that it expires soon after zkr stops;
// long enough that a busy host does not lose it while zkr runs.
constexpr const char* kShortSession = "4s";

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines_of(const std::filesystem::path& path) {
  std::vector<std::string> lines;
  std::istringstream in(read_file(path));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// /proc offers nothing to wait on: look every 20 ms until `done` or the deadline.
bool eventually(const std::function<bool()>& done, milliseconds timeout = kLongWait) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (done()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
}

struct ProcState {
  char state = '?';  // R, S, D, T (stopped), t, Z ...
  pid_t pgrp = 0;
};

// From /proc/PID/stat; nullopt once the process is gone.
std::optional<ProcState> proc_state(pid_t pid) {
  const auto text = read_file("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = text.rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  std::istringstream rest(text.substr(paren + 1));
  ProcState s;
  pid_t ppid = 0;
  rest >> s.state >> ppid >> s.pgrp;
  return s;
}

// The states of every process in process group `pgid` now.
std::vector<std::pair<pid_t, char>> group_states(pid_t pgid) {
  std::vector<std::pair<pid_t, char>> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto pid = static_cast<pid_t>(std::stol(name));
    if (const auto s = proc_state(pid); s && s->pgrp == pgid) out.emplace_back(pid, s->state);
  }
  return out;
}

// "no process", or the states of those still there, e.g. "123:R 124:S".
std::string describe(const std::vector<std::pair<pid_t, char>>& states) {
  if (states.empty()) return "no process";
  std::string s;
  for (const auto& [pid, state] : states) s += std::to_string(pid) + ":" + state + " ";
  return s;
}

// True if SIGSTOP is pending for `pid`: it stops before it runs any more of
// its own code, since no process can block or ignore SIGSTOP. A process in
// uninterruptible sleep (D: a write held back while a busy disk catches up,
// for many seconds at times) stops only when that system call returns, and
// until then this is how it shows that it was stopped.
bool stop_pending(pid_t pid) {
  std::istringstream in(read_file("/proc/" + std::to_string(pid) + "/status"));
  const auto bit = std::uint64_t{1} << (SIGSTOP - 1);
  for (std::string line; std::getline(in, line);) {
    // SigPnd: pending for the thread; ShdPnd: for the whole process.
    if (!line.starts_with("SigPnd:") && !line.starts_with("ShdPnd:")) continue;
    if (std::stoull(line.substr(7), nullptr, 16) & bit) return true;
  }
  return false;
}

// True if no process of the group can run its own code: all stopped or
// about to stop, or zombies, or none.
bool group_cannot_run(pid_t pgid) {
  for (const auto& [pid, state] : group_states(pgid))
    if (state != 'T' && state != 't' && state != 'Z' && state != 'X' && !stop_pending(pid))
      return false;
  return true;
}

class TempDir {
 public:
  TempDir() {
    std::string templ = std::filesystem::temp_directory_path() / "zkr-pause-XXXXXX";
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

// One `zkr lock PATH OPTIONS -- /bin/sh -c SCRIPT`, stdout and stderr into
// files, its outcome into a --status-file.
class ZkrLock {
 public:
  ZkrLock(const TempDir& dir, const std::string& name, const std::string& path,
          const std::string& script, const std::vector<std::string>& options = {})
      : err_(dir / (name + ".err")), status_(dir / (name + ".status")) {
    std::vector<std::string> argv{"/bin/sh",
                                  "-c",
                                  "exec \"$0\" \"$@\" >/dev/null 2>" + quoted(err_),
                                  ZKR_CLI,
                                  "lock",
                                  path,
                                  "--connect",
                                  test::connect_string(),
                                  "--connect-timeout",
                                  kConnectTimeout,
                                  "--status-file",
                                  status_.string()};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.insert(argv.end(), {"--", "/bin/sh", "-c", script});
    process_ = std::make_unique<test::ChildProcess>(argv);
  }

  pid_t pid() const { return process_->pid(); }  // zkr's (the shell execs it)
  void signal(int signo) { process_->kill(signo); }
  std::string err() const { return read_file(err_); }
  std::string status() const { return read_file(status_); }
  bool stopped() const {
    const auto s = proc_state(pid());
    return s && s->state == 'T';
  }

  // zkr's exit code as a shell reports it; -1 if it overran (then killed).
  int wait(milliseconds timeout = 2 * kLongWait) {
    const auto status = process_->wait_until(Clock::now() + timeout);
    if (!status) {
      process_->kill(SIGKILL);
      ADD_FAILURE() << "zkr overran and was killed; stderr:\n" << err();
      return -1;
    }
    if (WIFEXITED(*status)) return WEXITSTATUS(*status);
    if (WIFSIGNALED(*status)) return 128 + WTERMSIG(*status);
    return -1;
  }

 private:
  std::filesystem::path err_, status_;
  std::unique_ptr<test::ChildProcess> process_;
};

// How many lines of `lines` are `word`.
std::size_t count_of(const std::vector<std::string>& lines, const std::string& word) {
  std::size_t n = 0;
  for (const auto& l : lines) n += l == word;
  return n;
}

class ZkrPauseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ZKR_REQUIRE_ENSEMBLE();
    ClientOptions options;
    options.connect_string = test::connect_string();
    client_ = std::make_unique<Client>(options);
    ASSERT_TRUE(client_->block_until_connected(kLongWait));
    root_ = test::unique_path("zkr-pause");
  }

  void TearDown() override {
    if (!client_ || root_.empty()) return;
    client_->with_retry([&](Keeper& k) { remove_tree(k, root_); });
  }

  static void remove_tree(Keeper& keeper, const std::string& path) {
    auto listed = keeper.try_children(path);
    if (listed.error() == Errc::no_node) return;
    for (const auto& name : listed.value().names) remove_tree(keeper, join_path(path, name));
    const auto removed = keeper.try_remove(path);
    if (!removed.ok() && removed.error() != Errc::no_node) throw KeeperError(removed.error(), path);
  }

  // True once the lock directory holds n nodes.
  bool queue_reaches(const std::string& path, std::size_t n) {
    return test::wait_children(
        *client_->keeper(), path, [n](const auto& names) { return names.size() == n; }, kLongWait);
  }

  // The first holder ticks "A" into `ticks` until it is stopped or killed,
  // and says its pid (its group's id) in `pid_file` first.
  static std::string ticker(const std::filesystem::path& ticks,
                            const std::filesystem::path& pid_file, const std::string& until = "") {
    const std::string loop_condition = until.empty() ? ":" : "[ ! -e " + quoted(until) + " ]";
    return "echo $$ > " + quoted(pid_file) + ".tmp && mv " + quoted(pid_file) + ".tmp " +
           quoted(pid_file) + "; while " + loop_condition + "; do echo A >> " + quoted(ticks) +
           "; sleep 0.05; done; exit 3";
  }

  // zkr stopped by `signo` while its command runs, for longer than its
  // session timeout, with a second zkr queued behind it.
  void stopped_past_the_session(int signo);

  TempDir dir_;
  std::unique_ptr<Client> client_;
  std::string root_;
};

void ZkrPauseTest::stopped_past_the_session(int signo) {
  const std::string path = root_ + "/lock";
  const auto ticks = dir_ / "ticks";
  const auto pid_file = dir_ / "first.pid";
  const auto granted = dir_ / "granted";
  ZkrLock first(dir_, "first", path, ticker(ticks, pid_file), {"--session-timeout", kShortSession});
  ASSERT_TRUE(eventually([&] { return count_of(lines_of(ticks), "A") >= 3; })) << first.err();
  const auto pgid = static_cast<pid_t>(std::stol(read_file(pid_file)));

  // Thirty lines of its own: its hold, counted in the same steps as the first's.
  ZkrLock second(dir_, "second", path,
                 "touch " + quoted(granted) + "; i=0; while [ $i -lt 30 ]; do echo B >> " +
                     quoted(ticks) + "; i=$((i+1)); sleep 0.05; done");
  ASSERT_TRUE(queue_reaches(path, 2)) << second.err();

  first.signal(signo);
  ASSERT_TRUE(eventually([&] { return first.stopped(); })) << "zkr did not stop";
  // The first session expires, and the second zkr is granted the lock.
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(granted); })) << second.err();
  // The race this test is about: the first zkr is still stopped...
  EXPECT_TRUE(first.stopped()) << "zkr resumed before the second holder was granted";
  // ...and its command must not run now. Eventually: a process of the group
  // caught in uninterruptible sleep (D, a write under load) stops as its
  // system call ends; that it wrote nothing after that is checked below.
  EXPECT_TRUE(eventually([&] { return group_cannot_run(pgid); }))
      << "the first command runs beside the second holder: " << describe(group_states(pgid));
  EXPECT_EQ(second.wait(), 0) << second.err();

  // Every A before every B: the first command made no progress in the second's hold.
  const auto lines = lines_of(ticks);
  std::size_t a_after_b = 0;
  bool seen_b = false;
  for (const auto& l : lines) {
    seen_b = seen_b || l == "B";
    a_after_b += seen_b && l == "A";
  }
  EXPECT_EQ(count_of(lines, "B"), 30u);
  EXPECT_EQ(a_after_b, 0u) << "the first command ticked " << a_after_b
                           << " times inside the second's hold";

  // Continued, the first zkr finds its session gone: lock lost, its command ended.
  first.signal(SIGCONT);
  EXPECT_EQ(first.wait(), 79) << first.err();
  EXPECT_NE(first.status().find("\"outcome\":\"lock_lost\""), std::string::npos) << first.status();
  EXPECT_TRUE(eventually([&] { return group_states(pgid).empty(); }))
      << "the first command outlived its zkr: " << describe(group_states(pgid));
  EXPECT_TRUE(queue_reaches(path, 0));
}

TEST_F(ZkrPauseTest, SigstopOfZkrPastItsSessionStopsTheCommandBeforeTheNextHolderRuns) {
  stopped_past_the_session(SIGSTOP);
}

TEST_F(ZkrPauseTest, CtrlZOfZkrPastItsSessionStopsTheCommandBeforeTheNextHolderRuns) {
  stopped_past_the_session(SIGTSTP);
}

TEST_F(ZkrPauseTest, CtrlZThenFgWithinTheSessionResumesBothAndTheCommandEndsNormally) {
  const std::string path = root_ + "/fg";
  const auto ticks = dir_ / "ticks";
  const auto pid_file = dir_ / "first.pid";
  const auto done = dir_ / "done";
  // A session long enough that the stop below, however slow the host, ends
  // well within it.
  ZkrLock holder(dir_, "holder", path, ticker(ticks, pid_file, done.string()),
                 {"--session-timeout", "20s"});
  ASSERT_TRUE(eventually([&] { return count_of(lines_of(ticks), "A") >= 3; })) << holder.err();
  const auto pgid = static_cast<pid_t>(std::stol(read_file(pid_file)));

  const auto stop_sent = Clock::now();
  holder.signal(SIGTSTP);
  ASSERT_TRUE(eventually([&] { return holder.stopped(); })) << "zkr did not stop on ^Z";
  const auto zkr_stopped = Clock::now();
  EXPECT_TRUE(eventually([&] { return group_cannot_run(pgid); }))
      << "^Z stopped zkr but not its command: " << describe(group_states(pgid));
  const auto ticks_while_stopped = lines_of(ticks).size();

  holder.signal(SIGCONT);  // what the shell's fg sends
  // If the outcome below is wrong, whether this test kept zkr stopped past
  // its session is the first thing to know.
  const auto ms = [](auto d) { return std::chrono::duration_cast<milliseconds>(d).count(); };
  SCOPED_TRACE("zkr stopped " + std::to_string(ms(zkr_stopped - stop_sent)) +
               " ms after ^Z; its group could not run " +
               std::to_string(ms(Clock::now() - zkr_stopped)) + " ms later, and fg came then");
  EXPECT_TRUE(eventually([&] { return lines_of(ticks).size() > ticks_while_stopped; }))
      << "the command did not go on after zkr was continued: " << describe(group_states(pgid))
      << "\n"
      << holder.err();
  std::ofstream(done).put('\n');
  EXPECT_EQ(holder.wait(), 3) << holder.err();
  EXPECT_NE(holder.status().find("\"outcome\":\"held_throughout\""), std::string::npos)
      << holder.status();
  EXPECT_TRUE(queue_reaches(path, 0));
}

TEST_F(ZkrPauseTest, SigstoppedZkrFreezesItsCommandWhichGoesOnOnceZkrProvesItsGrantAgain) {
  const std::string path = root_ + "/frozen";
  const auto ticks = dir_ / "ticks";
  const auto pid_file = dir_ / "first.pid";
  const auto done = dir_ / "done";
  // The guard stops the group half a session timeout (6 s) after zkr's last
  // proof; the session outlives that by 6 s more, and a link the client finds
  // silent when it resumes is reconnected to the same session, not lost.
  ZkrLock holder(dir_, "holder", path, ticker(ticks, pid_file, done.string()),
                 {"--session-timeout", "12s", "--ignore-suspended"});
  ASSERT_TRUE(eventually([&] { return count_of(lines_of(ticks), "A") >= 3; })) << holder.err();
  const auto pgid = static_cast<pid_t>(std::stol(read_file(pid_file)));

  holder.signal(SIGSTOP);
  ASSERT_TRUE(eventually([&] { return holder.stopped(); }));
  EXPECT_TRUE(eventually([&] { return group_cannot_run(pgid); }))
      << "zkr is stopped, and its command runs on: " << describe(group_states(pgid));
  EXPECT_TRUE(holder.stopped()) << "the test came too late: zkr runs again";
  const auto ticks_while_stopped = lines_of(ticks).size();

  holder.signal(SIGCONT);
  EXPECT_TRUE(eventually([&] { return lines_of(ticks).size() > ticks_while_stopped; }))
      << "the command did not go on once zkr ran again: " << describe(group_states(pgid)) << "\n"
      << holder.err();
  std::ofstream(done).put('\n');
  EXPECT_EQ(holder.wait(), 3) << holder.err();
  EXPECT_NE(holder.status().find("\"outcome\":\"held_throughout\""), std::string::npos)
      << holder.status();
  EXPECT_TRUE(queue_reaches(path, 0));
}

TEST_F(ZkrPauseTest, CtrlZWhileQueuedStopsZkrWhichQueuesOnWhenContinued) {
  // zkr reads SIGTSTP itself now, in every phase: queued, it must still stop
  // (nothing of its command runs yet), not take ^Z for an interrupt.
  const std::string path = root_ + "/queued";
  const auto ticks = dir_ / "ticks";
  const auto pid_file = dir_ / "first.pid";
  const auto done = dir_ / "done";
  const auto second_ran = dir_ / "second-ran";
  ZkrLock holder(dir_, "holder", path, ticker(ticks, pid_file, done.string()));
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(pid_file); })) << holder.err();
  ZkrLock waiter(dir_, "waiter", path, "touch " + quoted(second_ran) + "; exit 4");
  ASSERT_TRUE(queue_reaches(path, 2)) << waiter.err();

  waiter.signal(SIGTSTP);
  ASSERT_TRUE(eventually([&] { return waiter.stopped(); })) << "^Z did not stop a queued zkr";
  waiter.signal(SIGCONT);
  EXPECT_TRUE(eventually([&] { return !waiter.stopped(); }));
  std::ofstream(done).put('\n');
  EXPECT_EQ(holder.wait(), 3) << holder.err();
  EXPECT_EQ(waiter.wait(), 4) << waiter.err();
  EXPECT_TRUE(std::filesystem::exists(second_ran));
  EXPECT_NE(waiter.status().find("\"outcome\":\"held_throughout\""), std::string::npos)
      << waiter.status();
}

}  // namespace
}  // namespace zkr
