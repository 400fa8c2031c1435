// The fault-injecting Keeper decorator: see fault_keeper.hpp.
//
// Why a relay thread: a hook must run after the inner keeper's reply arrives
// and before the caller sees it, and a hook may use the inner keeper's
// blocking forms, which its own event thread cannot. So every reply, faulted or not, goes through one
// queue that a thread of ours works through in request order; watch events go
// through the same queue, so that the caller sees replies and events in the
// order the inner keeper delivered them.
#include "support/fault_keeper.hpp"

#include "support/failure.hpp"

#include <algorithm>
#include <atomic>
#include <deque>
#include <stdexcept>
#include <utility>

#include "keeper_arguments.hpp"

namespace zkr::test {
namespace {

using std::chrono::milliseconds;

template <class T>
Errc error_of(const Result<T>& r) {
  return r.error();
}
Errc error_of(const MultiResult& r) { return r.error; }

// One watch set through us. Its events are dropped if the reply that set it
// was "lost": a client that never got the reply never armed the watch.
struct Ticket {
  std::atomic<bool> cancelled{false};
};

}  // namespace

std::string_view to_string(OpKind kind) noexcept {
  switch (kind) {
    case OpKind::any: return "any";
    case OpKind::create: return "create";
    case OpKind::remove: return "remove";
    case OpKind::exists: return "exists";
    case OpKind::get: return "get";
    case OpKind::set: return "set";
    case OpKind::children: return "children";
    case OpKind::multi: return "multi";
    case OpKind::sync: return "sync";
  }
  return "unknown";
}

// ---- FaultRule

FaultRule::FaultRule(Faults& owner, OpKind kind, std::function<bool(std::string_view)> matches,
                     std::optional<std::size_t> index)
    : owner_(owner), kind_(kind), matches_(std::move(matches)), index_(index) {}

FaultRule& FaultRule::fail(Errc code) {
  std::lock_guard lock(owner_.mutex_);
  fail_ = code;
  return *this;
}

FaultRule& FaultRule::lose_reply_after_apply() {
  std::lock_guard lock(owner_.mutex_);
  lose_reply_ = true;
  return *this;
}

FaultRule& FaultRule::after(FaultHook hook) {
  std::lock_guard lock(owner_.mutex_);
  hook_ = std::move(hook);
  return *this;
}

FaultRule& FaultRule::hold_watch() {
  std::lock_guard lock(owner_.mutex_);
  hold_watch_ = true;
  return *this;
}

FaultRule& FaultRule::before(FaultHook hook) {
  std::lock_guard lock(owner_.mutex_);
  before_ = std::move(hook);
  return *this;
}

FaultRule& FaultRule::times(int n) {
  if (n < 1) throw std::invalid_argument("FaultRule::times: n must be at least 1");
  std::lock_guard lock(owner_.mutex_);
  times_ = n;
  return *this;
}

int FaultRule::fired() const {
  std::lock_guard lock(owner_.mutex_);
  return fired_;
}

// ---- Faults

FaultRule& Faults::on(OpKind kind, std::string path_prefix) {
  auto matches = [prefix = std::move(path_prefix)](std::string_view path) {
    return path.starts_with(prefix);
  };
  std::lock_guard lock(mutex_);
  rules_.push_back(std::unique_ptr<FaultRule>(new FaultRule(*this, kind, std::move(matches))));
  return *rules_.back();
}

FaultRule& Faults::on(OpKind kind, const std::regex& path) {
  auto matches = [path](std::string_view p) { return std::regex_match(p.begin(), p.end(), path); };
  std::lock_guard lock(mutex_);
  rules_.push_back(std::unique_ptr<FaultRule>(new FaultRule(*this, kind, std::move(matches))));
  return *rules_.back();
}

FaultRule& Faults::on_request(std::size_t index) {
  std::lock_guard lock(mutex_);
  rules_.push_back(std::unique_ptr<FaultRule>(new FaultRule(
      *this, OpKind::any, [](std::string_view) { return true; }, index)));
  return *rules_.back();
}

std::size_t Faults::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

bool Faults::wait_requests_beyond(std::size_t n, milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return requests_cv_.wait_for(lock, timeout, [&] { return requests_ > n; });
}

void Faults::clear() {
  std::lock_guard lock(mutex_);
  for (auto& rule : rules_) rule->times_ = rule->fired_;
}

void Faults::tap(RequestTap tap) {
  std::lock_guard lock(mutex_);
  tap_ = std::move(tap);
}

std::optional<Fault> Faults::take(OpKind kind, const std::vector<std::string_view>& paths) {
  RequestTap tap;
  std::size_t index = 0;
  std::optional<Fault> fault;
  {
    std::lock_guard lock(mutex_);
    index = requests_++;
    requests_cv_.notify_all();
    tap = tap_;
    fault = take_locked(index, kind, paths);
  }
  if (tap) tap(index, kind);
  return fault;
}

std::optional<Fault> Faults::take_locked(std::size_t index, OpKind kind,
                                         const std::vector<std::string_view>& paths) {
  for (auto& rule : rules_) {
    // A rule still being built (no action yet) does not match, so that a test
    // adding rules while requests run never wastes a firing on nothing.
    const bool has_action =
        rule->fail_ || rule->lose_reply_ || rule->hook_ || rule->hold_watch_ || rule->before_;
    if (!has_action || rule->fired_ >= rule->times_) continue;
    if (rule->index_ && *rule->index_ != index) continue;
    if (rule->kind_ != OpKind::any && rule->kind_ != kind) continue;
    if (std::none_of(paths.begin(), paths.end(), rule->matches_)) continue;
    ++rule->fired_;
    return Fault{rule->fail_, rule->lose_reply_, rule->hook_, rule->hold_watch_, rule->before_};
  }
  return std::nullopt;
}

std::size_t Faults::held_watches() const {
  std::lock_guard lock(mutex_);
  return held_.size();
}

bool Faults::wait_held_watches(std::size_t n, milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return held_cv_.wait_for(lock, timeout, [&] { return held_.size() >= n; });
}

std::size_t Faults::release_watches() {
  std::vector<std::function<void()>> released;
  {
    std::lock_guard lock(mutex_);
    released.swap(held_);
  }
  for (auto& release : released) release();
  return released.size();
}

void Faults::hold(std::function<void()> release) {
  std::lock_guard lock(mutex_);
  held_.push_back(std::move(release));
  held_cv_.notify_all();
}

// ---- The relay

class FaultKeeper::Relay {
 public:
  // A reply on its way to the caller.
  struct Reply {
    std::function<bool()> ready;   // the inner keeper has delivered it
    std::function<void()> wait;    // until ready
    std::function<void()> finish;  // hook, fault, then the caller's handler
  };

  // Sends a request and queues its reply as one step, so that queue order is
  // send order, and an event cannot slip in between (see add_event).
  template <class MakeReply>
  void send(MakeReply make_reply) {
    std::lock_guard send_lock(send_mutex_);
    Reply reply = make_reply();
    std::lock_guard lock(mutex_);
    replies_.push_back(std::move(reply));
    cv_.notify_all();
  }

  // A watch event, from the inner keeper's event thread (or a release).
  //
  // Where it goes in the queue: the inner keeper delivers replies and events
  // on one thread, so while it is calling us, exactly the replies it delivered
  // before this event are ready. The event goes after those and before the
  // rest. Taking send_mutex_ first makes sure a request being sent right now
  // already has its reply in the queue when we count.
  void add_event(std::function<void()> deliver) {
    std::lock_guard send_lock(send_mutex_);
    std::unique_lock lock(mutex_);
    if (stopping_) {
      lock.unlock();  // the watcher's captures are destroyed without our locks
      return;
    }
    std::uint64_t after = taken_;
    for (const Reply& reply : replies_) {
      if (!reply.ready()) break;
      ++after;
    }
    events_.push_back({after, std::move(deliver)});
    cv_.notify_all();
  }

  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return stopping_ || !replies_.empty() || event_due(); });
      if (stopping_ && !events_.empty()) {
        // Nobody is listening any more; drop them outside the lock.
        auto dropped = std::move(events_);
        events_.clear();
        lock.unlock();
        dropped.clear();
        lock.lock();
        continue;
      }
      if (event_due()) {
        auto deliver = std::move(events_.front().deliver);
        events_.pop_front();
        lock.unlock();
        deliver();
        deliver = nullptr;
        lock.lock();
        continue;
      }
      if (replies_.empty()) break;  // stopping, and all delivered
      const auto wait = replies_.front().wait;
      lock.unlock();
      wait();
      lock.lock();
      if (event_due()) continue;  // the inner keeper delivered it before this reply
      Reply reply = std::move(replies_.front());
      replies_.pop_front();
      ++taken_;
      lock.unlock();
      reply.finish();
      reply = {};
      lock.lock();
      ++delivered_;
    }
  }

  void stop() {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    cv_.notify_all();
  }

 private:
  struct Event {
    std::uint64_t after;  // deliver once this many replies have been delivered
    std::function<void()> deliver;
  };

  bool event_due() const { return !events_.empty() && events_.front().after <= delivered_; }

  std::mutex send_mutex_;  // taken before mutex_, never after
  std::mutex mutex_;
  std::condition_variable cv_;
  // Guarded by mutex_.
  std::deque<Reply> replies_;
  std::deque<Event> events_;
  std::uint64_t taken_ = 0;      // replies taken off the queue (their inner reply had arrived)
  std::uint64_t delivered_ = 0;  // replies delivered to the caller
  bool stopping_ = false;
};

// ---- FaultKeeper

FaultKeeper::FaultKeeper(std::shared_ptr<Keeper> inner, std::shared_ptr<Faults> faults)
    : inner_(std::move(inner)), faults_(std::move(faults)), relay_(std::make_shared<Relay>()) {
  if (!inner_) throw std::invalid_argument("FaultKeeper: no inner keeper");
  if (!faults_) throw std::invalid_argument("FaultKeeper: no faults");
  relay_thread_ = std::thread([relay = relay_] { relay->run(); });
}

FaultKeeper::~FaultKeeper() {
  relay_->stop();
  // Dropped from our own relay thread (a watcher or hook held the last
  // reference): it cannot join itself. It owns the relay and ends once the
  // replies still queued are delivered.
  if (relay_thread_.get_id() == std::this_thread::get_id()) relay_thread_.detach();
  else relay_thread_.join();
}

template <class V, class Send>
void FaultKeeper::send(OpKind kind, std::vector<std::string_view> paths, Watcher* watcher,
                       ReplyHandler<V> on_reply, Send send_inner) {
  const std::string path = paths.empty() ? std::string() : std::string(paths.front());
  std::optional<Fault> fault = faults_->take(kind, paths);
  if (fault && fault->before) fault->before(FaultCall{kind, path, Errc::ok});
  auto ticket = std::make_shared<Ticket>();
  if (watcher && *watcher) {
    const bool hold = fault && fault->hold_watch;
    *watcher = [relay = std::weak_ptr<Relay>(relay_), faults = std::weak_ptr<Faults>(faults_),
                user = std::move(*watcher), ticket, hold](const WatchEvent& event) {
      auto deliver = [user, ticket, event] {
        if (!ticket->cancelled) user(event);
      };
      const auto r = relay.lock();
      if (!r) return;
      const auto f = hold ? faults.lock() : nullptr;
      if (f) {
        f->hold([relay, deliver] {
          if (const auto released = relay.lock()) released->add_event(deliver);
        });
      } else {
        r->add_event(std::move(deliver));
      }
    };
  }

  relay_->send([&] {
    std::shared_future<V> reply;
    if (fault && fault->fail) {
      std::promise<V> refused;  // never sent: the server never saw it
      refused.set_value(failure<V>(*fault->fail, path));
      reply = refused.get_future().share();
    } else {
      reply = send_inner().share();
    }
    Relay::Reply queued;
    queued.ready = [reply] {
      return reply.wait_for(milliseconds::zero()) == std::future_status::ready;
    };
    queued.wait = [reply] { reply.wait(); };
    queued.finish = [reply, on_reply = std::move(on_reply), fault, ticket, kind, path] {
      V value = reply.get();
      if (fault && fault->hook) fault->hook(FaultCall{kind, path, error_of(value)});
      if (fault && fault->lose_reply && error_of(value) == Errc::ok) {
        ticket->cancelled = true;
        value = failure<V>(Errc::connection_loss, path);
      }
      on_reply(std::move(value));
    };
    return queued;
  });
}

void FaultKeeper::flush() {
  std::promise<void> delivered;
  auto done = delivered.get_future();
  relay_->send([&] {
    Relay::Reply marker;
    marker.ready = [] { return true; };
    marker.wait = [] {};
    marker.finish = [&delivered] { delivered.set_value(); };
    return marker;
  });
  done.wait();
}

void FaultKeeper::send_create(std::string path, std::string data, CreateMode mode,
                              CreateOptions options, ReplyHandler<Result<Created>> on_reply) {
  detail::check_create(path, data, mode, options);
  send<Result<Created>>(OpKind::create, {path}, nullptr, std::move(on_reply), [&] {
    return inner_->async_create(path, std::move(data), mode, std::move(options));
  });
}

void FaultKeeper::send_remove(std::string path, Version version,
                              ReplyHandler<Result<Empty>> on_reply) {
  detail::check_write_path(path);
  send<Result<Empty>>(OpKind::remove, {path}, nullptr, std::move(on_reply),
                      [&] { return inner_->async_remove(path, version); });
}

void FaultKeeper::send_exists(std::string path, Watcher watcher,
                              ReplyHandler<Result<Stat>> on_reply) {
  detail::check_read_path(path);
  send<Result<Stat>>(OpKind::exists, {path}, &watcher, std::move(on_reply),
                     [&] { return inner_->async_exists(path, std::move(watcher)); });
}

void FaultKeeper::send_get(std::string path, Watcher watcher,
                           ReplyHandler<Result<NodeData>> on_reply) {
  detail::check_read_path(path);
  send<Result<NodeData>>(OpKind::get, {path}, &watcher, std::move(on_reply),
                         [&] { return inner_->async_get(path, std::move(watcher)); });
}

void FaultKeeper::send_set(std::string path, std::string data, Version version,
                           ReplyHandler<Result<Stat>> on_reply) {
  detail::check_set(path, data);
  send<Result<Stat>>(OpKind::set, {path}, nullptr, std::move(on_reply),
                     [&] { return inner_->async_set(path, std::move(data), version); });
}

void FaultKeeper::send_children(std::string path, Watcher watcher,
                                ReplyHandler<Result<Children>> on_reply) {
  detail::check_read_path(path);
  send<Result<Children>>(OpKind::children, {path}, &watcher, std::move(on_reply),
                         [&] { return inner_->async_children(path, std::move(watcher)); });
}

void FaultKeeper::send_multi(std::vector<Op> ops, ReplyHandler<MultiResult> on_reply) {
  detail::check_multi(ops);
  std::vector<std::string_view> paths;
  for (const Op& op : ops)
    paths.push_back(std::visit([](const auto& o) -> const std::string& { return o.path; }, op));
  // paths view into ops, which stay put until send_inner moves them away.
  send<MultiResult>(OpKind::multi, std::move(paths), nullptr, std::move(on_reply),
                    [&] { return inner_->async_multi(std::move(ops)); });
}

void FaultKeeper::send_sync(std::string path, ReplyHandler<Result<Empty>> on_reply) {
  detail::check_read_path(path);
  send<Result<Empty>>(OpKind::sync, {path}, nullptr, std::move(on_reply),
                      [&] { return inner_->async_sync(path); });
}

KeeperFactory with_faults(KeeperFactory inner, std::shared_ptr<Faults> faults) {
  return [inner = std::move(inner), faults = std::move(faults)](
             const KeeperConfig& config, SessionCallback on_state) -> std::shared_ptr<Keeper> {
    return std::make_shared<FaultKeeper>(inner(config, std::move(on_state)), faults);
  };
}

}  // namespace zkr::test
