// `zkr cleanup ROOT [--dry-run]`: sweep a lock root (zkr::clean_lock_root).
#include <cstdio>
#include <string>
#include <vector>

#include "args.hpp"
#include "connection.hpp"
#include "errors.hpp"
#include "exit_codes.hpp"
#include "root_walk.hpp"
#include "verbs.hpp"
#include "zkr/cleanup.hpp"

namespace zkr::cli {
namespace {

std::vector<OptionSpec> cleanup_specs() {
  return root_walk_specs({{"dry-run", 'n', false, "", "remove nothing; list what would be removed"},
                          {"remove-root", 0, false, "", "also remove ROOT if it ends up empty"}},
                         CleanOptions{}.max_children);
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
         "directory), whatever their names, and reports orphaned lock nodes (named\n"
         "like lock nodes, owned by no session and not a directory of zkrecipes: they\n"
         "block every waiter queued behind them) for a person to remove. A lock that\n"
         "is held or waited on is never touched:\n"
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
    const auto walk_args = parse_root_walk_args("cleanup", args, cleanup_specs(), cleanup_help);
    if (!walk_args) return exit_code::ok;
    const auto& [parsed, root] = *walk_args;
    CleanOptions options;
    options.dry_run = parsed.has("dry-run");
    options.remove_root = parsed.has("remove-root");
    read_walk_limits(parsed, options);
    RootWalk walk(parsed);
    options.on_remove = [&](const std::string& path, CleanAction) {
      walk.finish_progress();  // a path must not land in the middle of a progress line
      std::string line = path + '\n';
      std::fputs(line.c_str(), stdout);
      std::fflush(stdout);  // as it goes, even into a pipe
    };
    CleanReport report;
    if (!walk.run(root, options.on_progress,
                  [&] { report = clean_lock_root(walk.client(), root, options); }))
      return exit_code::no_such_root;
    print_error(summary(report, options.dry_run));
    return exit_code::ok;
  });
}

}  // namespace zkr::cli
