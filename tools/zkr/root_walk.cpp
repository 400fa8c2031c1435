#include "root_walk.hpp"

#include <cstdio>

#include "connection.hpp"
#include "errors.hpp"
#include "zkr/error.hpp"
#include "zkr/path.hpp"

namespace zkr::cli {
namespace {

std::unique_ptr<Client> connected_client(const ParsedArgs& parsed) {
  const auto connection = connection_settings(parsed);
  auto client = open_client(connection);
  wait_connected(*client, connection);
  return client;
}

}  // namespace

std::vector<OptionSpec> root_walk_specs(std::vector<OptionSpec> own,
                                        std::uint64_t default_max_children) {
  own.push_back({"max-children", 0, true, "N",
                 "refuse to list a directory with more than N children (default " +
                     std::to_string(default_max_children) + ")"});
  own.push_back({"max-depth", 0, true, "N", "look N levels below ROOT, 0 to 1000 (default 4)"});
  own.push_back(
      {"progress", 0, false, "", "report progress on stderr even when it is not a terminal"});
  const auto connection = connection_option_specs();
  own.insert(own.end(), connection.begin(), connection.end());
  return own;
}

std::optional<RootWalkArgs> parse_root_walk_args(std::string_view verb,
                                                 const std::vector<std::string>& args,
                                                 const std::vector<OptionSpec>& specs,
                                                 std::string (*help)()) {
  auto parsed = parse_args(args, specs);
  if (parsed.has("help")) {
    std::fputs(help().c_str(), stdout);
    return std::nullopt;
  }
  if (parsed.operands().size() != 1)
    throw UsageError(parsed.operands().empty() ? "missing ROOT"
                                               : std::string(verb) + " takes one ROOT");
  std::string root = parsed.operands()[0];
  validate_path(root);
  return RootWalkArgs{std::move(parsed), std::move(root)};
}

// The Client connects before the progress line starts its clock.
RootWalk::RootWalk(const ParsedArgs& parsed)
    : client_(connected_client(parsed)), progress_(parsed.has("progress")) {}

bool RootWalk::run(const std::string& root, std::function<void(const WalkProgress&)>& on_progress,
                   const std::function<void()>& walk) {
  on_progress = progress_.callback();
  try {
    walk();
  } catch (const KeeperError& e) {
    if (e.errc() != Errc::no_node || e.path() != root) throw;
    progress_.finish();
    print_error("no such path: " + root);
    return false;
  }
  progress_.finish();
  return true;
}

}  // namespace zkr::cli
