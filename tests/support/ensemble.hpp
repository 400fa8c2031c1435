// Access to the live ensemble that integration tests run against.
//
// scripts/test starts an ensemble and exports ZK_CONNECT, ZKR_ENSEMBLE_DIR and
// ZKR_ENSEMBLE_SCRIPT. A user may point the tests at their own ensemble with
// ZK_CONNECT alone: then tests that inject server faults skip themselves.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "zkr/client.hpp"
#include "zkr/keeper.hpp"

namespace zkr::test {

// The connect string, or "" when no ensemble is configured.
std::string connect_string();

// The port of the first server in the connect string ("127.0.0.1:PORT,..."):
// where a test's TCP proxy forwards to.
int first_server_port();

// A Client of `hosts` with this session timeout, connected; throws
// std::runtime_error if it is not within 30 s.
std::unique_ptr<Client> connected_client(const std::string& hosts,
                                         std::chrono::milliseconds session_timeout);

// A Client of these options, connected; throws std::runtime_error if it is
// not within 30 s.
std::unique_ptr<Client> connected_client(ClientOptions options);

// A TCP port on 127.0.0.1 that nothing listens on: one the kernel gave a
// socket, closed again. For a connect string with no server behind it.
int unused_port();

// Removes path and everything below it, children first, for a test's
// cleanup: best effort, a node that cannot be removed is left. A node the
// test may not list (an ACL without read) is still removed if it has no
// children.
void remove_tree(Keeper& keeper, const std::string& path);

// True when the fault verbs (kill, freeze, ...) can be used on the ensemble.
bool can_inject_server_faults();

// Runs `scripts/ensemble VERB ARGS` on the test ensemble and returns its stdout
// (trimmed). Throws std::runtime_error with its stderr if it fails. A verb that
// disturbs the servers (kill, freeze, ...) first calls require_whole_ensemble.
// The script's kill and freeze first wait (as its verb `synced` does) until a
// leader has every other running server in sync and caught up, so that the
// rest keep a quorum and lose nothing committed.
std::string ensemble(const std::string& verb_and_args);

// Live tests run two at a time on the one ensemble (scripts/test gives ctest
// tests/ctest-resources.json). A test that stops servers, or counts what the
// servers did (zxids), must have the ensemble to itself: tests/CMakeLists.txt
// names it in ZKR_WHOLE_ENSEMBLE_TESTS. Throws std::logic_error, naming
// `why`, when ctest allotted this test less than the whole ensemble; does
// nothing when ctest allots no resources (a test binary run by hand).
void require_whole_ensemble(const std::string& why);

// The zxid the servers give the next write: a probe node's czxid, made and
// removed in `dir`. Every write request takes one, a refused conditional write
// too, so the difference of two is the writes in between: of this test alone,
// which is why it requires the whole ensemble.
std::int64_t next_zxid(Keeper& keeper, const std::string& dir);

// Index (1-based) of the server listening on "127.0.0.1:PORT", or 0.
int server_index_of(const std::string& host_port);

// A path unique to this test run and test case, e.g. "/t-<pid>-<n>-<name>".
std::string unique_path(const std::string& name);

// Expires `victim`'s session the way the server does it for real: joins the
// session from a second handle (same id and password), then closes that
// handle, until a join is answered "expired". Returns once the servers have
// ended the session; throws std::runtime_error if that takes past `timeout`.
void expire_session(const Keeper& victim,
                    std::chrono::milliseconds timeout = std::chrono::seconds(20));

// Waits until `client` is connected in a session after its session `epoch`
// (Client::session_epoch()): after an expiry, the Client hears of it and
// makes a new session in its own time. False if that takes past `timeout`.
[[nodiscard]] bool wait_new_session(Client& client, std::uint64_t epoch,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(30));

// Index (1-based) of the server `keeper` is connected to; throws if none.
int connected_server(const Keeper& keeper);

// Runs an ensemble verb ("restart 2", "thaw 1") when it goes out of scope,
// unless done already, so a failed assertion never leaves the ensemble broken
// for the tests that follow.
class Repair {
 public:
  explicit Repair(std::string verb) : verb_(std::move(verb)) {}
  ~Repair();
  Repair(const Repair&) = delete;
  Repair& operator=(const Repair&) = delete;
  void now();

 private:
  std::string verb_;
};

}  // namespace zkr::test

// In a test body: skip unless an ensemble is configured (and faults possible).
#define ZKR_REQUIRE_ENSEMBLE()                                           \
  do {                                                                   \
    if (::zkr::test::connect_string().empty())                           \
      GTEST_SKIP() << "no ensemble: set ZK_CONNECT or run scripts/test"; \
  } while (0)
#define ZKR_REQUIRE_SERVER_FAULTS()                                             \
  do {                                                                          \
    if (!::zkr::test::can_inject_server_faults())                               \
      GTEST_SKIP() << "no fault verbs: run scripts/test (ZKR_ENSEMBLE_SCRIPT)"; \
  } while (0)
