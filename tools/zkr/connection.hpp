// tools/zkr/connection.hpp: what every verb that talks to ZooKeeper shares:
// the connection options, the logger, and a Client that is connected within
// a deadline or reported unreachable (zkr never hangs on a dead ensemble).
//
//   auto specs = connection_option_specs();          // --connect, --session-timeout, ...
//   auto parsed = parse_args(args, specs);
//   auto settings = connection_settings(parsed);      // UsageError if no ensemble given
//   auto client = open_client(settings);             // not waiting yet
//   wait_connected(*client, settings);               // Unreachable after --connect-timeout
#pragma once

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "args.hpp"
#include "zkr/client.hpp"

namespace spdlog {
class logger;
}

namespace zkr::cli {

// The ensemble did not answer within the connect deadline (exit_code::unavailable).
class Unreachable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ConnectionSettings {
  std::string connect;                                // --connect, else $ZK_CONNECT
  std::chrono::milliseconds session_timeout{15'000};  // --session-timeout
  std::chrono::milliseconds connect_timeout{15'000};  // --connect-timeout
  int verbosity = 0;                                  // -v count
};

// --connect, --session-timeout, --connect-timeout, -v, and --help.
std::vector<OptionSpec> connection_option_specs();
// The help text of those options' environment: $ZK_CONNECT, $ZKR_LOG_LEVEL.
std::string connection_help_footer();

// Throws UsageError for bad durations, or when neither --connect nor
// $ZK_CONNECT names an ensemble.
ConnectionSettings connection_settings(const ParsedArgs& parsed);

// The "zkr" logger on stderr (the library logs through it too): warn, or
// $ZKR_LOG_LEVEL, without -v; info, debug, trace with -v, -vv, -vvv.
std::shared_ptr<spdlog::logger> cli_logger(int verbosity);

// A Client that starts connecting in the background. Throws
// std::invalid_argument for a bad host list.
std::unique_ptr<Client> open_client(const ConnectionSettings& settings);

// Waits up to the connect deadline; throws Unreachable naming the hosts.
void wait_connected(Client& client, const ConnectionSettings& settings);

}  // namespace zkr::cli
