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
#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "integration/zkr_cli_support.hpp"
#include "lock_directory.hpp"
#include "support/ensemble.hpp"
#include "support/kazoo_peer.hpp"
#include "support/waits.hpp"
#include "zkr/client.hpp"
#include "zkr/lock_factory.hpp"
#include "zkr/path.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using test::kWait;
using test::cli::Fifo;
using test::cli::kConnectTimeout;
using test::cli::kProcessWait;
using test::cli::lines_of;
using test::cli::Pidfd;
using test::cli::pids_after_word;
using test::cli::quoted;
using test::cli::Ran;
using test::cli::read_file;
using test::cli::run_zkr;
using test::cli::TempDir;
using test::cli::words_of;
using test::cli::Zkr;
using test::cli::ZkrCliTest;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// ---- Without an ensemble: help, usage errors, an unreachable ensemble.

TEST(ZkrCliUsage, HelpForEveryVerb) {
  TempDir dir;
  const std::vector<std::vector<std::string>> helps{
      {"--help"},     {"help"},         {"help", "lock"},    {"lock", "--help"},
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
  for (const char* code : {"64", "69", "75", "78", "79", "126", "127"})
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
      // An empty value is no value: not an option left out, nor one that
      // takes the next word, nor "--".
      {{"lock", "/a", "--status-file=", "--", "true"}, "--status-file needs a value"},
      {{"lock", "/a", "--connect-timeout=", "--connect", "h:1", "--", "true"},
       "--connect-timeout needs a value"},
      {{"lock", "/a", "--status-file", "--", "true"}, "--status-file needs a value"},
      {{"ls", "/a", "--max-depth="}, "--max-depth needs a value"},
      {{"lock", "/a"}, "missing the command"},
      {{"lock"}, "missing lock PATH"},
      {{"lock", "relative/path", "--", "true"}, "invalid znode path \"relative/path\""},
      {{"lock", "/a//b", "--", "true"}, "invalid znode path \"/a//b\""},
      {{"lock", "/", "--", "true"}, "cannot be the root"},
      {{"lock", "/a", "--connect", "no-port-here", "--", "true"}, "no-port-here"},
      {{"lock", "/a", "--", "true"}, "no ensemble given", true},
      {{"ls"}, "missing ROOT"},
      {{"ls", "/a", "/b"}, "one ROOT"},
      {{"ls", "/a", "--max-children", "0"}, "--max-children: expected a whole number from 1 to"},
      {{"ls", "bad"}, "invalid znode path \"bad\""},
      // Numbers out of range are refused, not wrapped (2^32 once became 0).
      {{"ls", "/a", "--max-depth", "4294967296"}, "--max-depth: expected a whole number from 0 to"},
      {{"ls", "/a", "--max-depth", "-1"}, "--max-depth: expected a whole number from 0 to"},
      {{"cleanup", "/a", "--max-depth", "4294967297"},
       "--max-depth: expected a whole number from 0 to"},
      {{"ls", "/a", "--max-children", "18446744073709551616"},
       "--max-children: expected a whole number from 1 to"},
      {{"lock", "/a", "--session-timeout", "30d", "--", "true"}, "--session-timeout: at most"},
      {{"cleanup", "/a", "--dry-run=yes"}, "--dry-run takes no value"},
  };
  for (const auto& c : cases) {
    std::string shown;
    for (const auto& a : c.args) shown += a + " ";
    const auto ran = run_zkr(dir, c.args, c.without_zk_connect);
    EXPECT_EQ(ran.code, 64) << "zkr " << shown << "\n" << ran.err;
    EXPECT_NE(ran.err.find(c.says), std::string::npos)
        << "zkr " << shown << ": stderr does not say '" << c.says << "':\n"
        << ran.err;
    EXPECT_TRUE(ran.out.empty()) << "zkr " << shown << " wrote on stdout:\n" << ran.out;
  }
}

TEST(ZkrCliUsage, UnreachableEnsembleFailsAtTheConnectDeadline) {
  TempDir dir;
  // Nothing listens on port 1 of the loopback: connections are refused.
  const std::vector<std::vector<std::string>> runs{{"lock", "/zkr-cli-unreachable", "--", "true"},
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
    // Ignoring the flag would take the default, 15 s: 5 s leaves room for a
    // slow start on a busy host and still fails that.
    EXPECT_LT(took, 5s) << "the deadline was 1s";
  }
}

// ---- On the live ensemble.

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
    const auto ran = run_zkr(dir_, {"lock", path, "--connect", test::connect_string(),
                                    "--connect-timeout", kConnectTimeout, "--timeout", timeout,
                                    "--", "/bin/sh", "-c", "touch " + quoted(marker)});
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
                           "trap 'kill -KILL $! 2>/dev/null; echo got-term > " + ev +
                               "; exit 0' TERM; "
                               "echo started > " +
                               ev + "; sleep 300 & wait",
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
      dir_, std::vector<std::string>{"lock", path, "--connect", server, "--connect-timeout",
                                     kConnectTimeout, "--session-timeout", "4s", "--kill-after",
                                     "20s", "--", "/bin/sh", "-c",
                                     "trap 'kill -KILL $! 2>/dev/null; echo got-term > " + ev +
                                         "; exit 0' TERM; "
                                         "echo started > " +
                                         ev + "; sleep 300 & wait"});
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
  auto holder =
      start_lock(path, "trap '' TERM; echo started > " + quoted(events.path()) + "; exec sleep 300",
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
  const auto missing =
      run_zkr(dir_, {"lock", path, "--connect", test::connect_string(), "--connect-timeout",
                     kConnectTimeout, "--", "zkr-cli-test-no-such-command", "arg"});
  EXPECT_EQ(missing.code, 127) << missing.err;
  EXPECT_NE(missing.err.find("zkr-cli-test-no-such-command: command not found"), std::string::npos)
      << missing.err;
  EXPECT_TRUE(queue_reaches(path, 0)) << "the lock was not released";

  const auto not_executable = dir_ / "not-executable";
  std::ofstream(not_executable) << "#!/bin/sh\nexit 0\n";  // mode 0644
  const auto denied =
      run_zkr(dir_, {"lock", path, "--connect", test::connect_string(), "--connect-timeout",
                     kConnectTimeout, "--", not_executable.string()});
  EXPECT_EQ(denied.code, 126) << denied.err;
  EXPECT_TRUE(queue_reaches(path, 0)) << "the lock was not released";
}

// Another lock protocol on the path (Curator's semaphore leaves "leases"
// there) would not exclude us: zkr refuses with a code of its own, CMD not
// run, no node left.
TEST_F(ZkrCliTest, PathOfAnotherLockProtocolIsRefusedWithItsOwnCode) {
  const std::string path = root_ + "/shared-with-java";
  keeper().create(path);
  keeper().create(path + "/leases");
  const auto marker = dir_ / "ran";
  const auto status = dir_ / "status";
  const auto ran =
      run_zkr(dir_, {"lock", path, "--connect", test::connect_string(), "--connect-timeout",
                     kConnectTimeout, "--status-file", status.string(), "--", "/bin/sh", "-c",
                     "touch " + quoted(marker)});
  EXPECT_EQ(ran.code, 78) << ran.err;
  EXPECT_NE(ran.err.find("foreign_lock_protocol at " + path), std::string::npos) << ran.err;
  EXPECT_NE(ran.err.find("InterProcessSemaphoreV2/SemaphoreMutex of Curator or zkrecipes' Curator "
                         "layout (children leases/)"),
            std::string::npos)
      << ran.err;
  EXPECT_EQ(read_file(status), "{\"outcome\":\"error\",\"exit\":78}\n");
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the command ran";
  keeper().sync(path);  // zkr's delete was answered, maybe by another server
  EXPECT_EQ(keeper().children(path).names, std::vector<std::string>{"leases"})
      << "our node was left behind";
}

// kazoo's default lock on the path does not see ours: refused, CMD not run,
// and the error says how to share the path.
TEST_F(ZkrCliTest, KazooLockOnThePathIsRefusedWithoutWithKazoo) {
  if (const auto& why = test::kazoo_peer_skip_reason(); !why.empty())
    GTEST_SKIP() << "no kazoo peer: " << why;
  const std::string path = root_ + "/shared-with-python";
  test::KazooPeer py(test::connect_string());
  ASSERT_EQ(py.reply(), "ready");
  const auto node = py.call("acquire lock " + path + " 60000 0");
  ASSERT_TRUE(node.starts_with("acquired " + path + "/")) << node;
  const auto marker = dir_ / "ran";
  const auto ran =
      run_zkr(dir_, {"lock", path, "--connect", test::connect_string(), "--connect-timeout",
                     kConnectTimeout, "--", "/bin/sh", "-c", "touch " + quoted(marker)});
  EXPECT_EQ(ran.code, 78) << ran.err;
  EXPECT_NE(ran.err.find("a lock of kazoo (Python)"), std::string::npos) << ran.err;
  EXPECT_NE(ran.err.find("extra_lock_patterns=[\"-lock-\"]"), std::string::npos) << ran.err;
  EXPECT_NE(ran.err.find("--with-kazoo"), std::string::npos) << ran.err;
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the command ran beside kazoo";
  keeper().sync(path);
  EXPECT_EQ(keeper().children(path).names.size(), 1u) << "our node was left behind";
  EXPECT_EQ(py.call("release"), "released");
}

// With --with-kazoo, kazoo's locks made to wait for ours are contenders:
// zkr waits for kazoo's writer, runs once it has gone, and shares with
// kazoo's reader under --read.
TEST_F(ZkrCliTest, WithKazooQueuesWithKazoosLocks) {
  if (const auto& why = test::kazoo_peer_skip_reason(); !why.empty())
    GTEST_SKIP() << "no kazoo peer: " << why;
  const std::string path = root_ + "/queued-with-python";
  test::KazooPeer py(test::connect_string());
  ASSERT_EQ(py.reply(), "ready");
  const auto marker = dir_ / "ran";
  const std::vector<std::string> head{"lock",
                                      path,
                                      "--with-kazoo",
                                      "--connect",
                                      test::connect_string(),
                                      "--connect-timeout",
                                      kConnectTimeout};
  const auto with = [&](std::vector<std::string> more) {
    auto args = head;
    args.insert(args.end(), more.begin(), more.end());
    for (const auto& word :
         std::vector<std::string>{"--", "/bin/sh", "-c", "touch " + quoted(marker)})
      args.push_back(word);
    return args;
  };
  for (const std::string kind : {"lock", "write"}) {
    std::filesystem::remove(marker);
    ASSERT_TRUE(py.call("acquire " + kind + " " + path + " 60000 1").starts_with("acquired "));
    const auto waited =
        run_zkr(dir_, with(kind == "lock" ? std::vector<std::string>{"--timeout", "1s"}
                                          : std::vector<std::string>{"--read", "--timeout", "1s"}));
    EXPECT_EQ(waited.code, 75) << kind << ": " << waited.err;
    EXPECT_FALSE(std::filesystem::exists(marker)) << "ran beside kazoo's " << kind;
    EXPECT_EQ(py.call("release"), "released");
    const auto ran = run_zkr(dir_, with({}));
    EXPECT_EQ(ran.code, 0) << ran.err;
    EXPECT_TRUE(std::filesystem::exists(marker));
  }
  std::filesystem::remove(marker);
  ASSERT_TRUE(py.call("acquire read " + path + " 60000 1").starts_with("acquired "));
  const auto shared = run_zkr(dir_, with({"--read", "--timeout", "30s"}));
  EXPECT_EQ(shared.code, 0) << shared.err;
  EXPECT_TRUE(std::filesystem::exists(marker)) << "a reader did not share with kazoo's";
  EXPECT_EQ(py.call("release"), "released");
  EXPECT_EQ(run_zkr(dir_, with({"--semaphore", "2"})).code, 64);
}

TEST_F(ZkrCliTest, SignalsToZkrArePassedOnToTheCommand) {
  const std::string path = root_ + "/signals";
  // zkr waits for the whole group, so the trap must end the background sleep
  // for sure: it may not have exec'd yet, and still catch a TERM with the
  // shell's handler (and a background job ignores SIGINT).
  for (const int signo : {SIGTERM, SIGHUP, SIGINT}) {
    Fifo events(dir_ / ("events-" + std::to_string(signo)));
    const auto ev = quoted(events.path());
    const std::string name = signo == SIGTERM ? "TERM" : signo == SIGHUP ? "HUP" : "INT";
    auto holder =
        start_lock(path, "trap 'kill -KILL $! 2>/dev/null; echo got-" + name + " > " + ev +
                             "; exit 7' " + name + "; echo started > " + ev + "; sleep 300 & wait");
    ASSERT_EQ(events.read_line(), "started") << holder->err();
    holder->signal(signo);
    EXPECT_EQ(events.read_line(), "got-" + name) << holder->err();
    // The command handled it: its own code comes back, not zkr's.
    EXPECT_EQ(holder->wait(), 7) << holder->err();
    EXPECT_TRUE(queue_reaches(path, 0));
  }
}

// The signal stops the queued acquire, which deletes our node itself (the
// session stays open until zkr exits, as -v's log shows), for a mutex and a
// read/write lock's write side alike.
TEST_F(ZkrCliTest, SignalWhileQueuedLeavesTheQueueAndNoNode) {
  for (const std::vector<std::string>& kind :
       {std::vector<std::string>{}, std::vector<std::string>{"--write"}}) {
    const std::string path = root_ + "/queued" + (kind.empty() ? "" : "-write");
    Fifo gate(dir_ / ("gate" + std::to_string(kind.size())));
    auto holder = start_lock(path, "read go < " + quoted(gate.path()), kind);
    ASSERT_TRUE(queue_reaches(path, 1)) << holder->err();
    const auto marker = dir_ / "ran";
    auto options = kind;
    options.push_back("-v");
    auto waiter = start_lock(path, "touch " + quoted(marker), options);
    ASSERT_TRUE(queue_reaches(path, 2)) << waiter->err();
    waiter->signal(SIGINT);
    EXPECT_EQ(waiter->wait(), 128 + SIGINT) << waiter->err();
    const std::string said = waiter->err();
    EXPECT_NE(said.find("while queued: leaving the queue"), std::string::npos) << said;
    EXPECT_EQ(said.find("closing the session"), std::string::npos) << said;
    EXPECT_NE(said.find("interrupted by signal 2 while waiting for " + path), std::string::npos)
        << said;
    EXPECT_TRUE(queue_reaches(path, 1)) << "the interrupted waiter left its node";
    gate.write_line("go");
    EXPECT_EQ(holder->wait(), 0) << holder->err();
    EXPECT_FALSE(std::filesystem::exists(marker));
    EXPECT_TRUE(queue_reaches(path, 0));
  }
}

TEST_F(ZkrCliTest, LsShowsHolderAndWaiters) {
  const std::string path = root_ + "/listed";
  Fifo gate(dir_ / "gate");
  auto holder = start_lock(path, "read go < " + quoted(gate.path()), {"--holder", "holder-A"});
  ASSERT_TRUE(queue_reaches(path, 1)) << holder->err();
  auto second = start_lock(path, "true", {"--holder", "waiter-B"});
  ASSERT_TRUE(queue_reaches(path, 2)) << second->err();
  // Anyone's bytes: a quote, a backslash, and a byte that is not UTF-8.
  const std::string odd_holder = "waiter-\"C\" \\ \xff";
  auto third = start_lock(path, "true", {"--holder", odd_holder});
  ASSERT_TRUE(queue_reaches(path, 3)) << third->err();

  const auto table = run_zkr(dir_, {"ls", root_, "--connect", test::connect_string(),
                                    "--connect-timeout", kConnectTimeout});
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

  const auto json = run_zkr(dir_, {"ls", root_, "--json", "--connect", test::connect_string(),
                                   "--connect-timeout", kConnectTimeout});
  EXPECT_EQ(json.code, 0) << json.err;
  const auto objects = lines_of(json.out);
  ASSERT_EQ(objects.size(), 1u) << json.out;
  // Every line parses, whatever the holder texts hold.
  const auto lock = nlohmann::json::parse(objects[0], nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(lock.is_object()) << objects[0];
  EXPECT_EQ(lock.value("path", ""), path);
  EXPECT_EQ(lock.value("holder", ""), "holder-A");
  EXPECT_EQ(lock.value("kind", ""), "mutex");
  EXPECT_EQ(lock.value("holders", -1), 1);
  EXPECT_EQ(lock.value("waiters", -1), 2);
  EXPECT_GT(lock.value("fencing_token", std::int64_t{0}), 0);
  ASSERT_TRUE(lock.contains("queue") && lock["queue"].is_array() && lock["queue"].size() == 3u)
      << objects[0];
  EXPECT_EQ(lock["queue"][1].value("holder", ""), "waiter-B");
  EXPECT_EQ(lock["queue"][2].value("holder", ""), "waiter-\"C\" \\ \xef\xbf\xbd")  // U+FFFD
      << objects[0];
  EXPECT_TRUE(lock["queue"][2].value("session", "").starts_with("0x")) << objects[0];

  gate.write_line("go");
  EXPECT_EQ(holder->wait(), 0) << holder->err();
  EXPECT_EQ(second->wait(), 0) << second->err();
  EXPECT_EQ(third->wait(), 0) << third->err();
}

// --read and --write: one read/write lock. Readers run together, a writer
// alone, and a reader that comes after a queued writer runs after it; the
// mutex refuses the path; `zkr ls` shows who reads.
TEST_F(ZkrCliTest, ReadersRunTogetherWritersAloneAndLsShowsThem) {
  const std::string path = root_ + "/rw";
  const auto log = dir_ / "log";
  Fifo events(dir_ / "events");
  Fifo gate_a(dir_ / "gate-a"), gate_b(dir_ / "gate-b");
  const auto ev = quoted(events.path());
  auto reader_a =
      start_lock(path, "echo started-A > " + ev + "; read go < " + quoted(gate_a.path()),
                 {"--read", "--holder", "reader-A"});
  ASSERT_TRUE(queue_reaches(path, 1)) << reader_a->err();
  auto reader_b =
      start_lock(path, "echo started-B > " + ev + "; read go < " + quoted(gate_b.path()),
                 {"--read", "--holder", "reader-B"});
  // Both commands run at once: neither ends before both have started.
  std::set<std::string> started{events.read_line().value_or(""), events.read_line().value_or("")};
  EXPECT_EQ(started, (std::set<std::string>{"started-A", "started-B"})) << reader_b->err();

  const auto marker = dir_ / "ran";
  const std::vector<std::string> connect{"--connect", test::connect_string(), "--connect-timeout",
                                         kConnectTimeout};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.begin() + 2, connect.begin(), connect.end());
    return run_zkr(dir_, args);
  };
  const auto writer_now = with({"lock", path, "--write", "--timeout", "0", "--", "/bin/sh", "-c",
                                "touch " + quoted(marker)});
  EXPECT_EQ(writer_now.code, 75) << writer_now.err;
  const auto mutex = with({"lock", path, "--", "/bin/sh", "-c", "touch " + quoted(marker)});
  EXPECT_EQ(mutex.code, 78) << mutex.err;
  EXPECT_NE(mutex.err.find("a read/write lock"), std::string::npos) << mutex.err;
  const auto both = with({"lock", path, "--read", "--write", "--", "true"});
  EXPECT_EQ(both.code, 64) << both.err;
  EXPECT_FALSE(std::filesystem::exists(marker)) << "a command ran beside the readers";
  EXPECT_TRUE(queue_reaches(path, 2));

  auto writer = start_lock(path, "echo W >> " + quoted(log), {"--write", "--holder", "writer-W"});
  ASSERT_TRUE(queue_reaches(path, 3)) << writer->err();
  auto late_reader =
      start_lock(path, "echo C >> " + quoted(log), {"--read", "--holder", "reader-C"});
  ASSERT_TRUE(queue_reaches(path, 4)) << late_reader->err();

  const auto table = with({"ls", root_});
  EXPECT_EQ(table.code, 0) << table.err;
  const auto lines = lines_of(table.out);
  ASSERT_EQ(lines.size(), 2u) << table.out;
  EXPECT_EQ(words_of(lines[1]),
            (std::vector<std::string>{path, "read:", words_of(lines[1])[2], "(+1", "readers)", "2",
                                      words_of(lines[1]).back()}))
      << lines[1];
  const auto first_reader = words_of(lines[1])[2];
  EXPECT_TRUE(first_reader == "reader-A" || first_reader == "reader-B") << lines[1];
  const auto json = with({"ls", root_, "--json"});
  for (const std::string field : {"\"kind\":\"read\"", "\"holders\":2", "\"waiters\":2",
                                  "\"kind\":\"write\",\"holder\":\"writer-W\""})
    EXPECT_NE(json.out.find(field), std::string::npos) << field << " not in " << json.out;

  gate_a.write_line("go");
  gate_b.write_line("go");
  EXPECT_EQ(reader_a->wait(), 0) << reader_a->err();
  EXPECT_EQ(reader_b->wait(), 0) << reader_b->err();
  EXPECT_EQ(writer->wait(), 0) << writer->err();
  EXPECT_EQ(late_reader->wait(), 0) << late_reader->err();
  EXPECT_EQ(lines_of(read_file(log)), (std::vector<std::string>{"W", "C"}));
  EXPECT_TRUE(queue_reaches(path, 0));
}

// --semaphore N: up to N commands at once, the next one waits; the mutex
// refuses the path.
TEST_F(ZkrCliTest, SemaphoreRunsUpToNCommandsAtOnce) {
  const std::string path = root_ + "/pool";
  Fifo events(dir_ / "events");
  Fifo gate_a(dir_ / "gate-a"), gate_b(dir_ / "gate-b");
  const auto ev = quoted(events.path());
  auto a = start_lock(path, "echo started-A > " + ev + "; read go < " + quoted(gate_a.path()),
                      {"--semaphore", "2"});
  auto b = start_lock(path, "echo started-B > " + ev + "; read go < " + quoted(gate_b.path()),
                      {"--semaphore", "2"});
  std::set<std::string> started{events.read_line().value_or(""), events.read_line().value_or("")};
  EXPECT_EQ(started, (std::set<std::string>{"started-A", "started-B"})) << a->err() << b->err();
  const auto marker = dir_ / "ran";
  const std::vector<std::string> connect{"--connect", test::connect_string(), "--connect-timeout",
                                         kConnectTimeout};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.begin() + 2, connect.begin(), connect.end());
    return run_zkr(dir_, args);
  };
  const auto third = with({"lock", path, "--semaphore", "2", "--timeout", "0", "--", "/bin/sh",
                           "-c", "touch " + quoted(marker)});
  EXPECT_EQ(third.code, 75) << third.err;
  const auto mutex = with({"lock", path, "--", "/bin/sh", "-c", "touch " + quoted(marker)});
  EXPECT_EQ(mutex.code, 78) << mutex.err;
  for (const auto& bad : {std::vector<std::string>{"--semaphore", "0"},
                          std::vector<std::string>{"--semaphore", "2", "--read"}}) {
    std::vector<std::string> args{"lock", path};
    args.insert(args.end(), bad.begin(), bad.end());
    args.insert(args.end(), {"--", "true"});
    EXPECT_EQ(with(args).code, 64);
  }
  EXPECT_FALSE(std::filesystem::exists(marker)) << "a third command ran beside two";
  // zkr ls: the leases, both held.
  const auto table = with({"ls", root_});
  EXPECT_EQ(table.code, 0) << table.err;
  bool listed = false;
  for (const auto& line : lines_of(table.out)) {
    const auto row = words_of(line);
    if (row.empty() || row[0] != path + "/leases") continue;
    listed = true;
    ASSERT_GE(row.size(), 6u) << line;
    EXPECT_EQ(row[1], "lease:") << line;
    EXPECT_EQ(row[row.size() - 4], "(+1") << line;
    EXPECT_EQ(row[row.size() - 3], "leases)") << line;
    EXPECT_EQ(row[row.size() - 2], "0") << line;  // no waiters among the leases
  }
  EXPECT_TRUE(listed) << table.out;
  auto waiting = start_lock(path, "echo started-C > " + ev, {"--semaphore", "2"});
  // Waiting, as the layout shows it: its grant node made, and still holding
  // the internal mutex, which a grant lets go.
  ASSERT_TRUE(queue_reaches(path + "/leases", 3)) << waiting->err();
  ASSERT_TRUE(queue_reaches(path + "/locks", 1)) << waiting->err();
  gate_a.write_line("go");
  EXPECT_EQ(events.read_line(), "started-C") << waiting->err();
  EXPECT_EQ(a->wait(), 0) << a->err();
  EXPECT_EQ(waiting->wait(), 0) << waiting->err();
  gate_b.write_line("go");
  EXPECT_EQ(b->wait(), 0) << b->err();
  EXPECT_TRUE(test::wait_children(
      keeper(), path + "/leases", [](const auto& n) { return n.empty(); }, kWait));
}

TEST_F(ZkrCliTest, LsRefusesADirectoryTooLargeToListAndSaysHowToProceed) {
  for (const std::string name : {"a", "b", "c"}) keeper().create(root_ + "/" + name);
  const auto refused =
      run_zkr(dir_, {"ls", root_, "--max-children", "2", "--connect", test::connect_string(),
                     "--connect-timeout", kConnectTimeout});
  EXPECT_EQ(refused.code, 65) << refused.err;
  EXPECT_NE(refused.err.find(root_ + " has 3 children"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--max-children"), std::string::npos) << refused.err;

  const auto allowed =
      run_zkr(dir_, {"ls", root_, "--max-children", "3", "--connect", test::connect_string(),
                     "--connect-timeout", kConnectTimeout});
  EXPECT_EQ(allowed.code, 0) << allowed.err;
  EXPECT_NE(allowed.err.find("no locks under"), std::string::npos) << allowed.err;
}

TEST_F(ZkrCliTest, MissingRootIsReportedAsSuch) {
  for (const std::string verb : {"ls", "cleanup"}) {
    const auto ran = run_zkr(dir_, {verb, root_ + "/not-there", "--connect", test::connect_string(),
                                    "--connect-timeout", kConnectTimeout});
    EXPECT_EQ(ran.code, 66) << verb << ": " << ran.err;
    EXPECT_NE(ran.err.find("no such path: " + root_ + "/not-there"), std::string::npos) << ran.err;
  }
}

TEST_F(ZkrCliTest, CleanupDryRunListsThenCleanupRemovesOnlyWhatIsUnused) {
  // Leftovers of locks (marked by the library), beside another application's
  // empty nodes, which are never ours to remove.
  const std::string mark(kLockDirectoryMark);
  const std::vector<std::string> empties{root_ + "/empty-1", root_ + "/empty-2",
                                         root_ + "/nested/empty-3"};
  keeper().create(root_ + "/nested", mark);
  for (const auto& p : empties) keeper().create(p, mark);
  const std::vector<std::string> foreign{root_ + "/brokers/ids", root_ + "/admin/delete_topics",
                                         root_ + "/isr_change_notification"};
  for (const auto& p : foreign) keeper().create_parents(p + "/x");
  keeper().create(root_ + "/config", "keep me");
  const std::string held = root_ + "/held";
  Fifo gate(dir_ / "gate");
  auto holder = start_lock(held, "read go < " + quoted(gate.path()));
  ASSERT_TRUE(queue_reaches(held, 1)) << holder->err();
  const auto held_node = nodes_of(held).at(0);

  const auto dry =
      run_zkr(dir_, {"cleanup", root_, "--dry-run", "--connect", test::connect_string()});
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

  const auto swept = run_zkr(dir_, {"cleanup", root_, "--connect", test::connect_string(),
                                    "--connect-timeout", kConnectTimeout});
  EXPECT_EQ(swept.code, 0) << swept.err;
  for (const auto& p : empties) {
    EXPECT_FALSE(exists(p)) << p << " was not removed";
    EXPECT_NE(swept.out.find(p + "\n"), std::string::npos) << p << " not reported:\n" << swept.out;
  }
  EXPECT_NE(swept.err.find("removed "), std::string::npos) << swept.err;
  EXPECT_TRUE(exists(join_path(held, held_node))) << "the held lock's node was removed";
  EXPECT_TRUE(exists(root_)) << "the root was removed without --remove-root";
  for (const auto& p : foreign)
    EXPECT_TRUE(exists(p)) << "another application's " << p << " was removed";
  EXPECT_TRUE(exists(root_ + "/config"));

  // Not even asked to sweep the whole tree does it touch the server's own.
  const auto everything =
      run_zkr(dir_, {"cleanup", "/", "--dry-run", "--connect", test::connect_string()});
  EXPECT_EQ(everything.code, 0) << everything.err;
  EXPECT_EQ(everything.out.find("/zookeeper"), std::string::npos) << everything.out;
  for (const auto& p : foreign)
    EXPECT_EQ(everything.out.find(p + "\n"), std::string::npos) << p << " listed:\n"
                                                                << everything.out;

  gate.write_line("go");
  EXPECT_EQ(holder->wait(), 0) << holder->err();
}

// ---- zkr lock holds the lock for the whole command and everything it starts.

// The script of a command that starts a background job and reports
// "started SHELL_PID JOB_PID" on `ev` (a quoted FIFO path).
std::string shell_with_background_job(const std::string& ev) {
  return "sleep 300 & echo started $$ $! > " + ev + "; wait";
}

TEST_F(ZkrCliTest, SigkillOfZkrKillsTheCommandAndItsChildren) {
  const std::string path = root_ + "/zkr-killed";
  Fifo events(dir_ / "events");
  auto holder = start_lock(path, shell_with_background_job(quoted(events.path())),
                           {"--session-timeout", "4s"});
  const auto pids = pids_after_word(events.read_line());
  ASSERT_EQ(pids.size(), 2u) << holder->err();
  const Pidfd shell(pids[0]), job(pids[1]);
  ASSERT_TRUE(shell.valid() && job.valid());
  holder->signal(SIGKILL);
  EXPECT_EQ(holder->wait(), 128 + SIGKILL);
  // Nobody is left to signal them but the kernel or a process zkr set up.
  EXPECT_TRUE(shell.exited_within(kWait)) << "the command outlived zkr";
  EXPECT_TRUE(job.exited_within(kWait)) << "the command's background job outlived zkr";
}

TEST_F(ZkrCliTest, SignalZkrDoesNotPassOnStillLeavesNoCommandRunning) {
  // zkr handles neither: each kills it, as it would kill any program.
  for (const int signo : {SIGALRM, SIGPIPE}) {
    const std::string path = root_ + "/unhandled-" + std::to_string(signo);
    Fifo events(dir_ / ("events-" + std::to_string(signo)));
    auto holder = start_lock(path, shell_with_background_job(quoted(events.path())),
                             {"--session-timeout", "4s"});
    const auto pids = pids_after_word(events.read_line());
    ASSERT_EQ(pids.size(), 2u) << holder->err();
    const Pidfd shell(pids[0]), job(pids[1]);
    ASSERT_TRUE(shell.valid() && job.valid());
    holder->signal(signo);
    EXPECT_EQ(holder->wait(), 128 + signo) << holder->err();
    EXPECT_TRUE(shell.exited_within(kWait)) << "signal " << signo << ": the command outlived zkr";
    EXPECT_TRUE(job.exited_within(kWait)) << "signal " << signo << ": its job outlived zkr";
  }
}

TEST_F(ZkrCliTest, LostLockEndsTheWholeGroupBeforeTheNextWaiterRuns) {
  ZKR_REQUIRE_SERVER_FAULTS();
  const std::string path = root_ + "/group-lost";
  Fifo events(dir_ / "events");
  // The holder talks to server 1 only, which the test freezes: its grant
  // turns lost (suspended), and its session expires on the other servers a
  // few seconds later, which grants the lock to the waiter. The shell dies of
  // SIGTERM at once; its background job must not outlive it.
  const std::string server1 = "127.0.0.1:" + test::ensemble("port 1");
  const std::string others =
      "127.0.0.1:" + test::ensemble("port 2") + ",127.0.0.1:" + test::ensemble("port 3");
  auto holder = std::make_unique<Zkr>(
      dir_, std::vector<std::string>{"lock", path, "--connect", server1, "--connect-timeout",
                                     kConnectTimeout, "--session-timeout", "4s", "--kill-after",
                                     "20s", "--", "/bin/sh", "-c",
                                     shell_with_background_job(quoted(events.path()))});
  const auto pids = pids_after_word(events.read_line());
  ASSERT_EQ(pids.size(), 2u) << holder->err();
  const Pidfd shell(pids[0]), job(pids[1]);
  ASSERT_TRUE(shell.valid() && job.valid());
  Fifo granted(dir_ / "granted");
  Fifo go(dir_ / "go");
  auto waiter = std::make_unique<Zkr>(
      dir_,
      std::vector<std::string>{
          "lock", path, "--connect", others, "--connect-timeout", kConnectTimeout, "--", "/bin/sh",
          "-c", "echo granted > " + quoted(granted.path()) + "; read x < " + quoted(go.path())});
  ASSERT_TRUE(queue_reaches(path, 2)) << waiter->err();

  test::Repair thaw("thaw 1");
  test::ensemble("freeze 1");
  ASSERT_EQ(granted.read_line(), "granted") << holder->err() << waiter->err();
  // The waiter runs now: nothing of the holder's group may run beside it.
  EXPECT_TRUE(shell.exited_within(0ms)) << "the holder's shell runs beside the next holder";
  EXPECT_TRUE(job.exited_within(0ms)) << "the holder's background job runs beside the next holder";
  go.write_line("go");
  EXPECT_EQ(waiter->wait(), 0) << waiter->err();
  EXPECT_EQ(holder->wait(), 79) << holder->err();
  thaw.now();
  ClientOptions options;
  options.connect_string = server1;
  Client again(options);
  EXPECT_TRUE(again.block_until_connected(kWait)) << "server 1 did not come back";
}

TEST_F(ZkrCliTest, KillAfterReachesAGrandchildThatIgnoresSigterm) {
  const std::string path = root_ + "/stubborn-grandchild";
  Fifo events(dir_ / "events");
  // The grandchild ignores SIGTERM (an ignored signal stays ignored across
  // exec) and says so; its parent, the shell, dies of SIGTERM.
  const std::string script =
      "sh -c 'trap \"\" TERM; echo ready $$ > " + events.path() + "; exec sleep 300' & wait";
  auto holder = start_lock(path, script, {"--kill-after", "500ms"});
  const auto pids = pids_after_word(events.read_line());
  ASSERT_EQ(pids.size(), 1u) << holder->err();
  const Pidfd grandchild(pids[0]);
  ASSERT_TRUE(grandchild.valid());
  ASSERT_TRUE(queue_reaches(path, 1));  // our server has seen the node too
  const auto nodes = nodes_of(path);
  ASSERT_EQ(nodes.size(), 1u);
  const auto deleted_at = Clock::now();
  keeper().remove(join_path(path, nodes[0]));
  EXPECT_EQ(holder->wait(), 79) << holder->err();
  EXPECT_GE(Clock::now() - deleted_at, 500ms) << "zkr ended before the grace period";
  EXPECT_NE(holder->err().find("sending SIGKILL"), std::string::npos) << holder->err();
  // zkr waits for the whole group before it releases and exits.
  EXPECT_TRUE(grandchild.exited_within(0ms)) << "the grandchild outlived zkr";
}

TEST_F(ZkrCliTest, CommandInheritsNoDescriptorOfZkr) {
  const std::string path = root_ + "/fds";
  // ls runs in a child of the shell (it is not the last command, which the
  // shell would exec), so it lists the shell's descriptors: those the command
  // was started with. No redirection: the shell would keep a copy of stdout.
  auto zkr = start_lock(path, "ls /proc/$$/fd; true");
  EXPECT_EQ(zkr->wait(), 0) << zkr->err();
  EXPECT_EQ(lines_of(zkr->out()), (std::vector<std::string>{"0", "1", "2"}))
      << "zkr's descriptors (its ZooKeeper socket, pipes) leaked into the command";
}

TEST_F(ZkrCliTest, StatusFileTellsZkrsOutcomeApartFromTheCommandsCode) {
  const std::string path = root_ + "/status";
  const auto status = dir_ / "status.json";
  // The command's own 79 and 75 look like zkr's "lost" and "timeout"...
  for (const int code : {79, 75}) {
    auto zkr = start_lock(path, "exit " + std::to_string(code), {"--status-file", status.string()});
    EXPECT_EQ(zkr->wait(), code) << zkr->err();
    // ...and the status file tells them apart.
    EXPECT_EQ(read_file(status),
              "{\"outcome\":\"held_throughout\",\"exit\":" + std::to_string(code) +
                  ",\"command_status\":" + std::to_string(code) + "}\n");
  }

  Fifo events(dir_ / "events");
  auto holder = start_lock(path, "echo started > " + quoted(events.path()) + "; exec sleep 300",
                           {"--status-file", status.string()});
  ASSERT_EQ(events.read_line(), "started") << holder->err();
  ASSERT_TRUE(queue_reaches(path, 1));
  // The file is emptied at the start: a stale line cannot pass for this run's.
  EXPECT_EQ(read_file(status), "");
  const auto timeout_status = dir_ / "timeout.json";
  const auto timed_out = run_zkr(dir_, {"lock", path, "--connect", test::connect_string(),
                                        "--connect-timeout", kConnectTimeout, "--timeout", "0",
                                        "--status-file", timeout_status.string(), "--", "true"});
  EXPECT_EQ(timed_out.code, 75) << timed_out.err;
  EXPECT_EQ(read_file(timeout_status), "{\"outcome\":\"timeout\",\"exit\":75}\n");

  keeper().remove(join_path(path, nodes_of(path).at(0)));
  EXPECT_EQ(holder->wait(), 79) << holder->err();
  EXPECT_EQ(read_file(status), "{\"outcome\":\"lock_lost\",\"exit\":79,\"command_status\":" +
                                   std::to_string(128 + SIGTERM) + "}\n");

  const auto missing = run_zkr(dir_, {"lock", path, "--connect", test::connect_string(),
                                      "--connect-timeout", kConnectTimeout, "--status-file",
                                      status.string(), "--", "zkr-cli-test-no-such-command"});
  EXPECT_EQ(missing.code, 127) << missing.err;
  EXPECT_EQ(read_file(status), "{\"outcome\":\"command_not_run\",\"exit\":127}\n");

  const auto unreachable =
      run_zkr(dir_, {"lock", path, "--connect", "127.0.0.1:1", "--connect-timeout", "1s",
                     "--status-file", status.string(), "--", "true"});
  EXPECT_EQ(unreachable.code, 69) << unreachable.err;
  EXPECT_EQ(read_file(status), "{\"outcome\":\"error\",\"exit\":69}\n");

  const auto help = run_zkr(dir_, {"lock", "--help"});
  EXPECT_NE(help.out.find("--status-file"), std::string::npos) << help.out;
}

TEST_F(ZkrCliTest, CommandsCodeComesBackOnlyIfTheLockIsConfirmedAfterItEnds) {
  // The holder's node is deleted while the command runs, in a way the
  // library does not notice today (a data change first: see the test below).
  // Whether zkr hears of it (and ends the command) or only finds out when it
  // checks after the command, it must not pass the command's 3 off as "held
  // throughout".
  const std::string path = root_ + "/unnoticed";
  const auto status = dir_ / "status.json";
  Fifo events(dir_ / "events");
  Fifo gate(dir_ / "gate");
  auto holder = start_lock(
      path,
      "echo started > " + quoted(events.path()) + "; read x < " + quoted(gate.path()) + "; exit 3",
      {"--status-file", status.string()});
  ASSERT_EQ(events.read_line(), "started") << holder->err();
  ASSERT_TRUE(queue_reaches(path, 1));
  const auto node = join_path(path, nodes_of(path).at(0));
  keeper().set(node, "__REVOKE__");
  keeper().remove(node);
  gate.write_line("go");
  EXPECT_EQ(holder->wait(), 79) << holder->err();
  EXPECT_TRUE(read_file(status).starts_with("{\"outcome\":\"lock_lost\",\"exit\":79,"))
      << read_file(status);
}

TEST_F(ZkrCliTest, HolderTextWithControlCharactersOrTooLongIsRefusedBeforeAnythingIsSent) {
  const std::string path = root_ + "/holder-text";
  const std::vector<std::pair<std::string, std::string>> cases{
      {"two\nlines", "--holder: TEXT has a control character (0x0a) at byte 3"},
      {"tab\there", "--holder: TEXT has a control character (0x09) at byte 3"},
      {"del\x7f", "--holder: TEXT has a control character (0x7f) at byte 3"},
      {std::string(1025, 'h'), "--holder: TEXT is 1025 bytes long, more than 1024"},
  };
  const auto marker = dir_ / "ran";
  for (const auto& [holder, says] : cases) {
    const auto ran = run_zkr(dir_, {"lock", path, "--connect", test::connect_string(),
                                    "--connect-timeout", kConnectTimeout, "--holder", holder, "--",
                                    "/bin/sh", "-c", "touch " + quoted(marker)});
    EXPECT_EQ(ran.code, 64) << says << "\n" << ran.err;
    EXPECT_NE(ran.err.find(says), std::string::npos) << ran.err;
    EXPECT_FALSE(std::filesystem::exists(marker)) << says << ": the command ran";
    EXPECT_FALSE(exists(path)) << says << ": the lock directory was created";
  }
  // The longest holder allowed is taken, and shown by zkr ls.
  Fifo gate(dir_ / "gate");
  auto longest =
      start_lock(path, "read go < " + quoted(gate.path()), {"--holder", std::string(1024, 'h')});
  ASSERT_TRUE(queue_reaches(path, 1)) << longest->err();
  const auto listed = run_zkr(dir_, {"ls", path, "--connect", test::connect_string(),
                                     "--connect-timeout", kConnectTimeout});
  EXPECT_NE(listed.out.find(std::string(1024, 'h')), std::string::npos) << listed.out;
  gate.write_line("go");
  EXPECT_EQ(longest->wait(), 0) << longest->err();
}

TEST_F(ZkrCliTest, RevokedThenDeletedHolderNodeIsALostLock) {
  // Curator's revocation writes "__REVOKE__" into the holder's node; here
  // the node is then deleted too. The data change must not blind zkr to the
  // deletion (the library's watch on our own node must be set again).
  const std::string path = root_ + "/revoked";
  Fifo events(dir_ / "events");
  const auto ev = quoted(events.path());
  auto holder = start_lock(path,
                           "trap 'kill -KILL $! 2>/dev/null; echo got-term > " + ev +
                               "; exit 0' TERM; "
                               "echo started > " +
                               ev + "; sleep 12 & wait",
                           {"--kill-after", "20s"});
  ASSERT_EQ(events.read_line(), "started") << holder->err();
  ASSERT_TRUE(queue_reaches(path, 1));
  const auto node = join_path(path, nodes_of(path).at(0));
  keeper().set(node, "__REVOKE__");
  keeper().remove(node);
  // Read before the wait: the command would end by itself after 12 s.
  EXPECT_EQ(events.read_line(10s), "got-term") << "the command was not signalled";
  EXPECT_EQ(holder->wait(), 79) << holder->err();
  EXPECT_NE(holder->err().find("lost (node_deleted)"), std::string::npos) << holder->err();
}

TEST_F(ZkrCliTest, CommandStoppedOnTheTerminalIsReportedAndStillTakesSignals) {
  // Outside the terminal's foreground group, a command that reads the
  // terminal gets SIGTTIN and stops; here it stops itself the same way.
  const std::string path = root_ + "/ttin";
  Fifo events(dir_ / "events");
  auto holder = start_lock(path, "echo started > " + quoted(events.path()) + "; kill -TTIN $$");
  ASSERT_EQ(events.read_line(), "started") << holder->err();
  EXPECT_TRUE(holder->err_says("stopped on")) << holder->err();
  EXPECT_NE(holder->err().find("cannot use the terminal"), std::string::npos) << holder->err();
  // A stopped process takes only SIGKILL and SIGCONT: zkr wakes it, so that
  // the SIGTERM passed on ends it now.
  holder->signal(SIGTERM);
  EXPECT_EQ(holder->wait(), 128 + SIGTERM) << holder->err();
  EXPECT_TRUE(queue_reaches(path, 0));
}

// ---- zkr ls

TEST_F(ZkrCliTest, LsShowsALockDirectoryNamedLikeALockNodeWithItsHolder) {
  // A key that encode_key leaves as it is, and that looks like a lock node.
  const std::string path = root_ + "/job-lock-0000000042";
  Fifo gate(dir_ / "gate");
  auto holder = start_lock(path, "read go < " + quoted(gate.path()), {"--holder", "holder-A"});
  ASSERT_TRUE(queue_reaches(path, 1)) << holder->err();
  // A real orphan (a persistent lock node: no children) is still shown as one.
  const std::string stale = root_ + "/stale";
  keeper().create(stale);
  keeper().create(stale + "/_c_00000000-0000-0000-0000-000000000000-lock-0000000001", "gone-host");
  const auto table = run_zkr(dir_, {"ls", root_, "--connect", test::connect_string(),
                                    "--connect-timeout", kConnectTimeout});
  EXPECT_EQ(table.code, 0) << table.err;
  const auto lines = lines_of(table.out);
  ASSERT_EQ(lines.size(), 3u) << table.out;
  const auto row = words_of(lines[1]);
  ASSERT_EQ(row.size(), 4u) << lines[1];
  EXPECT_EQ(row[0], path) << "the directory was taken for a lock node of " << root_;
  EXPECT_EQ(row[1], "holder-A");
  EXPECT_EQ(row[2], "0");
  const auto orphan = words_of(lines[2]);
  ASSERT_GE(orphan.size(), 3u) << lines[2];
  EXPECT_EQ(orphan[0], stale);
  EXPECT_EQ(orphan[1], "(orphan)");
  EXPECT_EQ(orphan[2], "gone-host");
  gate.write_line("go");
  EXPECT_EQ(holder->wait(), 0) << holder->err();
}

// Keys named like every protocol's nodes, their directories kept after the
// release (a flat factory with remove_directory_on_release = false): our own
// marked directories, which `zkr ls` does not show as orphaned locks and
// `zkr cleanup` removes as the empty directories they are, with no lock-named
// node reported. The directories are made persistent, with the mark, before
// the locks use them (as a tool preparing them may): the containers a lock
// makes would be reaped by this ensemble within a second of going empty.
TEST_F(ZkrCliTest, LsAndCleanupTakeKeyDirectoriesNamedLikeLockNodesForDirectories) {
  const std::vector<std::string> keys{"job-lock-0000000042",   "job__READ__0000000042",
                                      "job__WRIT__0000000042", "job-lease-0000000042",
                                      "job-latch-0000000042",  "job__lock__0000000042"};
  LockOptions keep;
  keep.remove_directory_on_release = false;
  LockFactory locks(*client_, root_, LockLayout::flat(), keep);
  for (const auto& key : keys) {
    keeper().create(locks.path_for(key), std::string(kLockDirectoryMark));
    auto mutex = locks.mutex(key);
    ASSERT_TRUE(mutex->try_acquire_for(kWait)) << key;
    EXPECT_TRUE(mutex->release());
    ASSERT_TRUE(queue_reaches(locks.path_for(key), 0)) << key;
    ASSERT_TRUE(exists(locks.path_for(key))) << key << ": the directory was not kept";
  }
  const auto listed = run_zkr(dir_, {"ls", root_, "--json", "--connect", test::connect_string(),
                                     "--connect-timeout", kConnectTimeout});
  EXPECT_EQ(listed.code, 0) << listed.err;
  EXPECT_EQ(listed.out, "") << "a key directory was shown as a lock";
  const auto table = run_zkr(dir_, {"ls", root_, "--connect", test::connect_string(),
                                    "--connect-timeout", kConnectTimeout});
  EXPECT_EQ(table.code, 0) << table.err;
  EXPECT_EQ(table.out, "");
  EXPECT_NE(table.err.find("no locks under"), std::string::npos) << table.err;

  const auto dry = run_zkr(dir_, {"cleanup", root_, "--dry-run", "--connect",
                                  test::connect_string(), "--connect-timeout", kConnectTimeout});
  EXPECT_EQ(dry.code, 0) << dry.err;
  EXPECT_EQ(dry.err.find("lock-named"), std::string::npos) << dry.err;
  const auto would = lines_of(dry.out);
  for (const auto& key : keys)
    EXPECT_NE(std::find(would.begin(), would.end(), locks.path_for(key)), would.end())
        << key << " not listed:\n"
        << dry.out;
  const auto swept = run_zkr(dir_, {"cleanup", root_, "--connect", test::connect_string(),
                                    "--connect-timeout", kConnectTimeout});
  EXPECT_EQ(swept.code, 0) << swept.err;
  EXPECT_EQ(swept.err.find("lock-named"), std::string::npos) << swept.err;
  for (const auto& key : keys) EXPECT_FALSE(exists(locks.path_for(key))) << key << " was kept";
}

}  // namespace
}  // namespace zkr
