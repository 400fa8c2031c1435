// src/log.hpp (internal): the library's loggers.
//
// Every part of zkrecipes logs through one spdlog logger named "zkr" unless the
// caller passes a handler of its own (zkr/log.hpp). Its level comes from
// ZKR_LOG_LEVEL (trace, debug, info, warn, error, off), warn when unset, so that
// a library stays quiet by default and can be made talkative without a rebuild.
//
//   auto log = zkr::detail::default_logger();
//   log->warn("session {:#x} expired", id);
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include <spdlog/logger.h>

#include "zkr/log.hpp"

namespace zkr::detail {

// The "zkr" logger: the one registered with spdlog under that name if the
// application made one (its level is then left alone), else one writing to
// stderr, created and registered on first use. Thread-safe.
std::shared_ptr<spdlog::logger> default_logger();

// The logger for a Client's or a Keeper's options: default_logger() when
// they ask for nothing; else one of our own, named "zkr", writing to their
// handler (or, with only a level, to default_logger()'s sinks) at their level.
std::shared_ptr<spdlog::logger> make_logger(const Logging& logging);

// Parses a ZKR_LOG_LEVEL value ("warning" and "critical" accepted too);
// nullopt for anything else.
std::optional<spdlog::level::level_enum> parse_log_level(std::string_view text);

}  // namespace zkr::detail
