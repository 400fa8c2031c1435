#include "listener_dispatcher.hpp"

#include "observer_call.hpp"

#include <spdlog/spdlog.h>

#include <utility>
#include <vector>

namespace zkr::detail {

ListenerDispatcher::ListenerDispatcher(std::shared_ptr<spdlog::logger> log,
                                       std::shared_ptr<Observer> observer)
    : log_(std::move(log)), observer_(std::move(observer)) {}

ListenerDispatcher::~ListenerDispatcher() { stop(); }

Client::ListenerId ListenerDispatcher::add(Client::Listener listener) {
  std::lock_guard lock(mutex_);
  const auto id = next_id_++;
  listeners_.emplace(id, std::move(listener));
  return id;
}

void ListenerDispatcher::remove(Client::ListenerId id) {
  std::unique_lock lock(mutex_);
  if (worker_.on_thread()) {
    // From a listener's call: the listener running may be this one.
    if (id == running_) running_removed_ = true;
    else listeners_.erase(id);
    return;
  }
  idle_.wait(lock, [&] { return running_ != id; });
  listeners_.erase(id);
}

void ListenerDispatcher::post(ConnectionState s) {
  // Once stopping, the Client is going: nobody is left to hear it.
  (void)worker_.post([this, s] { deliver(s); });
}

void ListenerDispatcher::stop() { worker_.stop(WorkerThread::Drain::due); }

void ListenerDispatcher::deliver(ConnectionState state) {
  if (observer_) tell_observer(*log_, [&] { observer_->connection_state(state); });
  std::unique_lock lock(mutex_);
  // Listeners added while this state is delivered wait for the next one;
  // removed ones are skipped.
  std::vector<Client::ListenerId> ids;
  for (const auto& entry : listeners_) ids.push_back(entry.first);
  for (const auto id : ids) {
    const auto it = listeners_.find(id);
    if (it == listeners_.end()) continue;
    running_ = id;
    lock.unlock();
    call(it->second, state);  // in place: nothing erases it while running_ names it
    lock.lock();
    running_ = 0;
    if (std::exchange(running_removed_, false)) listeners_.erase(id);
    idle_.notify_all();  // a remove() may wait for this one
  }
}

void ListenerDispatcher::call(const Client::Listener& listener, ConnectionState state) {
  // A throwing listener must not end delivery to the others.
  try {
    listener(state);
  } catch (const std::exception& e) {
    log_->error("connection state listener threw on {}: {}", to_string(state), e.what());
  } catch (...) {
    log_->error("connection state listener threw on {}", to_string(state));
  }
}

}  // namespace zkr::detail
