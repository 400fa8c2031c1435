// zkr: the command-line tool of zkrecipes. This file only dispatches to a
// verb (verbs.hpp); each verb parses its own options.
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "errors.hpp"
#include "exit_codes.hpp"
#include "verbs.hpp"

#ifndef ZKR_VERSION
#define ZKR_VERSION "unknown"
#endif

namespace zkr::cli {
namespace {

struct Verb {
  std::string_view name;
  std::string_view summary;
  int (*run)(const std::vector<std::string>&);
  std::string (*help)();
};

constexpr Verb kVerbs[] = {
    {"lock", "run a command while holding a lock (flock(1) across machines)", lock_main, lock_help},
    {"elect", "run a command only while leader of an election (one instance, with failover)",
     elect_main, elect_help},
    {"member", "run a command while registered as a member of a group", member_main, member_help},
    {"members", "list the members of a group and their data", members_main, members_help},
    {"ls", "list the locks under a root: holder, waiters, age", ls_main, ls_help},
    {"cleanup", "remove empty lock directories and orphaned lock nodes", cleanup_main,
     cleanup_help},
    {"counter", "read or change a counter (Curator's DistributedAtomicLong or SharedCount)",
     counter_main, counter_help},
    {"bench", "run the lock benchmarks", bench_main, bench_help},
};

const Verb* find_verb(std::string_view name) {
  for (const auto& v : kVerbs)
    if (v.name == name) return &v;
  return nullptr;
}

std::string main_help() {
  std::string text =
      "Usage: zkr VERB [options] [ARGS...]\n"
      "       zkr help VERB | zkr VERB --help | zkr --version\n"
      "\n"
      "ZooKeeper locks and leader elections from the shell, over the zkrecipes library.\n"
      "\n"
      "Verbs:\n";
  for (const auto& v : kVerbs) {
    std::string name(v.name);
    text += "  " + name + std::string(10 - name.size(), ' ') + std::string(v.summary) + "\n";
  }
  text +=
      "  help      show the help of a verb\n"
      "\n"
      "Every verb takes --connect HOSTS (default $ZK_CONNECT), --session-timeout D,\n"
      "--connect-timeout D (default 15s: zkr never hangs on a dead ensemble) and -v.\n"
      "\n"
      "Exit status of zkr's own (zkr lock, elect and member pass their command's through):\n"
      "  64 bad usage   65 data not as expected (a directory too large to list,\n"
      "     a node that is not a counter)   66 no such path\n"
      "  69 ZooKeeper unreachable   70 internal error   71 operating system error\n"
      "  73 member id held by another session   75 lock (or leadership) timeout\n"
      "  76 ZooKeeper refused\n"
      "  79 lock (or leadership, membership) lost while the command ran\n"
      "  80 counter change not applied   81 counter change indeterminate\n"
      "  126/127 command not runnable/not found   128+S signal S\n"
      "A command may return these too: --status-file tells them apart.\n"
      "\n"
      "Example:\n"
      "  export ZK_CONNECT=zk1:2181,zk2:2181,zk3:2181\n"
      "  zkr lock /app/locks/deploy --timeout 30s -- ./deploy.sh\n"
      "  zkr elect /app/leaders/scheduler -- ./scheduler --serve\n"
      "  zkr ls /app/locks\n";
  return text;
}

int help_main(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::fputs(main_help().c_str(), stdout);
    return exit_code::ok;
  }
  const Verb* verb = find_verb(args[0]);
  if (args.size() > 1 || !verb) {
    print_error("help: unknown verb '" + args[0] +
                "' (verbs: lock, elect, ls, cleanup, counter, bench)");
    return exit_code::usage;
  }
  const std::string text = verb->help();
  if (text.empty()) return verb->run({"--help"});  // a verb that writes its own help
  std::fputs(text.c_str(), stdout);
  return exit_code::ok;
}

}  // namespace
}  // namespace zkr::cli

int main(int argc, char** argv) {
  using namespace zkr::cli;
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(main_help().c_str(), stderr);
    return exit_code::usage;
  }
  const std::string& first = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (first == "--help" || first == "-h") return help_main({});
  if (first == "help") return help_main(rest);
  if (first == "--version" || first == "-V") {
    std::printf("zkr (zkrecipes) %s\n", ZKR_VERSION);
    return exit_code::ok;
  }
  if (const Verb* verb = find_verb(first)) return verb->run(rest);
  if (first.starts_with("-"))
    print_error("unknown option '" + first + "': options go after the verb (try 'zkr --help')");
  else
    print_error("unknown verb '" + first +
                "' (verbs: lock, elect, ls, cleanup, counter, bench; try 'zkr --help')");
  return exit_code::usage;
}
