// zkr-chaos-ticker: the command a chaos supervisor runs under `zkr lock`
// (zkr_supervisors.hpp). While it runs it makes progress the servers can
// date: every kTickEvery it creates a persistent sequential node
//
//   TICK_DIR/<name of $ZKR_LOCK_NODE>-t<sequence>
//
// with no fencing at all, so a tick lands whenever the process runs. The
// checker puts each tick's zxid beside the lives of the lock nodes: a tick
// that lands after its lock node is gone, or while a node before it still
// lives, is work done outside the lock (rule command_outside_lock).
//
//   zkr-chaos-ticker CONNECT TICK_DIR HOLD_MS RUN_DIR [--escape]
//
// It ticks for HOLD_MS, then exits 0. While it runs, RUN_DIR/held-<zkr pid>
// names the lock node, so that the nemesis can find a holding zkr (the file
// may outlive a killed ticker; the lock node's life says if it still holds).
// Its own session is long (30 s): a stop of its group must not end it, or
// the ticks would stop for a reason of their own.
//
// SIGTERM (zkr's, once its lock is lost) ends it as a careful command ends:
// the tick under way is answered first (SIGTERM is blocked, and taken only
// between ticks), then it exits with 128+SIGTERM as if killed. zkr releases
// the lock only once its group is gone, so no tick of a command that ended
// can land after its lock node: a process killed while its request is on the
// way could land one later, which no lock can prevent without fencing (a
// command that must not is given ZKR_FENCING_TOKEN).
//
// --escape is the control's broken command: the ticking moves to a child
// that leaves zkr's process group (setsid), so zkr's guard can stop nothing
// of it; the parent, still in the group, waits for it, so zkr holds the lock
// as long as the ticks go on when nobody stops zkr.
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "zkr/client.hpp"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr auto kTickEvery = 100ms;

int tick(const std::string& connect, const std::string& tick_dir, std::chrono::milliseconds hold,
         const std::string& node) {
  // Blocked before the Client's threads start, so that they inherit it.
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, nullptr);
  zkr::ClientOptions options;
  options.connect_string = connect;
  options.session_timeout = 30s;
  zkr::Client client(options);
  if (!client.block_until_connected(30s)) {
    std::cerr << "zkr-chaos-ticker: no connection to " << connect << "\n";
    return 3;
  }
  const auto name = node.substr(node.rfind('/') + 1);
  const auto until = Clock::now() + hold;
  while (Clock::now() < until) {
    try {
      // The outcome does not matter here: the servers' record says if and
      // when it landed.
      (void)client.keeper()->try_create(tick_dir + "/" + name + "-t", "",
                                        zkr::CreateMode::persistent_sequential);
    } catch (const std::exception&) {
    }
    const auto pause_ns = std::chrono::nanoseconds(kTickEvery).count();
    const timespec pause{pause_ns / 1'000'000'000, pause_ns % 1'000'000'000};
    if (::sigtimedwait(&term, nullptr, &pause) == SIGTERM) return 128 + SIGTERM;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5 && !(argc == 6 && std::string(argv[5]) == "--escape")) {
    std::cerr << "usage: zkr-chaos-ticker CONNECT TICK_DIR HOLD_MS RUN_DIR [--escape]\n";
    return 64;
  }
  const char* node = std::getenv("ZKR_LOCK_NODE");
  if (!node || !*node) {
    std::cerr << "zkr-chaos-ticker: no ZKR_LOCK_NODE (run it under zkr lock)\n";
    return 64;
  }
  const std::string connect = argv[1], tick_dir = argv[2], run_dir = argv[4];
  const std::chrono::milliseconds hold(std::atoll(argv[3]));
  const auto held = run_dir + "/held-" + std::to_string(::getppid());
  std::ofstream(held) << node << "\n";
  int rc = 0;
  if (argc == 6) {
    const pid_t child = ::fork();
    if (child < 0) return 3;
    if (child == 0) {
      ::setsid();
      ::_exit(tick(connect, tick_dir, hold, node));
    }
    int status = 0;
    pid_t waited = -1;
    do waited = ::waitpid(child, &status, 0);
    while (waited < 0 && errno == EINTR);
    rc = waited == child && WIFEXITED(status) ? WEXITSTATUS(status) : 3;
  } else {
    rc = tick(connect, tick_dir, hold, node);
  }
  std::remove(held.c_str());
  return rc;
}
