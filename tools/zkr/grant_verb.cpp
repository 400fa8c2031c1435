#include "grant_verb.hpp"

#include <cstdio>

#include <spdlog/logger.h>

#include "connection.hpp"
#include "errors.hpp"
#include "exit_codes.hpp"

namespace zkr::cli {

std::optional<int> CommandGrant::refused(const Waited&, StatusFile*) { return std::nullopt; }

CommandSettings command_settings(const ParsedArgs& parsed) {
  CommandSettings s;
  const auto& operands = parsed.operands();
  s.command.assign(operands.begin() + 1, operands.end());
  if (auto v = parsed.value("timeout")) s.timeout = parse_duration(*v, "--timeout");
  if (auto v = parsed.value("kill-after")) s.kill_after = parse_duration(*v, "--kill-after");
  if (auto v = parsed.value("status-file")) {
    if (v->empty()) throw UsageError("--status-file needs a PATH");
    s.status_file = *v;
  }
  return s;
}

int run_grant_verb(const GrantVerb& verb, const std::vector<std::string>& args) {
  // Outside the body, so that an error reported by run_reporting_errors is
  // written too.
  std::optional<StatusFile> status;
  const int zkr_exit = run_reporting_errors(verb.name, [&]() -> int {
    // Options end at CMD's first word: what follows is CMD's.
    const auto parsed = parse_args(args, verb.specs, 1);
    if (parsed.has("help")) {
      std::fputs(verb.help().c_str(), stdout);
      return exit_code::ok;
    }
    const auto plan = verb.plan(parsed);
    const auto connection = connection_settings(parsed);
    if (plan.run.status_file) status.emplace(*plan.run.status_file);
    auto log = cli_logger(connection.verbosity);
    // Before any thread exists (grant_run.hpp).
    const auto inbox = supervision_inbox(*log);

    auto client = open_client(connection);
    const auto grant = plan.make_grant(*client);
    StatusFile* status_file = status ? &*status : nullptr;
    const auto waited =
        wait_for_grant(*client, connection, plan.wait_path, *inbox, status_file, *log,
                       [&](std::stop_token stop) { return grant->acquire(stop); });
    if (auto code = grant->refused(waited, status_file)) return *code;
    if (auto code = end_of_wait(waited, plan.wait_path, plan.run.timeout, status_file,
                                [&] { grant->release(); }))
      return *code;

    const auto held = grant->grant();
    if (!held) {
      print_error(plan.held + " was lost before the command started");
      if (status_file) status_file->write("lock_lost", exit_code::lock_lost, std::nullopt);
      return exit_code::lock_lost;
    }
    const GrantRun run{.held = plan.held,
                       .command = plan.run.command,
                       .env = grant->granted(*held, *log, status_file),
                       .kill_after = plan.run.kill_after,
                       .session_timeout = connection.session_timeout};
    const int code = run_under_grant(*client, *held, run, *inbox, status_file, *log);
    grant->release();
    return code;
  });
  if (status && !status->written()) status->write("error", zkr_exit, std::nullopt);
  return zkr_exit;
}

}  // namespace zkr::cli
