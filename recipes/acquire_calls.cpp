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

void check_may_acquire(const ClientLifeline::Visit& visit, Client& client, std::string_view kind,
                       const std::string& dir) {
  if (!visit) throw client_gone(dir);
  if (detail::ClientInternals::on_listener_thread(client))
    throw std::logic_error(std::string(kind) + " " + dir +
                           ": acquire on the Client's listener thread, where waiting would hold "
                           "up every listener (the lost signals of held locks included); "
                           "acquire on another thread");
}

namespace {

Task<LockGuard> guard_acquisition(std::shared_ptr<const void> owner, LockInternals& internals,
                                  std::shared_ptr<ClientLifeline> lifeline, Deadline deadline,
                                  std::stop_token stop) {
  const ClientLifeline::Visit visit(*lifeline);  // ~Client waits for it
  if (!visit) throw client_gone(internals.dir());
  std::shared_ptr<LeaseState> state;
  std::exception_ptr failure;
  try {
    state = co_await internals.acquisition(deadline, {}, std::move(stop));
  } catch (...) {
    failure = std::current_exception();
  }
  if (failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const KeeperError& e) {
      rethrow_naming(e, internals.dir());
    }
  }
  if (!state) co_return LockGuard{};
  (void)owner;  // held to here: internals belongs to it
  co_return LockGuard(std::move(state), std::move(lifeline), internals.client());
}

}  // namespace

void acquire_guard_async(std::shared_ptr<const void> owner, LockInternals& internals,
                         std::shared_ptr<ClientLifeline> lifeline, Deadline deadline,
                         std::stop_token stop, GuardHandler on_done) {
  spawn(guard_acquisition(std::move(owner), internals, std::move(lifeline), deadline,
                          std::move(stop)),
        [on_done = std::move(on_done)](std::exception_ptr error, std::optional<LockGuard> guard) {
          on_done(error, guard ? std::move(*guard) : LockGuard{});
        });
}

std::shared_ptr<LeaseState> acquire_naming(LockInternals& internals, Deadline deadline,
                                           const std::optional<HeldWriteNode>& held_write,
                                           std::stop_token stop) {
  try {
    return internals.acquire(deadline, held_write, std::move(stop));
  } catch (const KeeperError& e) {
    rethrow_naming(e, internals.dir());
  }
}

std::shared_ptr<LeaseState> acquire_when_connected(LockInternals& internals, Deadline deadline,
                                                   const std::optional<HeldWriteNode>& held_write,
                                                   std::stop_token stop) {
  if (stop.stop_requested()) return nullptr;
  return acquire_naming(internals, deadline, held_write, std::move(stop));
}

void give_back(ClientLifeline& lifeline, LockInternals& internals,
               const std::shared_ptr<LeaseState>& state) noexcept {
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
