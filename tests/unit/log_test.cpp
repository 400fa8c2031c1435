// The logger a Client or Keeper makes of its Logging options (src/log.hpp).
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <spdlog/logger.h>

#include "log.hpp"
#include "zkr/log.hpp"

namespace zkr {
namespace {

struct Seen {
  std::mutex mutex;
  std::vector<std::pair<LogLevel, std::string>> lines;
  Logging logging(std::optional<LogLevel> level) {
    return Logging{[this](LogLevel l, std::string_view line) {
                     std::lock_guard lock(mutex);
                     lines.emplace_back(l, std::string(line));
                   },
                   level};
  }
};

TEST(Log, NothingAskedIsTheSharedZkrLogger) {
  EXPECT_EQ(detail::make_logger({}), detail::default_logger());
}

TEST(Log, EachLevelReachesTheHandlerAsItself) {
  Seen seen;
  const auto log = detail::make_logger(seen.logging(LogLevel::trace));
  log->trace("t {}", 1);
  log->debug("d {}", 2);
  log->info("i {}", 3);
  log->warn("w {}", 4);
  log->error("e {}", 5);
  log->critical("c {}", 6);
  const std::vector<std::pair<LogLevel, std::string>> expected{
      {LogLevel::trace, "t 1"}, {LogLevel::debug, "d 2"}, {LogLevel::info, "i 3"},
      {LogLevel::warn, "w 4"},  {LogLevel::error, "e 5"}, {LogLevel::critical, "c 6"}};
  EXPECT_EQ(seen.lines, expected);
}

TEST(Log, LinesBelowTheLevelAreDropped) {
  Seen seen;
  const auto log = detail::make_logger(seen.logging(LogLevel::error));
  log->info("not this");
  log->warn("nor this");
  log->error("this");
  ASSERT_EQ(seen.lines.size(), 1u);
  EXPECT_EQ(seen.lines[0].second, "this");
}

TEST(Log, OffPassesNothing) {
  Seen seen;
  const auto log = detail::make_logger(seen.logging(LogLevel::off));
  log->critical("no");
  EXPECT_TRUE(seen.lines.empty());
}

TEST(Log, ALevelWithoutAHandlerLeavesTheSharedLoggerAlone) {
  const auto shared = detail::default_logger();
  const auto before = shared->level();
  const auto quiet = detail::make_logger(Logging{{}, LogLevel::off});
  EXPECT_NE(quiet, shared);
  EXPECT_EQ(quiet->level(), spdlog::level::off);
  EXPECT_EQ(shared->level(), before);
}

}  // namespace
}  // namespace zkr
