// tools/zkr/signal_inbox.hpp: signals and cross-thread wake-ups, read by one
// thread in one place, with a deadline.
//
// zkr must notice, while it waits for a lock or for its command: a signal to
// pass on (SIGINT, SIGTERM, ...), its command's exit (SIGCHLD), and news from
// the library's threads (acquired, lock lost). Signal handlers could only set
// flags; instead the signals are blocked in every thread and read from a
// signalfd, and the other threads write to an eventfd: one poll() waits for
// all of it, with no polling loop and no async-signal-safety puzzles.
//
//   SignalInbox inbox({SIGINT, SIGTERM, SIGCHLD});   // before any thread starts
//   std::thread worker([&] { ...; inbox.wake(); });
//   auto event = inbox.wait(deadline);              // signal, woken or deadline
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <initializer_list>
#include <optional>

namespace zkr::cli {

class SignalInbox {
 public:
  struct Event {
    enum class Kind { signal, woken, deadline } kind = Kind::deadline;
    int signo = 0;
    // Sent by a process with kill() (SI_USER, SI_QUEUE, SI_TKILL), not made by
    // the kernel (a terminal's ^C, a child's exit).
    bool from_process = false;
    pid_t sender = 0;
  };

  // Blocks the given signals in the calling thread, and so in every thread it
  // starts later: construct it before any other thread exists. Signals
  // ignored when zkr started (nohup, a shell's background job) stay ignored
  // and are not handled, so the command inherits them ignored, as it would
  // without zkr. SIGCHLD, if given and ignored, is reset to its default:
  // zkr must see its command exit. Throws std::system_error.
  explicit SignalInbox(std::initializer_list<int> signals);
  // Restores the signal mask of the constructing thread.
  ~SignalInbox();
  SignalInbox(const SignalInbox&) = delete;
  SignalInbox& operator=(const SignalInbox&) = delete;

  // Makes wait() return `woken`. Any thread; several wakes before a wait may
  // come out as one, so the waiter re-checks everything it cares about.
  void wake() noexcept;

  // The next signal or wake-up, or `deadline` when the time is up (nullopt:
  // no deadline).
  Event wait(std::optional<std::chrono::steady_clock::time_point> deadline);

  // The mask zkr started with: what a command it runs must start with.
  const sigset_t& original_mask() const noexcept { return original_mask_; }

 private:
  sigset_t handled_{};
  sigset_t original_mask_{};
  int signal_fd_ = -1;
  int wake_fd_ = -1;
};

}  // namespace zkr::cli
