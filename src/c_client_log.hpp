// The C client's log, through spdlog: its lines at our levels, its level set
// from ours (see c_keeper.cpp, which installs both).
#pragma once

#include <zookeeper/zookeeper.h>

#include <spdlog/common.h>

namespace zkr::detail {

// The C client's log callback: one formatted line, no context.
void forward_c_log(const char* message);
// The C client's level for our logger's level.
ZooLogLevel c_log_level(spdlog::level::level_enum level);

}  // namespace zkr::detail
