// tools/zkr/grant_verb.hpp: the one shape of `zkr lock`, `zkr elect` and
// `zkr member`: parse the verb's options, connect, wait for the verb's grant
// (a lock, a leader latch's term, a group registration), run the command
// only while it is held (grant_run.hpp), give the grant back, and map every
// outcome to zkr's exit code and status file. A verb supplies only what
// differs: its options, its settings and its grant (CommandGrant).
//
//   int lock_main(const std::vector<std::string>& args) {
//     const auto plan = [](const ParsedArgs& parsed) {
//       const auto settings = lock_settings(parsed);
//       return plan_of<CommandLock>(settings.path, "lock " + settings.path, settings);
//     };
//     return run_grant_verb({.name = "lock", .specs = lock_specs(), .help = lock_help,
//                            .plan = plan},
//                           args);
//   }
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "args.hpp"
#include "grant_run.hpp"
#include "status_file.hpp"
#include "zkr/client.hpp"
#include "zkr/lock.hpp"

namespace spdlog {
class logger;
}

namespace zkr::cli {

// What a verb holds while its command runs, made in the verb's Client.
class CommandGrant {
 public:
  virtual ~CommandGrant() = default;

  // Step 1's acquire (wait_for_grant): true once the grant is ours; false
  // if it timed out or `stop` was stopped.
  virtual bool acquire(std::stop_token stop) = 0;
  // zkr's exit code when the wait ended without the grant for a reason of
  // the verb's own (said and written to `status` here); nullopt: none.
  virtual std::optional<int> refused(const Waited& waited, StatusFile* status);
  // The grant the command runs under; nullopt if it was lost already.
  virtual std::optional<Grant> grant() = 0;
  // Says that `grant` is ours (log, status file) and returns the
  // "NAME=value" entries the command's environment gets of it.
  virtual std::vector<std::string> granted(const Grant& grant, spdlog::logger& log,
                                           StatusFile* status) = 0;
  // Gives the grant back (deletes our node), whatever happened.
  virtual void release() = 0;
};

// What every grant verb is told of its command.
struct CommandSettings {
  std::vector<std::string> command;                  // CMD ARGS...
  std::optional<std::chrono::milliseconds> timeout;  // --timeout; nullopt: wait as long as it takes
  std::chrono::milliseconds kill_after{10'000};      // --kill-after
  std::optional<std::string> status_file;            // --status-file
};

// Reads CommandSettings: CMD is the operands after the first (the verb's
// PATH or GROUP), which the verb has checked are there. Throws UsageError.
CommandSettings command_settings(const ParsedArgs& parsed);

// What the common steps need of a verb's settings, and its grant.
struct GrantPlan {
  std::string wait_path;  // names the wait in messages: "/app/locks/a"
  std::string held;       // names the grant in messages: "lock /app/locks/a"
  CommandSettings run;
  std::function<std::unique_ptr<CommandGrant>(Client&)> make_grant;
};

// The plan of a verb whose grant is a G made in the Client from the verb's
// settings (G(Client&, const Settings&)), which hold its CommandSettings as
// `run`.
template <class G, class Settings>
GrantPlan plan_of(std::string wait_path, std::string held, const Settings& settings) {
  GrantPlan plan;
  plan.wait_path = std::move(wait_path);
  plan.held = std::move(held);
  plan.run = settings.run;
  plan.make_grant = [settings](Client& client) -> std::unique_ptr<CommandGrant> {
    return std::make_unique<G>(client, settings);
  };
  return plan;
}

struct GrantVerb {
  std::string name;               // "lock": for error messages
  std::vector<OptionSpec> specs;  // the verb's options, the connection's included
  std::string (*help)();          // its --help text
  // Reads the verb's settings from its options and operands (throws
  // UsageError); called before the connection's options are read.
  std::function<GrantPlan(const ParsedArgs&)> plan;
};

// Runs the verb on `args` (what follows its name): zkr's exit code.
int run_grant_verb(const GrantVerb& verb, const std::vector<std::string>& args);

}  // namespace zkr::cli
