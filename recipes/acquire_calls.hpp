// What every lock's acquire and release calls share: the checks made before
// anything is sent, deadlines, and errors that name the lock.
#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client_internals.hpp"
#include "grant_state.hpp"
#include "lock_internals.hpp"
#include "zkr/client.hpp"
#include "zkr/error.hpp"
#include "zkr/lock.hpp"

namespace zkr::detail {

// Checked before anything else, so that a bad path never reaches the queue:
// the rules of zkr/path.hpp, not the root, and room for our lock nodes
// (max_length: the longest path that leaves it).
std::string checked_lock_path(std::string path, std::size_t max_length = kMaxLockPathLength);

// Errors about the Client rather than a znode (no connection, auth failed,
// closing) come without a path: name the lock they stopped. Call from a
// catch block.
[[noreturn]] void rethrow_naming(const KeeperError& e, const std::string& dir);

KeeperError client_gone(const std::string& dir);
// An acquire's failure as it reaches the caller: a KeeperError without a
// path names `dir` (rethrow_naming); anything else as it is.
std::exception_ptr naming(std::exception_ptr error, const std::string& dir) noexcept;

// The checks every acquire form makes before it may send anything; `visit`
// must last as long as the acquire, so that the Client does too.
void check_may_acquire(const ClientLifeline::Visit& visit, Client& client, std::string_view kind,
                       const std::string& dir);

// internals.acquire, its errors naming the lock.
std::shared_ptr<GrantState> acquire_naming(LockInternals& internals, Deadline deadline,
                                           const std::optional<HeldWriteNode>& held_write = {},
                                           std::stop_token stop = {});

// A lock's grant: acquire_naming, the async attempt waited for (it waits for
// a connection itself, within the deadline and the one retry budget).
// nullptr if the deadline or a stop came first (a token already stopped:
// nothing sent).
std::shared_ptr<GrantState> acquire_when_connected(
    LockInternals& internals, Deadline deadline,
    const std::optional<HeldWriteNode>& held_write = {}, std::stop_token stop = {});

// A guard of `internals`' queue with no thread waiting for it
// (GuardForms::async_acquire_guard): on_done(error, guard) once, from the
// thread that ends it. `owner` (what internals and lifeline belong to) is
// held until then, so the lock object may go first; a Visit of the lifeline
// is too, so the Client may not. Unlike the blocking forms it may start on
// the Client's listener thread: it parks nothing there.
void acquire_guard_async(std::shared_ptr<const void> owner, LockInternals& internals,
                         std::shared_ptr<ClientLifeline> lifeline, Deadline deadline,
                         std::stop_token stop, GuardHandler on_done);

// Deletes the node of a hold, if the Client still can; if it cannot, its
// session has ended and taken the node.
void give_back(ClientLifeline& lifeline, LockInternals& internals,
               const std::shared_ptr<GrantState>& state) noexcept;

// internals.participant_nodes() while the Client lives, its errors naming
// the lock.
std::vector<std::string> participant_nodes_naming(ClientLifeline& lifeline,
                                                  const LockInternals& internals);

}  // namespace zkr::detail
