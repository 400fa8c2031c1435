#include "zkr_supervisors.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <random>

#include "event_log.hpp"

namespace zkr::chaos {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

SupervisorPool::SupervisorPool(SupervisorSettings settings) : settings_(std::move(settings)) {
  running_.resize(static_cast<std::size_t>(settings_.count));
}

SupervisorPool::~SupervisorPool() { (void)stop(0ms); }

void SupervisorPool::start() {
  for (int slot = 0; slot < settings_.count; ++slot)
    threads_.emplace_back([this, slot] { run_slot(slot); });
}

bool SupervisorPool::owns(pid_t pid) const {
  std::lock_guard lock(mutex_);
  for (const auto& p : running_)
    if (p && p->pid() == pid) return true;
  return false;
}

bool SupervisorPool::signal(pid_t pid, int signo) {
  std::lock_guard lock(mutex_);
  for (const auto& p : running_)
    if (p && p->pid() == pid) {
      p->kill(signo);  // nothing once reaped
      return true;
    }
  return false;
}

void SupervisorPool::run_slot(int slot) {
  std::mt19937_64 rng(settings_.seed * 7919 + static_cast<std::uint64_t>(slot));
  const auto stem = settings_.dir + "/zkr-" + std::to_string(slot);
  EventLog log(stem + ".log");
  for (;;) {
    // Long holds: a stop of zkr early in one outlasts the session, so that a
    // command the guard failed to stop would still be ticking when the lock
    // passes on (the control shows it would be seen).
    const auto hold = 4000 + rng() % 5000;
    std::vector<std::string> argv{"/bin/sh",
                                  "-c",
                                  "exec \"$0\" \"$@\" >>'" + stem + ".out' 2>&1",
                                  settings_.zkr,
                                  "lock",
                                  settings_.lock_path,
                                  "--connect",
                                  settings_.connect,
                                  "--session-timeout",
                                  std::to_string(settings_.session_timeout.count()) + "ms",
                                  "--",
                                  settings_.ticker,
                                  settings_.direct,
                                  settings_.tick_dir,
                                  std::to_string(hold),
                                  settings_.dir};
    if (settings_.escape) argv.push_back("--escape");
    std::shared_ptr<test::ChildProcess> process;
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      try {
        process = std::make_shared<test::ChildProcess>(argv);
      } catch (const std::exception& e) {
        problems_.push_back("supervisor " + std::to_string(slot) + ": " + e.what());
        return;
      }
      running_[static_cast<std::size_t>(slot)] = process;
    }
    const auto from = monotonic_ns();
    const auto status = process->wait_until(Clock::now() + 24h);
    log.write("run", {{"slot", std::to_string(slot)},
                      {"pid", std::to_string(process->pid())},
                      {"from", std::to_string(from)},
                      {"to", std::to_string(monotonic_ns())},
                      {"status", status ? word(test::describe_wait_status(*status)) : "running"}});
    std::lock_guard lock(mutex_);
    running_[static_cast<std::size_t>(slot)].reset();
    // Bad usage, or zkr not found: every later run would fail alike.
    if (status && WIFEXITED(*status) &&
        (WEXITSTATUS(*status) == 64 || WEXITSTATUS(*status) == 127)) {
      problems_.push_back("supervisor " + std::to_string(slot) + " could not run zkr lock (" +
                          test::describe_wait_status(*status) + "): see " + stem + ".out");
      return;
    }
  }
}

std::vector<std::string> SupervisorPool::stop(std::chrono::milliseconds timeout) {
  std::vector<std::shared_ptr<test::ChildProcess>> running;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    for (const auto& p : running_)
      if (p) running.push_back(p);
  }
  for (const auto& p : running) {
    p->kill(SIGCONT);
    p->kill(SIGTERM);
  }
  const auto deadline = Clock::now() + timeout;
  std::vector<std::string> problems;
  for (const auto& p : running)
    if (!p->wait_until(deadline)) {
      if (timeout > 0ms)
        problems.push_back("zkr " + std::to_string(p->pid()) + " did not exit on SIGTERM");
      p->kill(SIGKILL);
    }
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  std::lock_guard lock(mutex_);
  problems.insert(problems.end(), problems_.begin(), problems_.end());
  problems_.clear();
  return problems;
}

}  // namespace zkr::chaos
