#include "progress.hpp"

#include <unistd.h>

#include <cstdio>

#include "args.hpp"

namespace zkr::cli {

ProgressLine::ProgressLine(bool forced)
    : enabled_(forced || ::isatty(STDERR_FILENO) == 1),
      terminal_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

std::function<void(const WalkProgress&)> ProgressLine::callback() {
  if (!enabled_) return {};
  return [this](const WalkProgress& p) { show(p); };
}

void ProgressLine::show(const WalkProgress& p) {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::seconds(1)) return;
  last_ = now;
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(now - start_);
  // On a terminal the line rewrites itself; elsewhere (--progress into a
  // file) each report is a line of its own.
  std::fprintf(stderr, "%szkr: %llu directories, %llu nodes looked at (%s)%s",
               terminal_ ? "\r" : "", static_cast<unsigned long long>(p.directories),
               static_cast<unsigned long long>(p.nodes), format_duration(elapsed).c_str(),
               terminal_ ? "" : "\n");
  std::fflush(stderr);
  shown_ = true;
}

void ProgressLine::finish() {
  if (shown_ && terminal_) std::fputc('\n', stderr);
  shown_ = false;
}

}  // namespace zkr::cli
