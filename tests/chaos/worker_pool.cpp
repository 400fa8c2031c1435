#include "worker_pool.hpp"

#include <signal.h>

#include <algorithm>

namespace zkr::chaos {

using Clock = std::chrono::steady_clock;

WorkerPool::WorkerPool(WorkerSettings settings) : settings_(std::move(settings)) {
  slots_.resize(static_cast<std::size_t>(settings_.workers));
}

WorkerPool::~WorkerPool() {
  std::lock_guard lock(mutex_);
  for (auto& slot : slots_) {
    if (slot.process) {
      slot.process->kill(SIGKILL);
      slot.process->kill(SIGCONT);
    }
  }
  // ChildProcess destructors reap them.
}

void WorkerPool::spawn(int slot_index) {
  auto& slot = slots_[static_cast<std::size_t>(slot_index)];
  const std::string stem =
      settings_.dir + "/worker-" + std::to_string(slot_index) + "-" + std::to_string(slot.gen);
  std::vector<std::string> argv{settings_.binary,
                                "--connect",
                                settings_.connect,
                                "--root",
                                settings_.root,
                                "--keys",
                                settings_.keys,
                                "--slot",
                                std::to_string(slot_index),
                                "--gen",
                                std::to_string(slot.gen),
                                "--threads",
                                std::to_string(settings_.threads),
                                "--seed",
                                std::to_string(settings_.seed),
                                "--seconds",
                                std::to_string(settings_.seconds),
                                "--session-timeout-ms",
                                std::to_string(settings_.session_timeout.count()),
                                "--log",
                                stem + ".log",
                                "--sessions",
                                settings_.dir + "/sessions-" + std::to_string(slot_index) + "-" +
                                    std::to_string(slot.gen) + ".txt",
                                "--stderr",
                                stem + ".stderr",
                                "--broken",
                                settings_.broken};
  if (!settings_.rw_key.empty()) argv.insert(argv.end(), {"--rw-key", settings_.rw_key});
  if (!settings_.semaphore_key.empty())
    argv.insert(argv.end(), {"--semaphore-key", settings_.semaphore_key, "--semaphore-limit",
                             std::to_string(settings_.semaphore_limit)});
  slot.process = std::make_unique<test::ChildProcess>(argv);
}

void WorkerPool::start_all() {
  std::lock_guard lock(mutex_);
  for (int i = 0; i < settings_.workers; ++i) spawn(i);
}

std::vector<pid_t> WorkerPool::pids() const {
  std::lock_guard lock(mutex_);
  std::vector<pid_t> out;
  for (const auto& slot : slots_)
    if (slot.process) out.push_back(slot.process->pid());
  return out;
}

bool WorkerPool::owns(pid_t pid) const {
  const auto all = pids();
  return std::find(all.begin(), all.end(), pid) != all.end();
}

bool WorkerPool::kill_and_replace(pid_t pid) {
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    auto& slot = slots_[i];
    if (!slot.process || slot.process->pid() != pid) continue;
    slot.process->kill(SIGKILL);
    const bool dead = slot.process->wait_until(Clock::now() + std::chrono::seconds(10)).has_value();
    slot.retired.push_back(std::move(slot.process));
    ++slot.gen;
    spawn(static_cast<int>(i));
    return dead;
  }
  return false;
}

bool WorkerPool::signal(pid_t pid, int signo) {
  std::lock_guard lock(mutex_);
  for (auto& slot : slots_) {
    if (slot.process && slot.process->pid() == pid) {
      slot.process->kill(signo);
      return true;
    }
  }
  return false;
}

std::vector<std::string> WorkerPool::unexpected_exits() {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    auto& p = slots_[i].process;
    if (!p) continue;
    if (const auto status = p->wait_until(Clock::now()))
      out.push_back("worker slot " + std::to_string(i) + " pid " + std::to_string(p->pid()) +
                    " exited on its own: " + test::describe_wait_status(*status));
  }
  return out;
}

std::vector<std::string> WorkerPool::stop_all(std::chrono::milliseconds timeout) {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (auto& slot : slots_) {
    if (!slot.process) continue;
    slot.process->kill(SIGTERM);
    slot.process->kill(SIGCONT);
  }
  const auto deadline = Clock::now() + timeout;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    auto& p = slots_[i].process;
    if (!p) continue;
    const auto status = p->wait_until(deadline);
    const std::string name =
        "worker slot " + std::to_string(i) + " pid " + std::to_string(p->pid());
    if (!status) {
      p->kill(SIGKILL);
      out.push_back(name + " did not stop within " + std::to_string(timeout.count()) +
                    " ms of SIGTERM");
    } else if (*status != 0) {
      out.push_back(name + ": " + test::describe_wait_status(*status));
    }
  }
  return out;
}

}  // namespace zkr::chaos
