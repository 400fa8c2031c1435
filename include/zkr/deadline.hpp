// zkr/deadline.hpp: a relative timeout as a deadline, saturating.
//
// `steady_clock::now() + timeout` overflows the clock's 64-bit nanoseconds for
// a timeout of about 292 years or more (milliseconds::max(), hours::max(),
// 1000 years), which is undefined behaviour and in practice a deadline in the
// past: "wait for ever" would give up at once. Every timed form of the
// library turns its timeout into a deadline here instead, so any duration up
// to duration::max() means "at most that long": one too long for the clock
// is time_point::max() (no deadline that can come), a zero or negative one is
// now (one attempt, no wait).
//
//   const auto deadline = zkr::deadline_after(std::chrono::hours::max());
//   mutex.async_acquire_guard(deadline, {}, on_done);   // waits as long as it takes
#pragma once

#include <chrono>
#include <ratio>
#include <type_traits>

namespace zkr {
namespace detail {

// d in nanoseconds, as a long double: no integer arithmetic, so it cannot
// overflow, and close enough to tell "within a second of the clock's end"
// from "short of it" (the only question it answers).
template <class Rep, class Period>
constexpr long double nanoseconds_of(const std::chrono::duration<Rep, Period>& d) noexcept {
  return static_cast<long double>(d.count()) * static_cast<long double>(Period::num) * 1e9L /
         static_cast<long double>(Period::den);
}

// now + timeout, saturating as described above.
template <class Rep, class Period>
constexpr std::chrono::steady_clock::time_point deadline_after(
    const std::chrono::duration<Rep, Period>& timeout,
    std::chrono::steady_clock::time_point now) noexcept {
  using TimePoint = std::chrono::steady_clock::time_point;
  using Ticks = std::chrono::steady_clock::duration;
  const long double wanted = nanoseconds_of(timeout);
  if (!(wanted > 0)) return now;  // zero, negative (or NaN): no wait
  const long double room = static_cast<long double>(TimePoint::max().time_since_epoch().count()) -
                           static_cast<long double>(now.time_since_epoch().count());
  // Within a second of the end (a margin far wider than the rounding of the
  // two long doubles): no deadline. Below it the exact sum cannot overflow.
  if (wanted >= room - 1e9L) return TimePoint::max();
  return now + std::chrono::ceil<Ticks>(timeout);
}

// t + d for d >= 0, time_point::max() where the sum would pass it: a deadline
// already at the end stays there.
inline std::chrono::steady_clock::time_point later_by(
    std::chrono::steady_clock::time_point t, std::chrono::steady_clock::duration d) noexcept {
  using TimePoint = std::chrono::steady_clock::time_point;
  if (d <= d.zero()) return t;
  if (t > TimePoint::max() - d) return TimePoint::max();
  return t + d;
}

}  // namespace detail

// steady_clock::now() + timeout, saturating: a timeout too long for the clock
// gives time_point::max(), a zero or negative one now. Any duration type.
template <class Rep, class Period>
std::chrono::steady_clock::time_point deadline_after(
    const std::chrono::duration<Rep, Period>& timeout) noexcept {
  return detail::deadline_after(timeout, std::chrono::steady_clock::now());
}

// The time left until t of any clock, as a deadline on steady_clock, by the
// same rules: far enough to pass the clock's end is time_point::max(), past
// is now.
template <class Clock, class Duration>
std::chrono::steady_clock::time_point deadline_at(
    const std::chrono::time_point<Clock, Duration>& t) noexcept {
  const auto now = std::chrono::steady_clock::now();
  if constexpr (std::is_same_v<Clock, std::chrono::steady_clock>) {
    // On the same clock, t is exact: the remaining time of t - now without
    // the subtraction (which a far t or a coarse Duration would overflow).
    if (t.time_since_epoch() <= Duration::zero()) return now;
    const auto at =
        detail::deadline_after(t.time_since_epoch(), std::chrono::steady_clock::time_point{});
    return at < now ? now : at;
  } else {
    const long double left = detail::nanoseconds_of(t.time_since_epoch()) -
                             detail::nanoseconds_of(Clock::now().time_since_epoch());
    return detail::deadline_after(std::chrono::duration<long double, std::nano>(left), now);
  }
}

}  // namespace zkr
