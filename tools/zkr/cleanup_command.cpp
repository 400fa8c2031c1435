// `zkr cleanup ROOT [--dry-run]`: sweep a lock root (zkr::clean_lock_root).
#include <cstdio>
#include <string>
#include <vector>

#include "args.hpp"
#include "connection.hpp"
#include "errors.hpp"
#include "exit_codes.hpp"
#include "progress.hpp"
#include "verbs.hpp"
#include "zkr/cleanup.hpp"
#include "zkr/path.hpp"

namespace zkr::cli {
namespace {

std::vector<OptionSpec> cleanup_specs() {
  auto specs = connection_option_specs();
  const std::vector<OptionSpec> own{
      {"dry-run", 'n', false, "", "remove nothing; list what would be removed"},
      {"remove-root", 0, false, "", "also remove ROOT if it ends up empty"},
      {"max-children", 0, true, "N",
       "refuse to list a directory with more than N children (default 10000000)"},
      {"max-depth", 0, true, "N", "look N levels below ROOT, 0 to 1000 (default 4)"},
      {"progress", 0, false, "", "report progress on stderr even when it is not a terminal"},
  };
  specs.insert(specs.begin(), own.begin(), own.end());
  return specs;
}

std::string summary(const CleanReport& r, bool dry_run) {
  std::string s = dry_run ? "dry run: would remove " : "removed ";
  s += std::to_string(r.empty_directories) + " empty lock director" +
       (r.empty_directories == 1 ? "y" : "ies") + "; kept " + std::to_string(r.live_lock_nodes) +
       " live lock node" + (r.live_lock_nodes == 1 ? "" : "s") + "; " +
       std::to_string(r.directories_seen) + " director" + (r.directories_seen == 1 ? "y" : "ies") +
       " looked at in " + format_duration(r.elapsed);
  if (r.raced > 0)
    s += "; " + std::to_string(r.raced) + " left alone because something appeared under them";
  if (r.not_ours > 0)
    s += "; " + std::to_string(r.not_ours) + " empty node" + (r.not_ours == 1 ? "" : "s") +
         " left alone: not made by zkrecipes";
  if (r.foreign_lock_nodes > 0)
    s += "; " + std::to_string(r.foreign_lock_nodes) + " lock-named node" +
         (r.foreign_lock_nodes == 1 ? "" : "s") +
         " that no session owns left alone (not made by zkrecipes; they block their locks: remove "
         "them by hand)";
  return s;
}

}  // namespace

std::string cleanup_help() {
  return "Usage: zkr cleanup ROOT [--dry-run] [options]\n"
         "\n"
         "Sweeps the lock root ROOT: removes empty lock directories (which the server\n"
         "may never reap: a container that never had a child, or a persistent\n"
         "directory) and orphaned lock nodes (named like lock nodes, owned by no\n"
         "session, so nothing would ever delete them, and they block every waiter\n"
         "queued behind them). A lock that is held or waited on is never touched:\n"
         "its nodes belong to live sessions, and a directory is removed only by a\n"
         "plain delete, which the server refuses while it has a child.\n"
         "\n"
         "Each path removed (with --dry-run: that would be) is printed on stdout, one\n"
         "per line, as it goes; a summary follows on stderr. Huge directories are\n"
         "worked through page by page.\n"
         "\n"
         "Options:\n" +
         format_options(cleanup_specs()) + "\n" + connection_help_footer() +
         "\n"
         "Exit status: 0 swept, 64 bad usage, 65 a directory has more children than\n"
         "--max-children, 66 ROOT does not exist, 69 ZooKeeper unreachable,\n"
         "76 ZooKeeper refused (e.g. no permission).\n"
         "\n"
         "Example:\n"
         "  zkr cleanup /app/locks --dry-run\n"
         "  zkr cleanup /app/locks\n";
}

int cleanup_main(const std::vector<std::string>& args) {
  return run_reporting_errors("cleanup", [&]() -> int {
    const auto specs = cleanup_specs();
    const auto parsed = parse_args(args, specs);
    if (parsed.has("help")) {
      std::fputs(cleanup_help().c_str(), stdout);
      return exit_code::ok;
    }
    if (parsed.operands().size() != 1)
      throw UsageError(parsed.operands().empty() ? "missing ROOT" : "cleanup takes one ROOT");
    const std::string root = parsed.operands()[0];
    validate_path(root);
    CleanOptions options;
    options.dry_run = parsed.has("dry-run");
    options.remove_root = parsed.has("remove-root");
    if (auto v = parsed.value("max-children"))
      options.max_children = parse_count(*v, "--max-children");
    if (auto v = parsed.value("max-depth"))
      options.max_depth = static_cast<unsigned>(parse_count(*v, "--max-depth", 0, kMaxScanDepth));
    const auto connection = connection_settings(parsed);

    auto client = open_client(connection);
    wait_connected(*client, connection);
    ProgressLine progress(parsed.has("progress"));
    options.on_progress = progress.callback();
    options.on_remove = [&](const std::string& path, CleanAction) {
      progress.finish();  // a path must not land in the middle of a progress line
      std::string line = path + '\n';
      std::fputs(line.c_str(), stdout);
      std::fflush(stdout);  // as it goes, even into a pipe
    };
    CleanReport report;
    try {
      report = clean_lock_root(*client, root, options);
    } catch (const KeeperError& e) {
      if (e.errc() != Errc::no_node || e.path() != root) throw;
      progress.finish();
      print_error("no such path: " + root);
      return exit_code::no_such_root;
    }
    progress.finish();
    print_error(summary(report, options.dry_run));
    return exit_code::ok;
  });
}

}  // namespace zkr::cli
