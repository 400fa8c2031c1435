// The checker's tests write their records' times in nanoseconds, as the
// workers' event logs do; they count them in milliseconds.
#pragma once

#include <cstdint>

namespace zkr::chaos {

inline constexpr std::int64_t kMs = 1'000'000;  // a millisecond, in nanoseconds

}  // namespace zkr::chaos
