// `zkr member` and `zkr members`, run as a user runs them
// (zkr_cli_support.hpp): a member listed exactly while its command runs and
// gone after, an id held by another live session refused with its own code,
// a lost registration ending the command as a lost lock does, and the list
// in text and JSON.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>

#include <memory>
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
using test::cli::quoted;
using test::cli::read_file;
using test::cli::run_zkr;
using test::cli::TempDir;
using test::cli::Zkr;

TEST(ZkrCliMemberUsage, HelpDocumentsTheVerbsAndBadInputIsRefused) {
  TempDir dir;
  const auto help = run_zkr(dir, {"member", "--help"});
  EXPECT_EQ(help.code, 0) << help.err;
  for (const char* text : {"Usage: zkr member GROUP --id ID", "ZKR_MEMBER_NODE", "--data", "73",
                           "75", "79", "--status-file"})
    EXPECT_NE(help.out.find(text), std::string::npos) << text << " undocumented";
  const auto list_help = run_zkr(dir, {"members", "--help"});
  EXPECT_EQ(list_help.code, 0) << list_help.err;
  EXPECT_NE(list_help.out.find("Usage: zkr members GROUP"), std::string::npos) << list_help.out;
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases{
      {{"member", "/g", "--", "true"}, "missing --id"},
      {{"member", "/g", "--id", "a"}, "missing the command"},
      {{"member", "/g", "--id", "a/b", "--", "true"}, "invalid member id"},
      {{"member", "/g", "--id", "..", "--", "true"}, "invalid member id"},
      {{"member", "/", "--id", "a", "--", "true"}, "cannot be the root"},
      {{"member", "relative", "--id", "a", "--", "true"}, "invalid znode path"},
      {{"members", "relative"}, "invalid znode path"},
      {{"members", "/a", "/b"}, "one GROUP only"},
  };
  for (const auto& c : cases) {
    std::string shown;
    for (const auto& a : c.args) shown += a + " ";
    auto args = c.args;
    args.insert(args.begin() + 1, {"--connect", "127.0.0.1:1"});  // nobody there: never dialled
    const auto ran = run_zkr(dir, args);
    EXPECT_EQ(ran.code, 64) << "zkr " << shown << "\n" << ran.err;
    EXPECT_NE(ran.err.find(c.says), std::string::npos)
        << "zkr " << shown << ": stderr does not say '" << c.says << "':\n"
        << ran.err;
  }
}

class ZkrCliMemberTest : public test::cli::ZkrCliTest {
 protected:
  std::unique_ptr<Zkr> start_member(const std::string& group, const std::string& id,
                                    const std::string& script,
                                    const std::vector<std::string>& options = {}) {
    std::vector<std::string> args{
        "member",       group, "--id", id, "--connect", test::connect_string(), "--connect-timeout",
        kConnectTimeout};
    args.insert(args.end(), options.begin(), options.end());
    args.insert(args.end(), {"--", "/bin/sh", "-c", script});
    return std::make_unique<Zkr>(dir_, args);
  }
  test::cli::Ran members(const std::string& group, std::vector<std::string> options = {}) {
    std::vector<std::string> args{"members",           group,
                                  "--connect",         test::connect_string(),
                                  "--connect-timeout", kConnectTimeout};
    args.insert(args.end(), options.begin(), options.end());
    return run_zkr(dir_, args);
  }
};

TEST_F(ZkrCliMemberTest, ListedWhileItsCommandRunsWithItsDataAndGoneAfter) {
  const std::string group = root_ + "/search";
  Fifo events(dir_ / "events");
  Fifo gate(dir_ / "gate");
  const auto status = dir_ / "status";
  auto a = start_member(group, "host-1",
                        "echo started $ZKR_MEMBER_NODE > " + quoted(events.path()) +
                            "; read go < " + quoted(gate.path()) + "; exit 3",
                        {"--data", "10.0.0.1:80", "--status-file", status.string()});
  ASSERT_EQ(events.read_line(), "started " + group + "/host-1") << a->err();
  // Registered before the command started: the node is there, ephemeral, with the data.
  const auto node = keeper().exists(group + "/host-1");
  ASSERT_TRUE(node);
  EXPECT_NE(node->ephemeral_owner, 0);
  EXPECT_EQ(keeper().get(group + "/host-1").data, "10.0.0.1:80");
  keeper().create(group + "/host-2", "line\nbreak", CreateMode::ephemeral);

  const auto listed = members(group);
  EXPECT_EQ(listed.code, 0) << listed.err;
  EXPECT_EQ(lines_of(listed.out),
            (std::vector<std::string>{"host-1\t10.0.0.1:80", "host-2\tline\\x0abreak"}));
  const auto as_json = members(group, {"--json"});
  EXPECT_EQ(as_json.code, 0) << as_json.err;
  const auto json_lines = lines_of(as_json.out);
  ASSERT_EQ(json_lines.size(), 2u) << as_json.out;
  const auto first = nlohmann::json::parse(json_lines[0]);
  EXPECT_EQ(first["id"], "host-1");
  EXPECT_EQ(first["data"], "10.0.0.1:80");
  EXPECT_EQ(first["czxid"], node->czxid);
  EXPECT_EQ(nlohmann::json::parse(json_lines[1])["data"], "line\nbreak");

  gate.write_line("go");
  EXPECT_EQ(a->wait(), 3) << a->err();  // the command's own code: registered throughout
  EXPECT_EQ(read_file(status),
            "{\"outcome\":\"held_throughout\",\"exit\":3,\"command_status\":3}\n");
  EXPECT_FALSE(keeper().exists(group + "/host-1")) << "the member's node was left behind";
  EXPECT_EQ(lines_of(members(group).out), (std::vector<std::string>{"host-2\tline\\x0abreak"}));
  // A group that does not exist is an empty one.
  const auto none = members(root_ + "/nobody");
  EXPECT_EQ(none.code, 0) << none.err;
  EXPECT_EQ(none.out, "");
}

TEST_F(ZkrCliMemberTest, AnIdHeldByAnotherLiveSessionIsRefusedAndNotTaken) {
  const std::string group = root_ + "/held";
  keeper().create(group);
  keeper().create(group + "/host-1", "theirs", CreateMode::ephemeral);
  const auto ran_flag = dir_ / "ran";
  const auto status = dir_ / "status";
  auto twin = start_member(group, "host-1", "touch " + quoted(ran_flag),
                           {"--status-file", status.string()});
  EXPECT_EQ(twin->wait(), 73) << twin->err();
  EXPECT_NE(twin->err().find("held by session"), std::string::npos) << twin->err();
  EXPECT_FALSE(std::filesystem::exists(ran_flag)) << "the command ran though refused";
  EXPECT_EQ(read_file(status), "{\"outcome\":\"refused\",\"exit\":73}\n");
  EXPECT_EQ(keeper().get(group + "/host-1").data, "theirs");
  EXPECT_EQ(keeper().exists(group + "/host-1")->ephemeral_owner, client_->keeper()->session_id());

  // With --timeout it waits; still theirs when the timeout passes: 73 all the same.
  auto waited = start_member(group, "host-1", "touch " + quoted(ran_flag), {"--timeout", "1s"});
  EXPECT_EQ(waited->wait(), 73) << waited->err();
  EXPECT_NE(waited->err().find("still so after --timeout"), std::string::npos) << waited->err();
  EXPECT_FALSE(std::filesystem::exists(ran_flag)) << "the command ran though refused";
  EXPECT_EQ(keeper().get(group + "/host-1").data, "theirs");

  // With --timeout it waits for theirs to go, then registers.
  Fifo events(dir_ / "events");
  auto patient = start_member(group, "host-1", "echo started > " + quoted(events.path()),
                              {"--timeout", "60s", "--data", "ours"});
  ASSERT_TRUE(test::wait_node(
      keeper(), group + "/host-1",
      [](const std::optional<NodeData>& n) { return n && n->data == "theirs"; }, 5s));
  keeper().remove(group + "/host-1");
  EXPECT_EQ(events.read_line(), "started") << patient->err();
  EXPECT_EQ(patient->wait(), 0) << patient->err();
}

TEST_F(ZkrCliMemberTest, ALostRegistrationTerminatesTheCommand) {
  const std::string group = root_ + "/lost";
  Fifo events(dir_ / "events");
  const auto ev = quoted(events.path());
  auto member = start_member(group, "host-1",
                             "trap 'kill -KILL $! 2>/dev/null; echo got-term > " + ev +
                                 "; exit 0' TERM; echo started > " + ev + "; sleep 300 & wait",
                             {"--kill-after", "20s"});
  ASSERT_EQ(events.read_line(), "started") << member->err();
  keeper().remove(group + "/host-1");  // an operator, or a lost session
  EXPECT_EQ(events.read_line(), "got-term") << "the command was not signalled";
  EXPECT_EQ(member->wait(), 79) << member->err();
  EXPECT_NE(member->err().find("membership of " + group + "/host-1 lost (node_deleted)"),
            std::string::npos)
      << member->err();
  // The PersistentNode may have made the node again before zkr left: zkr's
  // close deletes it all the same.
  EXPECT_TRUE(test::wait_gone(keeper(), group + "/host-1", 30s));
}

}  // namespace
}  // namespace zkr
