#include "log.hpp"

#include <cstdlib>
#include <mutex>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace zkr::detail {

std::optional<spdlog::level::level_enum> parse_log_level(std::string_view text) {
  // Not spdlog::level::from_str: it turns a typo into "off", silencing the very
  // errors someone raised the level to see.
  using spdlog::level::level_enum;
  if (text == "trace") return level_enum::trace;
  if (text == "debug") return level_enum::debug;
  if (text == "info") return level_enum::info;
  if (text == "warn" || text == "warning") return level_enum::warn;
  if (text == "error") return level_enum::err;
  if (text == "critical") return level_enum::critical;
  if (text == "off") return level_enum::off;
  return std::nullopt;
}

std::shared_ptr<spdlog::logger> default_logger() {
  // The mutex makes "look up, else create and register" one step for our own
  // callers; an application registering "zkr" at the same moment is handled by
  // the catch below.
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  if (auto existing = spdlog::get("zkr")) return existing;

  auto logger = std::make_shared<spdlog::logger>(
      "zkr", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  const char* env = std::getenv("ZKR_LOG_LEVEL");
  const auto level = env ? parse_log_level(env) : std::nullopt;
  logger->set_level(level.value_or(spdlog::level::warn));
  try {
    spdlog::register_logger(logger);
  } catch (const spdlog::spdlog_ex&) {
    if (auto existing = spdlog::get("zkr")) return existing;
  }
  if (env && !level) {
    logger->warn(
        "ZKR_LOG_LEVEL={} is not one of trace, debug, info, warn, error, off; "
        "using warn",
        env);
  }
  return logger;
}

}  // namespace zkr::detail
