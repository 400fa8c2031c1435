// tests/support/fault_keeper.hpp: a Keeper decorator that injects faults at
// exact points, for unit tests of recipes.
//
// FaultKeeper wraps any Keeper (a FakeKeeper, or a real one) and passes every
// request through, except where a rule the test installed matches. A rule
// matches by operation kind and path, fires for a bounded number of matching
// requests (once by default), and does one or more of:
//
//   fail(code)                the request fails with `code` and is never sent:
//                             the server never saw it
//   lose_reply_after_apply()  the request is sent and applied, and its successful
//                             reply becomes connection_loss (the reply was lost)
//   after(hook)               the hook runs once the reply has arrived, before it
//                             is delivered: the world changes "in between"
//   hold_watch()              events of the watch this request sets are held
//                             until the test calls release_watches()
//   before(hook)              the hook runs before the request is sent, on the
//                             sending thread: the world changes first (the link
//                             drops, the session expires, another client writes)
//
//   auto faults = std::make_shared<zkr::test::Faults>();
//   auto keeper = std::make_shared<zkr::test::FaultKeeper>(ensemble.connect(), faults);
//   faults->on(zkr::test::OpKind::create, "/locks/").lose_reply_after_apply();
//   faults->on(zkr::test::OpKind::children, "/locks/a").after([&](const zkr::test::FaultCall&) {
//     other->remove("/locks/a/" + predecessor);  // between the listing and the watch
//   });
//   auto& rule = faults->on(zkr::test::OpKind::create, "/locks/").after([&](auto&) {
//     ensemble.expire(keeper->session_id());    // right after the create
//   });
//   ...
//   EXPECT_EQ(rule.fired(), 1);
//
// Requests are counted, across every keeper sharing the Faults, in the order
// they are sent: requests() says how many so far, and on_request(k) makes a
// rule for the k-th (from 0) whatever its kind and path. A test records a
// script's requests without faults, then replays it with a fault at each k.
//
// Rules live in a Faults object that several keepers may share: with
// with_faults(), every session a zkr::Client opens (after an expiry too) obeys
// the same rules.
//
// Delivery: replies and watch events reach the caller on the FaultKeeper's own
// relay thread, in the order the inner keeper delivered them (so ZooKeeper's
// ordering guarantees still hold), except for held watch events, which break
// them on purpose. Session states go straight from the inner keeper to its
// on_state. Hooks run on the relay thread too: a hook may use the inner keeper
// or any other keeper, blocking forms included, but not the blocking forms of
// this FaultKeeper, whose replies it is holding up. Rules hold their hooks:
// a hook that captures a shared_ptr to the keeper keeps it alive.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "zkr/client.hpp"
#include "zkr/keeper.hpp"

namespace zkr::test {

enum class OpKind { any, create, remove, exists, get, set, children, multi, sync };
std::string_view to_string(OpKind kind) noexcept;

// What a hook hears about the request it follows.
struct FaultCall {
  OpKind kind;
  std::string path;  // the request's path (for a multi, the first operation's)
  Errc error;        // the reply of the inner keeper (ok, or its error)
};
using FaultHook = std::function<void(const FaultCall&)>;

class Faults;

// One rule. Built by Faults::on(); it takes effect once it has an action, and
// is consumed when it matches a request (whether or not the reply succeeds).
class FaultRule {
 public:
  FaultRule& fail(Errc code);
  FaultRule& lose_reply_after_apply();
  FaultRule& after(FaultHook hook);
  FaultRule& hold_watch();
  FaultRule& before(FaultHook hook);
  // The number of matching requests it fires for (>= 1; 1 unless set).
  FaultRule& times(int n);
  // How many requests it has fired for so far.
  int fired() const;

 private:
  friend class Faults;
  FaultRule(Faults& owner, OpKind kind, std::function<bool(std::string_view)> matches,
            std::optional<std::size_t> index = std::nullopt);

  Faults& owner_;
  const OpKind kind_;
  const std::function<bool(std::string_view)> matches_;
  const std::optional<std::size_t> index_;  // matches only this request (on_request)
  // Guarded by owner_.mutex_.
  std::optional<Errc> fail_;
  bool lose_reply_ = false;
  FaultHook hook_;
  bool hold_watch_ = false;
  FaultHook before_;
  int times_ = 1;
  int fired_ = 0;
};

// What one matching request is to suffer: a copy of the rule's actions.
struct Fault {
  std::optional<Errc> fail;
  bool lose_reply = false;
  FaultHook hook;
  bool hold_watch = false;
  FaultHook before;
};

// The rules, and the watch events held by them.
class Faults {
 public:
  Faults() = default;
  Faults(const Faults&) = delete;
  Faults& operator=(const Faults&) = delete;

  // A rule for requests of `kind` (OpKind::any: every kind) whose path starts
  // with `path_prefix`, or fully matches `path`. Rules are tried in the order
  // they were added; a request gets the first one that matches and has firings
  // left. The reference stays valid as long as this Faults.
  FaultRule& on(OpKind kind, std::string path_prefix = "/");
  FaultRule& on(OpKind kind, const std::regex& path);
  // A rule for the request with this index (see requests()).
  FaultRule& on_request(std::size_t index);
  // How many requests have been sent through keepers sharing this Faults.
  std::size_t requests() const;
  // Waits until more than n requests have been sent; false at the timeout.
  [[nodiscard]] bool wait_requests_beyond(std::size_t n, std::chrono::milliseconds timeout);
  // Disarms every rule (references stay valid; fired() keeps its count).
  void clear();
  // Called with every request's index and kind as it is sent, before any
  // rule's action, whether or not a rule matches (one tap; a new one
  // replaces it). It runs on the sending thread, with no lock of ours held.
  using RequestTap = std::function<void(std::size_t index, OpKind kind)>;
  void tap(RequestTap tap);

  // Called by FaultKeeper as it sends a request with these paths.
  std::optional<Fault> take(OpKind kind, const std::vector<std::string_view>& paths);

  // ---- Held watch events.
  std::size_t held_watches() const;
  // Waits until at least n events are held; false if the timeout passed first.
  [[nodiscard]] bool wait_held_watches(std::size_t n, std::chrono::milliseconds timeout);
  // Lets every held event go on to its watcher, in the order they were held.
  // Returns how many.
  std::size_t release_watches();
  // Called by FaultKeeper when a held watch fires: `release` delivers it.
  void hold(std::function<void()> release);

 private:
  friend class FaultRule;
  // The first rule that matches request `index`, consumed; mutex_ held.
  std::optional<Fault> take_locked(std::size_t index, OpKind kind,
                                   const std::vector<std::string_view>& paths);
  mutable std::mutex mutex_;
  std::condition_variable held_cv_;
  std::vector<std::unique_ptr<FaultRule>> rules_;  // guarded by mutex_
  std::vector<std::function<void()>> held_;        // guarded by mutex_
  std::size_t requests_ = 0;                       // guarded by mutex_
  RequestTap tap_;                                 // guarded by mutex_
  std::condition_variable requests_cv_;
};

class FaultKeeper final : public Keeper {
 public:
  explicit FaultKeeper(std::shared_ptr<Keeper> inner,
                       std::shared_ptr<Faults> faults = std::make_shared<Faults>());
  // Delivers every reply still pending (hooks and faults applied), waiting for
  // the inner keeper to answer them: a Keeper always does, if only with
  // connection_loss or closing. Watch events not yet delivered are dropped.
  // Joins the relay thread, unless called on it (a watcher or hook held the
  // last reference): then the thread is detached and ends by itself once the
  // last reply is delivered.
  ~FaultKeeper() override;
  FaultKeeper(const FaultKeeper&) = delete;
  FaultKeeper& operator=(const FaultKeeper&) = delete;

  Faults& faults() { return *faults_; }
  FaultRule& on(OpKind kind, std::string path_prefix = "/") {
    return faults_->on(kind, std::move(path_prefix));
  }
  Keeper& inner() { return *inner_; }
  // Returns once every reply of a request sent before the call has been
  // delivered to its caller (with the watch events delivered before it).
  void flush();

  void close() noexcept override { inner_->close(); }
  std::int64_t session_id() const override { return inner_->session_id(); }
  std::string session_password() const override { return inner_->session_password(); }
  SessionState session_state() const override { return inner_->session_state(); }
  std::chrono::milliseconds session_timeout() const override { return inner_->session_timeout(); }
  std::string connected_host() const override { return inner_->connected_host(); }
  std::chrono::milliseconds default_timeout() const override { return inner_->default_timeout(); }

  // The relay thread's queue (fault_keeper.cpp).
  class Relay;

 protected:
  void send_create(std::string path, std::string data, CreateMode mode, CreateOptions options,
                   ReplyHandler<Result<Created>> on_reply) override;
  void send_remove(std::string path, Version version,
                   ReplyHandler<Result<Empty>> on_reply) override;
  void send_exists(std::string path, Watcher watcher, ReplyHandler<Result<Stat>> on_reply) override;
  void send_get(std::string path, Watcher watcher,
                ReplyHandler<Result<NodeData>> on_reply) override;
  void send_set(std::string path, std::string data, Version version,
                ReplyHandler<Result<Stat>> on_reply) override;
  void send_children(std::string path, Watcher watcher,
                     ReplyHandler<Result<Children>> on_reply) override;
  void send_multi(std::vector<Op> ops, ReplyHandler<MultiResult> on_reply) override;
  void send_sync(std::string path, ReplyHandler<Result<Empty>> on_reply) override;

 private:
  // Matches the rules, wraps the watcher (if any), sends through send_inner()
  // unless the fault says fail, and queues the reply on the relay.
  template <class V, class Send>
  void send(OpKind kind, std::vector<std::string_view> paths, Watcher* watcher,
            ReplyHandler<V> on_reply, Send send_inner);

  std::shared_ptr<Keeper> inner_;
  std::shared_ptr<Faults> faults_;
  std::shared_ptr<Relay> relay_;  // shared with the relay thread and (weakly) with watchers
  std::thread relay_thread_;      // joined by the destructor
};

// A KeeperFactory whose keepers are the inner factory's, wrapped in
// FaultKeepers that share `faults`.
KeeperFactory with_faults(KeeperFactory inner, std::shared_ptr<Faults> faults);

}  // namespace zkr::test
