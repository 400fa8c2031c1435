// `zkr elect PATH [options] [--] CMD ARGS...`: one instance of a job at a
// time, across machines, with failover.
//
// zkr joins the leader latch at PATH (zkr/leader_latch.hpp, Curator's
// LeaderLatch layout) and runs CMD only while it leads. A term is a grant like
// a lock's, so waiting, running, losing and confirming are zkr lock's own
// (grant_run.hpp): a lost term terminates CMD exactly as a lost lock does.
// When CMD ends the latch is closed, which deletes our node, and the next
// participant leads.
#include <unistd.h>

#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "args.hpp"
#include "connection.hpp"
#include "errors.hpp"
#include "exit_codes.hpp"
#include "grant_verb.hpp"
#include "status_file.hpp"
#include "verbs.hpp"
#include "zkr/leader_latch.hpp"
#include "zkr/path.hpp"

namespace zkr::cli {
namespace {

std::vector<OptionSpec> elect_specs() {
  auto specs = connection_option_specs();
  const std::vector<OptionSpec> own{
      {"id", 0, true, "ID",
       "this participant's id, shown by `zkr ls` and Curator's getLeader() "
       "(default host=..;pid=..)"},
      {"timeout", 't', true, "D", "give up if not leader within D of connecting (0: one look)"},
      {"kill-after", 'k', true, "D",
       "if leadership is lost: SIGKILL the command D after SIGTERM (default 10s)"},
      {"ignore-suspended", 0, false, "",
       "count leadership lost only when the session is, not when the link drops"},
      {"status-file", 0, true, "PATH",
       "write zkr's own outcome to PATH as one JSON line (see Exit status)"},
  };
  specs.insert(specs.begin(), own.begin(), own.end());
  return specs;
}

struct ElectSettings {
  std::string path;
  std::string id;
  CommandSettings run;
  LeaderLatchOptions latch_options;
};

// Host and pid: what tells an operator where the leader runs. The library's
// own default adds the thread, which says nothing for a process that runs
// one latch.
std::string default_id() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return "host=" + std::string(host[0] ? host : "unknown") + ";pid=" + std::to_string(::getpid());
}

ElectSettings elect_settings(const ParsedArgs& parsed) {
  ElectSettings s;
  const auto& operands = parsed.operands();
  if (operands.empty()) throw UsageError("missing latch PATH and command");
  if (operands.size() < 2) throw UsageError("missing the command to run while leader");
  s.path = operands[0];
  // The library checks the path too, but only once connected: a typo should
  // fail at once, even with no ensemble around.
  validate_path(s.path);
  if (s.path == "/") throw UsageError("a latch path cannot be the root \"/\"");
  if (s.path.size() > kMaxLatchPathLength)
    throw UsageError("latch path is " + std::to_string(s.path.size()) + " bytes long, more than " +
                     std::to_string(kMaxLatchPathLength));
  if (auto v = parsed.value("id")) {
    check_label(*v, "--id", "ID");
    s.id = *v;
  } else {
    s.id = default_id();
  }
  s.run = command_settings(parsed);
  if (parsed.has("ignore-suspended")) s.latch_options.suspended_policy = SuspendedPolicy::ignore;
  return s;
}

// zkr's place in the election: a leader latch, whose term is the grant.
class Candidacy final : public CommandGrant {
 public:
  Candidacy(Client& client, const ElectSettings& settings)
      : settings_(settings), latch_(client, settings.path, settings.id, settings.latch_options) {}
  bool acquire(std::stop_token stop) override {
    return settings_.run.timeout ? latch_.try_await_leadership_for(*settings_.run.timeout, stop)
                                 : latch_.await_leadership(stop);
  }
  std::optional<Grant> grant() override { return latch_.term(); }
  std::vector<std::string> granted(const Grant& term, spdlog::logger& log,
                                   StatusFile* status) override {
    log.info("leading {} as {} ({}), epoch {}", settings_.path, settings_.id, term.node_path(),
             term.fencing_token());
    if (status) status->add("epoch", term.fencing_token());
    return {"ZKR_LEADER_PATH=" + settings_.path,
            "ZKR_LEADER_EPOCH=" + std::to_string(term.fencing_token())};
  }
  void release() override { latch_.close(); }

 private:
  const ElectSettings settings_;
  LeaderLatch latch_;
};

}  // namespace

std::string elect_help() {
  return "Usage: zkr elect PATH [options] [--] CMD [ARGS...]\n"
         "\n"
         "Runs CMD only while this participant leads the election at PATH: one\n"
         "instance of a job at a time, across machines, with failover. Start it on\n"
         "each machine; one runs CMD, the others stand by, and when the leader's CMD\n"
         "ends, or its zkr or machine dies, the next one in line runs CMD. PATH is a\n"
         "leader latch in the layout of zkrecipes' and Apache Curator's LeaderLatch:\n"
         "they and zkr elect, on one PATH, elect one leader at a time, and `zkr ls\n"
         "PATH` lists the participants in order, the leader first. Options after CMD\n"
         "belong to CMD.\n"
         "\n"
         "CMD gets ZKR_LEADER_PATH (PATH) and ZKR_LEADER_EPOCH in its environment:\n"
         "the term's epoch, the czxid of our node, larger than every earlier\n"
         "leader's on PATH; a store that keeps the largest epoch it has seen and\n"
         "refuses smaller ones refuses a deposed leader's writes.\n"
         "\n"
         "CMD is supervised exactly as under `zkr lock` (see zkr lock --help): it\n"
         "runs in a process group of its own, only while zkr can prove its\n"
         "leadership, and is killed if zkr dies. If leadership is lost while it\n"
         "runs (the session expired, our node was deleted, or the link to\n"
         "ZooKeeper dropped, unless --ignore-suspended), its group gets SIGTERM,\n"
         "then SIGKILL after --kill-after. When CMD's group is gone zkr leaves the\n"
         "election (our node is deleted), and exits with CMD's code if the server\n"
         "confirmed that it led throughout. SIGINT or SIGTERM while waiting leaves\n"
         "the election and no node behind. zkr elect runs CMD once: to stand again,\n"
         "run it again (e.g. from a service manager that restarts it).\n"
         "\n"
         "Options:\n" +
         format_options(elect_specs()) + "\n" + connection_help_footer() +
         "\n"
         "Exit status (zkr lock's, with leadership for the lock):\n"
         "  CMD's own      CMD ran, and the server confirmed after it ended that this\n"
         "                 participant led throughout\n"
         "  64             bad usage: options, PATH, durations, --id\n"
         "  69             ZooKeeper unreachable within --connect-timeout, or the link failed\n"
         "  75             not leader within --timeout (CMD not run)\n"
         "  76             ZooKeeper refused an operation (e.g. no permission on PATH)\n"
         "  78             PATH is a lock's, not a latch's: not joined, CMD not run\n"
         "  79             leadership was lost (or could not be confirmed) while CMD\n"
         "                 ran; its group was terminated\n"
         "  126, 127       CMD could not be run, or was not found\n"
         "  128+S          zkr got signal S while waiting for leadership\n"
         "--status-file PATH tells them apart from CMD's own codes as under zkr lock:\n"
         "outcome held_throughout (led throughout), lock_lost (leadership lost),\n"
         "timeout, command_not_run, interrupted or error, and the term's epoch once\n"
         "this participant led, e.g.\n"
         "  "
         "{\"outcome\":\"held_throughout\",\"exit\":0,\"command_status\":0,\"epoch\":4294967302}\n"
         "\n"
         "Example: one instance of this job at a time, across machines, with failover\n"
         "  zkr elect /app/leaders/scheduler -- ./scheduler --serve\n"
         "  zkr elect /app/leaders/nightly --id \"$(hostname)\" --timeout 1m -- ./nightly.sh\n";
}

int elect_main(const std::vector<std::string>& args) {
  const auto plan = [](const ParsedArgs& parsed) {
    const auto settings = elect_settings(parsed);
    return plan_of<Candidacy>(settings.path, "leadership of " + settings.path, settings);
  };
  return run_grant_verb({.name = "elect", .specs = elect_specs(), .help = elect_help, .plan = plan},
                        args);
}

}  // namespace zkr::cli
