// zkr/log.hpp: where the library's log lines go.
//
// By default to the spdlog logger named "zkr" (the application's, if it
// registered one under that name; else one writing to stderr at the level in
// ZKR_LOG_LEVEL, warn when unset). An application that logs some other way
// passes a handler instead; spdlog stays the library's private dependency.
// (The ZooKeeper C client's own lines, whose log is process-wide and says not
// whose session wrote them, always go to the "zkr" logger.)
//
//   zkr::ClientOptions options;
//   options.logging.level = zkr::LogLevel::info;
//   options.logging.handler = [](zkr::LogLevel level, std::string_view line) {
//     my_log(level >= zkr::LogLevel::warn ? kAlert : kInfo, line);
//   };
#pragma once

#include <functional>
#include <optional>
#include <string_view>

namespace zkr {

// The levels of a log line, lowest first; `off` as a level lets none through.
enum class LogLevel { trace, debug, info, warn, error, critical, off };

// Takes one line (already formatted, without a trailing newline). Called on
// the library's threads, from several at once: it must be thread-safe, must
// not block for long, and must not call into the Client that logged.
using LogHandler = std::function<void(LogLevel level, std::string_view line)>;

struct Logging {
  // Unset: the "zkr" spdlog logger (see the top of this file).
  LogHandler handler;
  // Lines below it are neither formatted nor passed on. Unset: ZKR_LOG_LEVEL
  // (trace, debug, info, warn, error, critical, off), else warn; with no
  // handler, unset also leaves a "zkr" logger the application registered at
  // its own level.
  std::optional<LogLevel> level;
};

}  // namespace zkr
