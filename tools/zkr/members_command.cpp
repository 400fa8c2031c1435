// `zkr members GROUP`: the members of a group (zkr/group_member.hpp, the
// layout of Curator's GroupMember) and their data, one per line or as JSON.
#include <cstdio>
#include <string>
#include <vector>

#include "args.hpp"
#include "connection.hpp"
#include "errors.hpp"
#include "exit_codes.hpp"
#include "session_text.hpp"
#include "verbs.hpp"
#include "zkr/children_cache.hpp"
#include "zkr/path.hpp"

#include <nlohmann/json.hpp>

namespace zkr::cli {
namespace {

std::vector<OptionSpec> members_specs() {
  auto specs = connection_option_specs();
  specs.insert(specs.begin(),
               OptionSpec{"json", 0, false, "", "one JSON object per member and line"});
  return specs;
}

// A member's data is anyone's bytes: invalid UTF-8 is written as U+FFFD, so
// that every line parses.
std::string member_json_line(const std::string& id, const ChildNode& member) {
  nlohmann::ordered_json line;
  line["id"] = id;
  line["data"] = member.data;
  line["czxid"] = member.stat.czxid;
  line["mzxid"] = member.stat.mzxid;
  line["session"] = session_hex(member.stat.ephemeral_owner);
  return line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

// The text form: the id, a tab, the data with its control characters shown
// as escapes, so that one member is one line whatever its bytes.
std::string text_line(const std::string& id, const std::string& data) {
  std::string line = id + "\t";
  for (const unsigned char c : data) {
    if (c == '\\') {
      line += "\\\\";
    } else if (c < 0x20 || c == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      line += escaped;
    } else {
      line += static_cast<char>(c);
    }
  }
  return line + "\n";
}

}  // namespace

std::string members_help() {
  return "Usage: zkr members GROUP [options]\n"
         "\n"
         "Lists the members of the group GROUP and their data: one line each, the\n"
         "member's id, a tab, and its data (control characters and backslashes\n"
         "escaped as \\xNN and \\\\), in id order. A group is the layout of\n"
         "zkrecipes' and Apache Curator's GroupMember: each member an ephemeral node\n"
         "GROUP/ID whose data is its payload; `zkr member` registers one. A GROUP\n"
         "that does not exist is an empty group.\n"
         "\n"
         "Options:\n" +
         format_options(members_specs()) + "\n" + connection_help_footer() +
         "\n"
         "Exit status: 0 listed (even if nothing), 64 bad usage, 69 ZooKeeper\n"
         "unreachable, or GROUP could not be read within --connect-timeout.\n"
         "\n"
         "Example:\n"
         "  zkr members /services/search\n"
         "  zkr members /services/search --json | jq -r .data\n";
}

int members_main(const std::vector<std::string>& args) {
  return run_reporting_errors("members", [&]() -> int {
    const auto specs = members_specs();
    const auto parsed = parse_args(args, specs);
    if (parsed.has("help")) {
      std::fputs(members_help().c_str(), stdout);
      return exit_code::ok;
    }
    const auto& operands = parsed.operands();
    if (operands.empty()) throw UsageError("missing GROUP");
    if (operands.size() > 1) throw UsageError("one GROUP only");
    const std::string group = operands[0];
    validate_path(group);
    const auto connection = connection_settings(parsed);
    auto log = cli_logger(connection.verbosity);
    auto client = open_client(connection);
    wait_connected(*client, connection);
    // One read of the group, as every member's cache reads it.
    ChildrenCache cache(*client, group);
    cache.start();
    if (!cache.wait_until_initialized(connection.connect_timeout))
      throw Unreachable("could not read " + group + " within " +
                        format_duration(connection.connect_timeout));
    const auto members = cache.snapshot();
    cache.close();
    for (const auto& [id, member] : members)
      std::fputs(
          (parsed.has("json") ? member_json_line(id, member) : text_line(id, member.data)).c_str(),
          stdout);
    return exit_code::ok;
  });
}

}  // namespace zkr::cli
