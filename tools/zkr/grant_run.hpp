// tools/zkr/grant_run.hpp: what `zkr lock`, `zkr elect` and `zkr member`
// share: waiting for a grant with signals watched, and running a command only
// while that grant is held, whatever made the grant (a lock, a semaphore, a
// leader latch's term, a group registration: each is a Grant). The safety of
// these verbs lives here, once; grant_verb.hpp wires the steps together.
//
//   1. wait_for_grant: the verb's acquire runs on this thread, signals are
//      watched on another: a signal stops the acquire (which takes our node
//      out of the queue) and zkr exits 128+S; a second one while that is
//      under way closes the session; a timeout exits 75 (end_of_wait);
//   2. run_under_grant: the command runs in a process group of its own
//      (command.hpp), supervised until the whole group is gone
//      (supervisor.hpp): signals passed on, and if the grant is lost the
//      group is terminated and zkr exits 79; a guard process kills the group
//      if zkr dies, and stops it while zkr cannot prove its grant
//      (grant_watch.hpp);
//   3. after the group is gone, the server is asked whether the grant is
//      still ours, so that the command's own code is returned only if the
//      grant was held throughout.
// The verb releases its grant afterwards (step 4), whatever happened.
//
//   auto inbox = supervision_inbox(log);            // before any thread
//   auto waited = wait_for_grant(client, connection, path, inbox, status, log,
//                                [&](std::stop_token stop) { return lock.acquire(timeout, stop); });
//   if (auto code = end_of_wait(waited, path, timeout, status, [&] { lock.release(); })) return *code;
//   const int code = run_under_grant(client, lock.grant(), run, inbox, status, log);
//   lock.release();
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "connection.hpp"
#include "signal_inbox.hpp"
#include "status_file.hpp"
#include "zkr/client.hpp"
#include "zkr/lock.hpp"

namespace spdlog {
class logger;
}

namespace zkr::cli {

// The signals zkr handles while it waits and supervises, blocked in this
// thread (SignalInbox); and zkr made the child subreaper of the command's
// tree, so that it sees every process of the group exit. Before any other
// thread exists, so that every thread inherits the blocked mask.
std::unique_ptr<SignalInbox> supervision_inbox(spdlog::logger& log);

// The outcome of step 1.
struct Waited {
  bool acquired = false;
  std::optional<int> signal;  // that stopped the wait
  std::exception_ptr error;
};

// Connects, then calls `acquire(stop)` on this thread: true once the grant
// is ours, false if it timed out or `stop` was stopped. SIGTSTP while waiting
// stops zkr; a handled signal stops `stop`; a second one closes the session
// and ends zkr at once (128+S, written to `status`). `path` names the wait in
// messages.
Waited wait_for_grant(Client& client, const ConnectionSettings& connection, const std::string& path,
                      SignalInbox& inbox, StatusFile* status, spdlog::logger& log,
                      const std::function<bool(std::stop_token)>& acquire);

// zkr's exit code when the wait did not give a grant: 128+S for a signal
// (`give_back` releases a grant granted as the signal came), 75 for a
// timeout, said on stderr and written to `status`. Rethrows the wait's
// error. nullopt: the grant is ours, go on.
std::optional<int> end_of_wait(const Waited& waited, const std::string& path,
                               std::optional<std::chrono::milliseconds> timeout, StatusFile* status,
                               const std::function<void()>& give_back);

struct GrantRun {
  std::string held;                  // what is held, for messages: "lock /a", "leadership of /a"
  std::vector<std::string> command;  // argv
  std::vector<std::string> env;      // "NAME=value" added to the command's environment
  std::chrono::milliseconds kill_after{10'000};       // SIGKILL this long after SIGTERM
  std::chrono::milliseconds session_timeout{15'000};  // for the server's confirmation
};

// Steps 2 and 3 for `grant`, granted in `client`'s session: zkr's exit code
// (the command's own only if the server confirmed the grant after the group
// was gone; 79 if it was lost; 126, 127 if the command could not run),
// written to `status`. Throws what supervision cannot recover from (the
// group is killed first).
int run_under_grant(Client& client, const Grant& grant, const GrantRun& run, SignalInbox& inbox,
                    StatusFile* status, spdlog::logger& log);

}  // namespace zkr::cli
