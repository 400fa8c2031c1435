// Curator's connection state manager, in our terms: calls the Client's
// listeners with each connection state, in order, on a thread of its own, so
// that a listener may block in the Client while its session thread goes on.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>

#include "worker_thread.hpp"
#include "zkr/client.hpp"

namespace spdlog {
class logger;
}

namespace zkr::detail {

class ListenerDispatcher {
 public:
  // observer, if set, hears each state before the listeners do.
  ListenerDispatcher(std::shared_ptr<spdlog::logger> log, std::shared_ptr<Observer> observer = {});
  ~ListenerDispatcher();
  ListenerDispatcher(const ListenerDispatcher&) = delete;
  ListenerDispatcher& operator=(const ListenerDispatcher&) = delete;

  Client::ListenerId add(Client::Listener listener);
  bool on_thread() const noexcept { return worker_.on_thread(); }
  // Returns once the listener is not running (unless called by a listener:
  // waiting for ourselves would never end).
  void remove(Client::ListenerId id);
  void post(ConnectionState s);
  // Delivers what is queued, then joins the thread. Idempotent.
  void stop();

 private:
  void deliver(ConnectionState state);
  void call(const Client::Listener& listener, ConnectionState state);

  std::shared_ptr<spdlog::logger> log_;
  const std::shared_ptr<Observer> observer_;
  std::mutex mutex_;
  std::condition_variable idle_;  // wakes remove(): a listener's call ended
  // The listeners, held in place: a lock attempt registers one per waiter,
  // thousands of them, so no shared copy is made per listener. One being
  // called is never erased under it: remove() waits for the call to end, or
  // (on this thread, from inside a call) leaves the erase to deliver().
  std::map<Client::ListenerId, Client::Listener> listeners_;  // guarded by mutex_
  Client::ListenerId next_id_ = 1;                            // guarded by mutex_
  Client::ListenerId running_ = 0;  // guarded by mutex_: the listener being called
  bool running_removed_ = false;    // guarded by mutex_: removed during its own call
  WorkerThread worker_;             // last: its thread delivers with the rest
};

}  // namespace zkr::detail
