#include "c_client_log.hpp"

#include <algorithm>
#include <string_view>
#include <utility>

#include <spdlog/spdlog.h>

#include "log.hpp"

namespace zkr::detail {

// The C client formats "<time>:<pid>(<tid>):ZOO_WARN@<function>@<line>: <text>";
// keep its level and "<function>@<line>: <text>", since spdlog adds the rest.
void forward_c_log(const char* message) {
  std::string_view text = message ? message : "";
  auto level = spdlog::level::warn;
  static constexpr std::pair<std::string_view, spdlog::level::level_enum> kTags[] = {
      {"ZOO_ERROR@", spdlog::level::err},
      {"ZOO_WARN@", spdlog::level::warn},
      {"ZOO_INFO@", spdlog::level::info},
      {"ZOO_DEBUG@", spdlog::level::debug},
  };
  for (const auto& [tag, tag_level] : kTags) {
    if (const auto at = text.find(tag); at != std::string_view::npos) {
      level = tag_level;
      text.remove_prefix(at + tag.size());
      break;
    }
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  // A lost or refused connection, a timed-out one, an expired session, and the
  // pause after trying every server: the C client logs them as ERROR and WARN,
  // but they are the link coming and going, which the Client reports as
  // connection states at its own levels. Other errors keep their level.
  static constexpr std::string_view kLinkNews[] = {"zk retcode=-4,", "zk retcode=-7,",
                                                   "zk retcode=-112,",
                                                   "Delaying connection after exhaustively trying"};
  for (const auto news : kLinkNews)
    if (text.find(news) != std::string_view::npos) level = std::min(level, spdlog::level::info);
  default_logger()->log(level, "zookeeper client: {}", text);
}

// The C client's INFO lines are routine chatter (one per connect, close,
// environment line), so they come with our debug level, not with info.
ZooLogLevel c_log_level(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug: return ZOO_LOG_LEVEL_DEBUG;
    case spdlog::level::info:
    case spdlog::level::warn: return ZOO_LOG_LEVEL_WARN;
    case spdlog::level::err:
    case spdlog::level::critical: return ZOO_LOG_LEVEL_ERROR;
    default: return static_cast<ZooLogLevel>(0);  // off: the C client logs nothing
  }
}

}  // namespace zkr::detail
