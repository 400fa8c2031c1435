// tools/zkr/json.hpp: a JSON string literal, for `zkr ls --json`. Holder ids
// and znode names are arbitrary bytes; control characters are escaped and
// other bytes pass through (valid UTF-8 in, valid UTF-8 out).
#pragma once

#include <string>
#include <string_view>

namespace zkr::cli {

std::string json_string(std::string_view text);

}  // namespace zkr::cli
