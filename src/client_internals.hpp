// What recipes need of a Client and its users do not: the background
// remover, the lifeline that tells a lock whether its Client still exists,
// the callback thread, the recipes' services. Kept out of zkr/client.hpp so
// the public API stays the user's; only the library includes this.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "client_service.hpp"
#include "timer_thread.hpp"
#include "zkr/client.hpp"

namespace spdlog {
class logger;
}

namespace zkr::detail {

// Whether a Client still exists, for objects that keep a reference to it and
// may outlive it: the locks. They hold one by shared_ptr and make each call
// into the Client inside a Visit. ~Client refuses new visits first, then ends
// its session, so that the visits in progress fail fast (with closing), and
// waits for them to end before any of it is destroyed. A lock left over is
// then still safe to use: it knows its Client is gone and touches nothing.
class ClientLifeline {
 public:
  class Visit {
   public:
    explicit Visit(ClientLifeline& lifeline) noexcept
        : lifeline_(lifeline), entered_(lifeline.enter()) {}
    ~Visit() {
      if (entered_) lifeline_.leave();
    }
    Visit(const Visit&) = delete;
    Visit& operator=(const Visit&) = delete;
    // False: the Client is being destroyed, or gone. Do not touch it.
    explicit operator bool() const noexcept { return entered_; }

   private:
    ClientLifeline& lifeline_;
    const bool entered_;
  };

  // For ~Client: no new visit from now on.
  void close() noexcept;
  // For ~Client: true once no visit is in progress, false at the timeout.
  bool wait_for_visits(std::chrono::milliseconds timeout) noexcept;

 private:
  bool enter() noexcept;
  void leave() noexcept;

  std::mutex mutex_;
  std::condition_variable idle_;
  std::size_t visits_ = 0;  // guarded by mutex_
  bool closed_ = false;     // guarded by mutex_
};

// The Client's parts for recipes (Client befriends this).
struct ClientInternals {
  // Deletes a node that belongs to session `epoch` (a lock node, a grant) and
  // returns at once, once a read shows it is that session's (and created at
  // `czxid`, when not 0): src/owned_delete.hpp. If the reply is lost it keeps trying in the background
  // after each reconnection, until the node is gone or that session has ended
  // (which removes an ephemeral node anyway). With by_name_prefix, `path` is
  // parent + "/" + a name prefix, and the child with that prefix is deleted:
  // for a protected create whose reply was lost, so its name is unknown.
  // Never throws.
  static void remove_in_background(Client& client, std::string path, std::uint64_t epoch,
                                   bool by_name_prefix = false, std::int64_t czxid = 0) noexcept {
    client.remove_in_background(std::move(path), epoch, by_name_prefix, czxid);
  }
  // The connected session, now, without waiting: session_when_connected()
  // for code that must not block (an event-driven acquire). nullopt while
  // none serves; then *on_change, unless null, is called once at the next
  // change of the connection (connected or not, a new session, the Client
  // closing), on the thread that made it (the Client's session thread, or
  // the one destroying the Client), after which the caller asks again. It
  // must not block. The Client keeps it by weak reference: dropping it
  // cancels. Throws as session_when_connected() when no session will serve:
  // closing, auth_failed, or the namespace's error.
  static std::optional<Client::Session> session_now(
      const Client& client, const std::shared_ptr<std::function<void()>>& on_change) {
    return client.session_now(on_change);
  }
  // True on the Client's listener thread (inside a listener).
  static bool on_listener_thread(const Client& client) noexcept {
    return client.on_listener_thread();
  }
  // The thread grant callbacks run on (src/callback_thread.hpp). It outlives
  // the Client.
  static std::shared_ptr<CallbackThread> callback_thread(const Client& client) noexcept {
    return client.callback_thread();
  }
  // See ClientLifeline. It outlives the Client.
  static std::shared_ptr<ClientLifeline> lifeline(const Client& client) noexcept {
    return client.lifeline();
  }
  // The service of type T (a ClientService) that the Client keeps for the
  // recipes, made by make() on first use; one per Client and type. Closed
  // when ~Client begins; it may outlive the Client.
  template <class T, class Make>
  static std::shared_ptr<T> service(const Client& client, Make&& make) {
    static const char key = 0;  // one address per T
    return std::static_pointer_cast<T>(
        client.service(&key, [&]() -> std::shared_ptr<ClientService> { return make(); }));
  }
  // The Client's session now, and whether it serves (connected, and the
  // Client not closing), without waiting: what background work runs on.
  static std::pair<Client::Session, bool> background_session(const Client& client) {
    return client.background_session();
  }
  // The thread that runs the deadlines and retry delays of acquires that
  // park no thread (task.hpp), and resumes them after a connection state or
  // a stop. It outlives the Client while an acquire holds it.
  static std::shared_ptr<TimerThread> timers(const Client& client) noexcept {
    return client.timers();
  }
  // How many times `suspended` has been announced (counted as the state is
  // recorded, before listeners hear it). A grant compares it with the count
  // at its grant decision: a suspension its listener hears late, announced
  // before the decision, is not one of its hold.
  static std::uint64_t suspensions(const Client& client) { return client.suspensions(); }
  // The Client's logger (ClientOptions::logging); it outlives the Client.
  static const std::shared_ptr<spdlog::logger>& log(const Client& client) noexcept;
};

}  // namespace zkr::detail
