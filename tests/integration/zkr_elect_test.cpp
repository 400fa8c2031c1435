// `zkr elect`, run as a user runs it (zkr_cli_support.hpp): one leader's
// command at a time, its epoch, failover when the leader's zkr dies, a lost
// term ending the command as a lost lock does, and `zkr ls` of a latch.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "integration/zkr_cli_support.hpp"
#include "support/ensemble.hpp"
#include "zkr/client.hpp"
#include "zkr/path.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using test::cli::Fifo;
using test::cli::kConnectTimeout;
using test::cli::lines_of;
using test::cli::Pidfd;
using test::cli::quoted;
using test::cli::read_file;
using test::cli::run_zkr;
using test::cli::TempDir;
using test::cli::words_of;
using test::cli::Zkr;
using Clock = std::chrono::steady_clock;

TEST(ZkrCliElectUsage, HelpDocumentsTheVerbWithAnExample) {
  TempDir dir;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"elect", "--help"}, std::vector<std::string>{"help", "elect"}}) {
    const auto ran = run_zkr(dir, args);
    EXPECT_EQ(ran.code, 0) << ran.err;
    EXPECT_NE(ran.out.find("Usage: zkr elect PATH"), std::string::npos) << ran.out;
    EXPECT_NE(ran.out.find("one instance of this job at a time, across machines, with failover"),
              std::string::npos)
        << ran.out;
    for (const char* text :
         {"ZKR_LEADER_EPOCH", "ZKR_LEADER_PATH", "--id", "--timeout", "75", "79", "--status-file"})
      EXPECT_NE(ran.out.find(text), std::string::npos) << text << " undocumented";
  }
  EXPECT_NE(run_zkr(dir, {"--help"}).out.find("elect"), std::string::npos);
}

TEST(ZkrCliElectUsage, BadInputIsRefusedWithAClearMessage) {
  TempDir dir;
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases{
      {{"elect"}, "missing latch PATH"},
      {{"elect", "/a"}, "missing the command"},
      {{"elect", "", "--", "true"}, "invalid znode path \"\""},
      {{"elect", "relative", "--", "true"}, "invalid znode path \"relative\""},
      {{"elect", "/", "--", "true"}, "cannot be the root"},
      {{"elect", "/" + std::string(1000, 'p'), "--", "true"}, "more than"},
      {{"elect", "/a", "--id", "", "--", "true"}, "--id needs a non-empty ID"},
      {{"elect", "/a", "--id", "two\nlines", "--", "true"},
       "--id: ID has a control character (0x0a) at byte 3"},
      {{"elect", "/a", "--id", std::string(1025, 'i'), "--", "true"},
       "--id: ID is 1025 bytes long"},
      {{"elect", "/a", "--timeout", "soon", "--", "true"}, "--timeout: bad duration 'soon'"},
      {{"elect", "/a", "--frob", "--", "true"}, "unknown option --frob"},
  };
  for (const auto& c : cases) {
    std::string shown;
    for (const auto& a : c.args) shown += a + " ";
    // An ensemble nobody listens on: bad input must be refused before any
    // connection is tried.
    auto args = c.args;
    if (args.size() > 1) args.insert(args.begin() + 1, {"--connect", "127.0.0.1:1"});
    const auto ran = run_zkr(dir, args);
    EXPECT_EQ(ran.code, 64) << "zkr " << shown << "\n" << ran.err;
    EXPECT_NE(ran.err.find(c.says), std::string::npos)
        << "zkr " << shown << ": stderr does not say '" << c.says << "':\n"
        << ran.err;
  }
}

class ZkrCliElectTest : public test::cli::ZkrCliTest {
 protected:
  // `zkr elect PATH OPTIONS -- sh -c SCRIPT`, with the ensemble given explicitly.
  std::unique_ptr<Zkr> start_elect(const std::string& path, const std::string& script,
                                   const std::vector<std::string>& options = {}) {
    std::vector<std::string> args{
        "elect", path, "--connect", test::connect_string(), "--connect-timeout", kConnectTimeout};
    args.insert(args.end(), options.begin(), options.end());
    args.insert(args.end(), {"--", "/bin/sh", "-c", script});
    return std::make_unique<Zkr>(dir_, args);
  }

  // The latch's nodes in Curator's order (by the text after the last "latch-").
  std::vector<std::string> participants_of(const std::string& path) {
    auto names = nodes_of(path);
    const auto seq = [](const std::string& n) { return n.substr(n.rfind("latch-")); };
    std::sort(names.begin(), names.end(),
              [&](const std::string& a, const std::string& b) { return seq(a) < seq(b); });
    return names;
  }

  std::int64_t czxid_of(const std::string& node) {
    const auto stat = keeper().exists(node);
    if (!stat) ADD_FAILURE() << node << " does not exist";
    return stat ? stat->czxid : -1;
  }

  // "started 1234" on the events FIFO: the epoch a command was given.
  static std::int64_t epoch_in(const std::optional<std::string>& line) {
    if (!line) return -1;
    const auto words = words_of(*line);
    return words.size() == 2 && words[0] == "started" ? std::stoll(words[1]) : -1;
  }
};

TEST_F(ZkrCliElectTest, OneLeaderRunsAtATimeWithItsNodesCzxidAsEpoch) {
  const std::string path = root_ + "/one-at-a-time";
  const auto log = dir_ / "log";
  Fifo events(dir_ / "events");
  Fifo gate(dir_ / "gate");
  const auto status = dir_ / "status";
  // Each command logs start and end with its epoch around a wait for the
  // test: two at once would interleave them.
  const std::string script = "echo start $ZKR_LEADER_EPOCH $ZKR_LEADER_PATH >> " + quoted(log) +
                             "; echo started $ZKR_LEADER_EPOCH > " + quoted(events.path()) +
                             "; read go < " + quoted(gate.path()) +
                             "; echo end $ZKR_LEADER_EPOCH >> " + quoted(log);
  auto a = start_elect(path, script, {"--id", "a", "--status-file", status.string()});
  const auto first = epoch_in(events.read_line());
  ASSERT_GT(first, 0) << a->err();
  ASSERT_TRUE(queue_reaches(path, 1));
  EXPECT_EQ(first, czxid_of(join_path(path, participants_of(path).at(0))))
      << "ZKR_LEADER_EPOCH is not the czxid of the leader's node";

  auto b = start_elect(path, script, {"--id", "b"});
  // b has joined while a's command runs: the race this test is about.
  ASSERT_TRUE(queue_reaches(path, 2)) << b->err();
  gate.write_line("go");
  EXPECT_EQ(a->wait(), 0) << a->err();
  EXPECT_EQ(read_file(status),
            "{\"outcome\":\"held_throughout\",\"exit\":0,\"command_status\":0,"
            "\"epoch\":" +
                std::to_string(first) + "}\n");
  const auto second = epoch_in(events.read_line());
  ASSERT_GT(second, 0) << b->err();
  EXPECT_GT(second, first) << "a later term's epoch must be larger";
  ASSERT_TRUE(queue_reaches(path, 1)) << "a's node was left behind when its command ended";
  EXPECT_EQ(second, czxid_of(join_path(path, participants_of(path).at(0))));
  gate.write_line("go");
  EXPECT_EQ(b->wait(), 0) << b->err();
  EXPECT_TRUE(queue_reaches(path, 0)) << "b's node was left behind";

  const auto f = std::to_string(first), s = std::to_string(second);
  EXPECT_EQ(lines_of(read_file(log)),
            (std::vector<std::string>{"start " + f + " " + path, "end " + f,
                                      "start " + s + " " + path, "end " + s}))
      << "two leaders' commands ran at once, or out of order";
}

TEST_F(ZkrCliElectTest, KilledLeadersZkrHandsOverAfterItsCommandIsGone) {
  const std::string path = root_ + "/failover";
  Fifo events(dir_ / "events");
  // The leader's command reports its pid and waits for good; a short session
  // so that the servers expire the killed zkr's session soon.
  auto a = start_elect(path,
                       "echo started $ZKR_LEADER_EPOCH > " + quoted(events.path()) +
                           "; echo pid $$ > " + quoted(events.path()) + "; exec sleep 300",
                       {"--session-timeout", "4s"});
  const auto first = epoch_in(events.read_line());
  ASSERT_GT(first, 0) << a->err();
  const auto pid_line = events.read_line();
  ASSERT_TRUE(pid_line && pid_line->starts_with("pid ")) << a->err();
  Pidfd command(std::stoi(pid_line->substr(4)));
  ASSERT_TRUE(command.valid());
  auto b = start_elect(path, "echo started $ZKR_LEADER_EPOCH > " + quoted(events.path()));
  ASSERT_TRUE(queue_reaches(path, 2)) << b->err();

  a->signal(SIGKILL);
  EXPECT_EQ(a->wait(), 128 + SIGKILL);
  const auto second = epoch_in(events.read_line(60s));
  ASSERT_GT(second, 0) << "no failover: " << b->err();
  // a's session ended only after a's guard had killed a's command.
  EXPECT_TRUE(command.exited_within(0ms)) << "the old leader's command still ran";
  EXPECT_GT(second, first);
  EXPECT_EQ(b->wait(), 0) << b->err();
  EXPECT_TRUE(queue_reaches(path, 0));
}

TEST_F(ZkrCliElectTest, LostLeadershipTerminatesTheCommandAsALostLockDoes) {
  const std::string path = root_ + "/lost";
  Fifo events(dir_ / "events");
  const auto ev = quoted(events.path());
  const auto status = dir_ / "status";
  // The command reports SIGTERM and exits 0: zkr must still say "lost".
  auto leader = start_elect(path,
                            "trap 'kill -KILL $! 2>/dev/null; echo got-term > " + ev +
                                "; exit 0' TERM; echo started $ZKR_LEADER_EPOCH > " + ev +
                                "; sleep 300 & wait",
                            {"--kill-after", "20s", "--status-file", status.string()});
  const auto epoch = epoch_in(events.read_line());
  ASSERT_GT(epoch, 0) << leader->err();
  ASSERT_TRUE(queue_reaches(path, 1));
  keeper().remove(join_path(path, participants_of(path).at(0)));  // an operator, or a lost session

  EXPECT_EQ(events.read_line(), "got-term") << "the command was not signalled";
  EXPECT_EQ(leader->wait(), 79) << leader->err();
  EXPECT_NE(leader->err().find("leadership of " + path + " lost (node_deleted)"), std::string::npos)
      << leader->err();
  EXPECT_EQ(read_file(status),
            "{\"outcome\":\"lock_lost\",\"exit\":79,\"command_status\":0,"
            "\"epoch\":" +
                std::to_string(epoch) + "}\n");
  EXPECT_TRUE(queue_reaches(path, 0));
}

TEST_F(ZkrCliElectTest, TimeoutAndSignalWhileWaitingLeaveNoNode) {
  const std::string path = root_ + "/waiting";
  Fifo gate(dir_ / "gate");
  auto leader = start_elect(path, "read go < " + quoted(gate.path()));
  ASSERT_TRUE(queue_reaches(path, 1)) << leader->err();
  const auto marker = dir_ / "ran";
  const auto status = dir_ / "status";
  for (const std::string timeout : {"300ms", "0"}) {
    const auto start = Clock::now();
    const auto ran =
        run_zkr(dir_, {"elect", path, "--connect", test::connect_string(), "--connect-timeout",
                       kConnectTimeout, "--timeout", timeout, "--status-file", status.string(),
                       "--", "/bin/sh", "-c", "touch " + quoted(marker)});
    EXPECT_EQ(ran.code, 75) << ran.err;
    EXPECT_NE(ran.err.find("timed out"), std::string::npos) << ran.err;
    if (timeout == "300ms") {
      EXPECT_GE(Clock::now() - start, 300ms);
    }
    EXPECT_EQ(read_file(status), "{\"outcome\":\"timeout\",\"exit\":75}\n");
    EXPECT_FALSE(std::filesystem::exists(marker)) << "the command ran without leadership";
    EXPECT_TRUE(queue_reaches(path, 1)) << "the timed-out participant left its node";
  }

  for (const int signo : {SIGTERM, SIGINT}) {
    auto waiting = start_elect(path, "touch " + quoted(marker));
    ASSERT_TRUE(queue_reaches(path, 2)) << waiting->err();
    waiting->signal(signo);
    EXPECT_EQ(waiting->wait(), 128 + signo) << waiting->err();
    EXPECT_TRUE(queue_reaches(path, 1)) << "signal " << signo << " left the waiter's node";
    EXPECT_FALSE(std::filesystem::exists(marker)) << "the command ran without leadership";
  }
  gate.write_line("go");
  EXPECT_EQ(leader->wait(), 0) << leader->err();
  EXPECT_TRUE(queue_reaches(path, 0));
}

TEST_F(ZkrCliElectTest, LockPathIsRefusedWithTheForeignProtocolCode) {
  const std::string path = root_ + "/a-lock";
  Fifo gate(dir_ / "gate");
  auto holder = std::make_unique<Zkr>(
      dir_, std::vector<std::string>{"lock", path, "--connect", test::connect_string(),
                                     "--connect-timeout", kConnectTimeout, "--", "/bin/sh", "-c",
                                     "read go < " + quoted(gate.path())});
  ASSERT_TRUE(queue_reaches(path, 1)) << holder->err();
  const auto marker = dir_ / "ran";
  const auto ran =
      run_zkr(dir_, {"elect", path, "--connect", test::connect_string(), "--connect-timeout",
                     kConnectTimeout, "--", "/bin/sh", "-c", "touch " + quoted(marker)});
  EXPECT_EQ(ran.code, 78) << ran.err;
  EXPECT_NE(ran.err.find("zkr elect joins only a leader latch"), std::string::npos) << ran.err;
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the command ran on a lock's path";
  EXPECT_TRUE(queue_reaches(path, 1)) << "the refused participant left a node";
  gate.write_line("go");
  EXPECT_EQ(holder->wait(), 0) << holder->err();
}

TEST_F(ZkrCliElectTest, LsListsParticipantsInOrderWithTheLeaderMarked) {
  const std::string path = root_ + "/jobs/nightly";
  Fifo gate(dir_ / "gate");
  std::vector<std::unique_ptr<Zkr>> runs;
  const std::vector<std::string> ids{"alpha", "beta", "gamma"};
  for (const auto& id : ids) {
    runs.push_back(start_elect(path, "read go < " + quoted(gate.path()), {"--id", id}));
    // Joined behind the ones before it before the next one starts.
    ASSERT_TRUE(queue_reaches(path, runs.size())) << id << ": " << runs.back()->err();
  }
  const auto nodes = participants_of(path);
  ASSERT_EQ(nodes.size(), 3u);
  const std::vector<std::string> connect{"--connect", test::connect_string(), "--connect-timeout",
                                         kConnectTimeout};
  const auto ls = [&](std::vector<std::string> args) {
    args.insert(args.begin(), "ls");
    args.insert(args.end(), connect.begin(), connect.end());
    return run_zkr(dir_, args);
  };

  const auto view = ls({path});
  ASSERT_EQ(view.code, 0) << view.err;
  const auto lines = lines_of(view.out);
  ASSERT_EQ(lines.size(), 4u) << view.out;
  EXPECT_EQ(words_of(lines[0]), (std::vector<std::string>{"PARTICIPANT", "EPOCH", "AGE"}));
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto words = words_of(lines[i + 1]);
    const std::size_t at = i == 0 ? 1 : 0;  // the leader's line starts with "*"
    ASSERT_EQ(words.size(), at + 3) << lines[i + 1];
    if (i == 0) {
      EXPECT_EQ(words[0], "*") << view.out;
    }
    EXPECT_EQ(words[at], ids[i]) << view.out;
    EXPECT_EQ(words[at + 1], std::to_string(czxid_of(join_path(path, nodes[i])))) << view.out;
  }

  const auto json = ls({path, "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  const auto json_lines = lines_of(json.out);
  ASSERT_EQ(json_lines.size(), 1u) << json.out;
  const auto latch = nlohmann::json::parse(json_lines[0]);
  EXPECT_EQ(latch["path"], path);
  ASSERT_EQ(latch["participants"].size(), 3u) << json.out;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(latch["participants"][i]["id"], ids[i]) << json.out;
    EXPECT_EQ(latch["participants"][i]["leader"], i == 0) << json.out;
    EXPECT_EQ(latch["participants"][i]["epoch"], czxid_of(join_path(path, nodes[i])));
  }

  // Among other locks, the latch is one row: its leader, the others waiting.
  const auto table = ls({root_});
  ASSERT_EQ(table.code, 0) << table.err;
  bool found = false;
  for (const auto& line : lines_of(table.out)) {
    const auto words = words_of(line);
    if (words.empty() || words[0] != path) continue;
    found = true;
    ASSERT_GE(words.size(), 4u) << line;
    EXPECT_EQ(words[1], "leader:") << line;
    EXPECT_EQ(words[2], "alpha") << line;
    EXPECT_EQ(words[3], "2") << line;
  }
  EXPECT_TRUE(found) << table.out;

  for (std::size_t i = 0; i < runs.size(); ++i) gate.write_line("go");
  for (auto& run : runs) EXPECT_EQ(run->wait(), 0) << run->err();
  EXPECT_TRUE(queue_reaches(path, 0));
}

}  // namespace
}  // namespace zkr
