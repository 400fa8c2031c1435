#include "log.hpp"

#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace zkr::detail {

namespace {

// Hands each line to the application's handler. spdlog serialises a sink's
// calls (the mutex), so the handler sees one line at a time from us.
class HandlerSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit HandlerSink(LogHandler handler) : handler_(std::move(handler)) {}

 private:
  void sink_it_(const spdlog::details::log_msg& message) override {
    handler_(ours(message.level), std::string_view(message.payload.data(), message.payload.size()));
  }
  void flush_() override {}

  static LogLevel ours(spdlog::level::level_enum level) {
    using spdlog::level::level_enum;
    switch (level) {
      case level_enum::trace: return LogLevel::trace;
      case level_enum::debug: return LogLevel::debug;
      case level_enum::info: return LogLevel::info;
      case level_enum::warn: return LogLevel::warn;
      case level_enum::err: return LogLevel::error;
      case level_enum::critical: return LogLevel::critical;
      default: return LogLevel::off;
    }
  }

  const LogHandler handler_;
};

spdlog::level::level_enum spdlog_level(LogLevel level) {
  using spdlog::level::level_enum;
  switch (level) {
    case LogLevel::trace: return level_enum::trace;
    case LogLevel::debug: return level_enum::debug;
    case LogLevel::info: return level_enum::info;
    case LogLevel::warn: return level_enum::warn;
    case LogLevel::error: return level_enum::err;
    case LogLevel::critical: return level_enum::critical;
    case LogLevel::off: return level_enum::off;
  }
  return level_enum::off;
}

spdlog::level::level_enum level_from_env() {
  const char* env = std::getenv("ZKR_LOG_LEVEL");
  return (env ? parse_log_level(env) : std::nullopt).value_or(spdlog::level::warn);
}

}  // namespace

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

std::shared_ptr<spdlog::logger> make_logger(const Logging& logging) {
  if (!logging.handler && !logging.level) return default_logger();
  std::shared_ptr<spdlog::logger> logger;
  if (logging.handler) {
    logger =
        std::make_shared<spdlog::logger>("zkr", std::make_shared<HandlerSink>(logging.handler));
  } else {
    const auto shared = default_logger();
    logger =
        std::make_shared<spdlog::logger>("zkr", shared->sinks().begin(), shared->sinks().end());
  }
  logger->set_level(logging.level ? spdlog_level(*logging.level) : level_from_env());
  return logger;
}

}  // namespace zkr::detail
