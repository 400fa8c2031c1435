// tools/zkr/progress.hpp: "looked at N directories, M nodes" on stderr while
// a walk of a big lock root goes on, at most once a second, and only where
// someone can see it (a terminal, or --progress), so logs stay clean.
//
//   ProgressLine progress(parsed.has("progress"));
//   options.on_progress = progress.callback();
//   ... walk ...
//   progress.finish();
#pragma once

#include <chrono>
#include <functional>

#include "zkr/cleanup.hpp"

namespace zkr::cli {

class ProgressLine {
 public:
  // Shown if `forced`, or if stderr is a terminal.
  explicit ProgressLine(bool forced);
  ~ProgressLine() { finish(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  std::function<void(const WalkProgress&)> callback();
  // Ends the line, if one was shown.
  void finish();

 private:
  void show(const WalkProgress& p);

  bool enabled_;
  bool terminal_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace zkr::cli
