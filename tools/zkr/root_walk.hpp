// tools/zkr/root_walk.hpp: what the verbs that walk a lock root (`zkr ls`,
// `zkr cleanup`) share: their options, one ROOT, a connected Client, a
// progress line, and exit_code::no_such_root for a ROOT that is not there.
//
//   const auto specs = root_walk_specs(own_specs, kDefaultListingLimit);
//   const auto args = parse_root_walk_args("ls", raw_args, specs, ls_help);
//   if (!args) return exit_code::ok;                 // --help was printed
//   ScanOptions options;
//   read_walk_limits(args->parsed, options);
//   RootWalk walk(args->parsed);                     // connected, or Unreachable
//   if (!walk.run(args->root, options.on_progress, [&] { collect(walk.client()); }))
//     return exit_code::no_such_root;
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "args.hpp"
#include "progress.hpp"
#include "zkr/cleanup.hpp"
#include "zkr/client.hpp"

namespace zkr::cli {

// The verb's own options first, then --max-children (with its default in the
// help), --max-depth, --progress and the connection options.
std::vector<OptionSpec> root_walk_specs(std::vector<OptionSpec> own,
                                        std::uint64_t default_max_children);

struct RootWalkArgs {
  ParsedArgs parsed;
  std::string root;  // the one operand, a valid path
};

// nullopt once --help has been printed. Throws UsageError unless there is
// exactly one ROOT, std::invalid_argument for a bad path.
std::optional<RootWalkArgs> parse_root_walk_args(std::string_view verb,
                                                 const std::vector<std::string>& args,
                                                 const std::vector<OptionSpec>& specs,
                                                 std::string (*help)());

// --max-children and --max-depth into a walk's options (ScanOptions or
// CleanOptions: the library keeps one struct per call).
template <class WalkOptions>
void read_walk_limits(const ParsedArgs& parsed, WalkOptions& options) {
  if (auto v = parsed.value("max-children"))
    options.max_children = parse_count(*v, "--max-children");
  if (auto v = parsed.value("max-depth"))
    options.max_depth = static_cast<unsigned>(parse_count(*v, "--max-depth", 0, kMaxScanDepth));
}

class RootWalk {
 public:
  // Connects as the connection options say: UsageError if they name no
  // ensemble, Unreachable after --connect-timeout.
  explicit RootWalk(const ParsedArgs& parsed);

  Client& client() noexcept { return *client_; }
  // Ends the progress line, so that the verb's own output starts a line.
  void finish_progress() { progress_.finish(); }

  // Runs `walk` with the progress line fed through `on_progress`, and ends
  // the line. False, said on stderr, if ROOT does not exist.
  bool run(const std::string& root, std::function<void(const WalkProgress&)>& on_progress,
           const std::function<void()>& walk);

 private:
  std::unique_ptr<Client> client_;
  ProgressLine progress_;
};

}  // namespace zkr::cli
