#include "acquire_calls.hpp"

#include <spdlog/spdlog.h>

#include <stdexcept>

#include "client_internals.hpp"
#include "task.hpp"
#include "zkr/path.hpp"

namespace zkr::detail {

std::string checked_lock_path(std::string path, std::size_t max_length) {
  validate_path(path);
  if (path == "/") throw std::invalid_argument("a lock path cannot be the root \"/\"");
  if (path.size() > max_length)
    throw std::invalid_argument(
        "invalid lock path \"" + path.substr(0, 80) + (path.size() > 80 ? "..." : "") +
        "\": it is " + std::to_string(path.size()) + " characters long; a lock path may have " +
        std::to_string(max_length) + " at most, so that its lock nodes stay within " +
        std::to_string(kMaxPathLength));
  return path;
}

[[noreturn]] void rethrow_naming(const KeeperError& e, const std::string& dir) {
  if (!e.path().empty()) throw;
  std::string text = e.what();
  const std::string name = std::string(errc_name(e.errc())) + ": ";
  if (text.starts_with(name)) text.erase(0, name.size());
  throw KeeperError(e.errc(), dir, text);
}

KeeperError client_gone(const std::string& dir) {
  return KeeperError(Errc::closing, dir, "the lock's Client is closed or being destroyed");
}

std::exception_ptr naming(std::exception_ptr error, const std::string& dir) noexcept {
  if (!error) return error;
  try {
    try {
      std::rethrow_exception(error);
    } catch (const KeeperError& e) {
      rethrow_naming(e, dir);
    }
  } catch (...) {
    return std::current_exception();
  }
}

void check_may_acquire(const ClientLifeline::Visit& visit, Client& client, std::string_view kind,
                       const std::string& dir) {
  if (!visit) throw client_gone(dir);
  if (detail::ClientInternals::on_listener_thread(client))
    throw std::logic_error(std::string(kind) + " " + dir +
                           ": acquire on the Client's listener thread, where waiting would hold "
                           "up every listener (the lost signals of held locks included); "
                           "acquire on another thread");
}

// The acquisition's outcome, handed on as a guard by a callback rather than
// by a coroutine around it: a coroutine's frame would stay allocated for as
// long as the acquire waits, one more per waiter.
void acquire_guard_async(std::shared_ptr<const void> owner, LockInternals& internals,
                         std::shared_ptr<ClientLifeline> lifeline, Deadline deadline,
                         std::stop_token stop, GuardHandler on_done) {
  auto visit = std::make_unique<ClientLifeline::Visit>(*lifeline);  // ~Client waits for it
  if (!*visit) return on_done(std::make_exception_ptr(client_gone(internals.dir())), LockGuard{});
  spawn(internals.acquisition(deadline, nullptr, std::move(stop)),
        [owner = std::move(owner), &internals, lifeline = std::move(lifeline),
         visit = std::move(visit), on_done = std::move(on_done)](
            std::exception_ptr error, std::optional<std::shared_ptr<GrantState>> state) mutable {
          LockGuard guard;
          if (error) {
            error = naming(error, internals.dir());
          } else if (*state) {
            guard = LockGuard(std::move(*state), std::move(lifeline), internals.client());
          }
          visit.reset();
          owner.reset();  // held to here: internals belongs to it
          on_done(error, std::move(guard));
        });
}

std::shared_ptr<GrantState> acquire_naming(LockInternals& internals, Deadline deadline,
                                           const std::optional<HeldWriteNode>& held_write,
                                           std::stop_token stop) {
  try {
    return internals.acquire(deadline, held_write, std::move(stop));
  } catch (const KeeperError& e) {
    rethrow_naming(e, internals.dir());
  }
}

std::shared_ptr<GrantState> acquire_when_connected(LockInternals& internals, Deadline deadline,
                                                   const std::optional<HeldWriteNode>& held_write,
                                                   std::stop_token stop) {
  if (stop.stop_requested()) return nullptr;
  return acquire_naming(internals, deadline, held_write, std::move(stop));
}

void give_back(ClientLifeline& lifeline, LockInternals& internals,
               const std::shared_ptr<GrantState>& state) noexcept {
  ClientLifeline::Visit visit(lifeline);
  if (visit) internals.release(state);
  else state->mark_released();
}

std::vector<std::string> participant_nodes_naming(ClientLifeline& lifeline,
                                                  const LockInternals& internals) {
  ClientLifeline::Visit visit(lifeline);
  if (!visit) throw client_gone(internals.dir());
  try {
    return internals.participant_nodes();
  } catch (const KeeperError& e) {
    rethrow_naming(e, internals.dir());
  }
}

}  // namespace zkr::detail
