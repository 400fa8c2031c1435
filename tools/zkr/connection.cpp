#include "connection.hpp"

#include <cstdlib>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "zkr/retry.hpp"

namespace zkr::cli {
namespace {

std::optional<spdlog::level::level_enum> level_from_env() {
  // The library reads ZKR_LOG_LEVEL the same way for its own default logger;
  // we make the logger ourselves (to honour -v), so we read it here too.
  const char* env = std::getenv("ZKR_LOG_LEVEL");
  if (!env) return std::nullopt;
  const std::string_view v(env);
  using spdlog::level::level_enum;
  if (v == "trace") return level_enum::trace;
  if (v == "debug") return level_enum::debug;
  if (v == "info") return level_enum::info;
  if (v == "warn" || v == "warning") return level_enum::warn;
  if (v == "error") return level_enum::err;
  if (v == "critical") return level_enum::critical;
  if (v == "off") return level_enum::off;
  return std::nullopt;
}

}  // namespace

std::vector<OptionSpec> connection_option_specs() {
  return {
      {"connect", 'c', true, "HOSTS",
       "ZooKeeper ensemble, host:port[,host:port...] (default $ZK_CONNECT)"},
      {"session-timeout", 0, true, "D", "session timeout asked of the server (default 15s)"},
      {"connect-timeout", 0, true, "D",
       "give up if the ensemble cannot be reached in D (default 15s)"},
      {"verbose", 'v', false, "", "log more on stderr (-vv, -vvv: more still)"},
      {"help", 'h', false, "", "show this help"},
  };
}

std::string connection_help_footer() {
  return "Durations: 500ms, 10s, 2m, 1h (a bare number is seconds).\n"
         "Environment: ZK_CONNECT (default ensemble), ZKR_LOG_LEVEL (trace..off, without -v).\n";
}

ConnectionSettings connection_settings(const ParsedArgs& parsed) {
  ConnectionSettings s;
  s.verbosity = parsed.count("verbose");
  if (auto v = parsed.value("connect")) {
    s.connect = *v;
  } else if (const char* env = std::getenv("ZK_CONNECT"); env && *env) {
    s.connect = env;
  }
  if (s.connect.empty())
    throw UsageError("no ensemble given: pass --connect HOSTS or set ZK_CONNECT");
  if (auto v = parsed.value("session-timeout"))
    s.session_timeout = parse_duration(*v, "--session-timeout");
  if (auto v = parsed.value("connect-timeout"))
    s.connect_timeout = parse_duration(*v, "--connect-timeout");
  if (s.session_timeout.count() <= 0) throw UsageError("--session-timeout must be more than 0");
  // The C client takes it in int milliseconds (24.8 days at most); servers
  // cap it far lower anyway (maxSessionTimeout, 40 s by default).
  if (s.session_timeout > std::chrono::hours(24 * 24))
    throw UsageError("--session-timeout: at most 24d, got " + *parsed.value("session-timeout"));
  if (s.connect_timeout.count() <= 0) throw UsageError("--connect-timeout must be more than 0");
  return s;
}

std::shared_ptr<spdlog::logger> cli_logger(int verbosity) {
  if (auto existing = spdlog::get("zkr")) return existing;
  auto logger = std::make_shared<spdlog::logger>(
      "zkr", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  logger->set_pattern("zkr %^%l%$: %v");
  using spdlog::level::level_enum;
  if (verbosity >= 3) logger->set_level(level_enum::trace);
  else if (verbosity == 2) logger->set_level(level_enum::debug);
  else if (verbosity == 1) logger->set_level(level_enum::info);
  else logger->set_level(level_from_env().value_or(level_enum::warn));
  try {
    spdlog::register_logger(logger);
  } catch (const spdlog::spdlog_ex&) {
    if (auto existing = spdlog::get("zkr")) return existing;
  }
  return logger;
}

std::unique_ptr<Client> open_client(const ConnectionSettings& settings) {
  ClientOptions options;
  options.connect_string = settings.connect;
  options.session_timeout = settings.session_timeout;
  // An operation waits this long for a connection before failing: the same
  // bound as the first connection, so no verb outlives it on a dead ensemble.
  options.connection_timeout = settings.connect_timeout;
  // Registered under "zkr", so that the library logs through it too.
  cli_logger(settings.verbosity);
  return std::make_unique<Client>(std::move(options));
}

void wait_connected(Client& client, const ConnectionSettings& settings) {
  if (!client.block_until_connected(settings.connect_timeout))
    throw Unreachable("cannot reach ZooKeeper at " + settings.connect + " within " +
                      format_duration(settings.connect_timeout) +
                      " (is it running? see --connect, --connect-timeout)");
}

}  // namespace zkr::cli
