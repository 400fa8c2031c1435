// LeaderSelector: a thread that holds our InterProcessMutex and, while it
// does, runs the user's term. Safety (the grant rule, own-node checks, the
// lost signal, leaving no node) is the mutex's, that is the engine's; this
// file only sequences terms.
#include "zkr/leader_selector.hpp"

#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

#include <spdlog/spdlog.h>

#include "client_internals.hpp"
#include "leadership.hpp"
#include "lock_internals.hpp"
#include "zkr/lock_guard.hpp"

namespace zkr {

namespace {

LockOptions selector_lock_options(const std::string& id, const LeaderSelectorOptions& options) {
  LockOptions lock;
  try {
    lock.holder_id = detail::checked_holder_id(id);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("LeaderSelector id: ") + e.what());
  }
  lock.acl = options.acl;
  lock.suspended_policy = options.suspended_policy;
  return lock;
}

}  // namespace

struct LeaderSelector::Impl {
  Impl(Client& c, std::string path, LockOptions lock, TakeLeadership take,
       LeaderSelectorOptions opts)
      : client(c),
        id(lock.holder_id),
        mutex(c, std::move(path), std::move(lock)),
        take_leadership(std::move(take)),
        options(std::move(opts)) {
    if (!take_leadership)
      throw std::invalid_argument("LeaderSelector: no take_leadership function");
  }

  // The selector's thread: waits to be queued, holds the mutex, runs a term,
  // gives the mutex back; until close().
  void run(std::stop_token closing) {
    for (;;) {
      {
        std::unique_lock lock(m);
        if (!changed.wait(lock, closing, [&] { return queued; })) return;
      }
      LockGuard guard;
      try {
        guard = mutex.acquire_guard(closing);
      } catch (...) {
        end_queueing();
        report(std::current_exception());
        continue;
      }
      // Closing: an acquire stopped left no node, and a grant that came with
      // the stop is given back unused.
      if (!guard || closing.stop_requested()) return;
      hold_term(guard.grant(), closing);
      guard.unlock();
    }
  }

  void hold_term(const Grant& grant, const std::stop_token& closing) {
    std::stop_source ending;
    const auto end_term = [&ending]() noexcept { ending.request_stop(); };
    std::stop_callback on_lost(grant.lost_token(), end_term);
    std::stop_callback on_close(closing, end_term);
    {
      std::lock_guard lock(m);
      term = grant;
      term_ending = ending;
    }
    try {
      take_leadership(LeaderTerm{grant, ending.get_token()});
    } catch (...) {
      report(std::current_exception());
    }
    {
      // Over for requeue() too: it may queue us again from now on.
      std::lock_guard lock(m);
      term.reset();
      term_ending.reset();
      queued = options.auto_requeue;
    }
    // A new term must not be reported before the old one's end.
    if (grant.lost()) detail::await_lost_signal(client, grant);
  }

  void end_queueing() {
    std::lock_guard lock(m);
    queued = false;
  }

  void report(std::exception_ptr error) noexcept {
    if (options.on_error) {
      try {
        options.on_error(error);
        return;
      } catch (...) {
        error = std::current_exception();
      }
    }
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      detail::ClientInternals::log(client)->warn("leader selector {}: {}", mutex.path(), e.what());
    } catch (...) {
      detail::ClientInternals::log(client)->warn("leader selector {}: unknown exception",
                                                 mutex.path());
    }
  }

  Client& client;
  const std::string id;     // as written into our node
  InterProcessMutex mutex;  // held through guards, by the selector's thread
  const TakeLeadership take_leadership;
  const LeaderSelectorOptions options;

  mutable std::mutex m;
  std::condition_variable_any changed;
  bool started = false;                         // guarded by m
  bool closed = false;                          // guarded by m
  bool queued = false;                          // guarded by m: wants a term, or has one
  std::optional<Grant> term;                    // guarded by m: the term under way
  std::optional<std::stop_source> term_ending;  // guarded by m: stops that term

  std::mutex joining;  // one close() at a time joins the thread
  std::jthread thread;
};

LeaderSelector::LeaderSelector(Client& client, std::string path, std::string id,
                               TakeLeadership take_leadership, LeaderSelectorOptions options)
    : impl_(std::make_unique<Impl>(client, std::move(path), selector_lock_options(id, options),
                                   std::move(take_leadership), std::move(options))) {}

LeaderSelector::~LeaderSelector() { close(); }

void LeaderSelector::start() {
  Impl& impl = *impl_;
  std::lock_guard one_at_a_time(impl.joining);
  {
    std::lock_guard lock(impl.m);
    if (impl.closed) throw std::logic_error("LeaderSelector " + path() + ": start() after close()");
    if (impl.started) throw std::logic_error("LeaderSelector " + path() + ": started twice");
    impl.started = true;
    impl.queued = true;
  }
  impl.thread = std::jthread([&impl](std::stop_token stop) { impl.run(std::move(stop)); });
}

bool LeaderSelector::requeue() {
  Impl& impl = *impl_;
  {
    std::lock_guard lock(impl.m);
    if (!impl.started || impl.closed || impl.queued) return false;
    impl.queued = true;
  }
  impl.changed.notify_all();
  return true;
}

bool LeaderSelector::interrupt_leadership() {
  std::lock_guard lock(impl_->m);
  if (!impl_->term_ending) return false;
  impl_->term_ending->request_stop();
  return true;
}

void LeaderSelector::close() noexcept {
  Impl& impl = *impl_;
  std::lock_guard one_at_a_time(impl.joining);
  {
    std::lock_guard lock(impl.m);
    impl.closed = true;
  }
  // Stops a wait for a requeue, an acquire (which then leaves no node) and a
  // term (through its stop token); the condition variable's wait with this
  // token wakes by itself.
  impl.thread.request_stop();
  if (impl.thread.joinable() && impl.thread.get_id() != std::this_thread::get_id())
    impl.thread.join();
}

bool LeaderSelector::has_leadership() const {
  std::lock_guard lock(impl_->m);
  return impl_->term && !impl_->term->lost();
}

std::vector<Participant> LeaderSelector::participants() const {
  return detail::read_participants(impl_->client, impl_->mutex.participant_nodes(), SIZE_MAX);
}

std::optional<Participant> LeaderSelector::leader() const {
  auto first = detail::read_participants(impl_->client, impl_->mutex.participant_nodes(), 1);
  if (first.empty()) return std::nullopt;
  return std::move(first.front());
}

const std::string& LeaderSelector::path() const noexcept { return impl_->mutex.path(); }
const std::string& LeaderSelector::id() const noexcept { return impl_->id; }

}  // namespace zkr
