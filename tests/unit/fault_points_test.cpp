// A fault at every request of every recipe's script (the locks, the
// semaphores and the leader latch), on the in-memory
// ensemble (docs/architecture.md, "Tests: three levels, and fault points").
//
// The script of contender A, for each recipe: two cycles, each acquire, hold
// (a guarded write), then release, with a second contender B on its own
// session contending for the same lock:
//   cycle 1  A is granted at once; B queues behind A's hold.
//   cycle 2  B holds; A queues behind it and waits; B releases and A is
//            granted on the hand-off; B queues behind A's hold.
// Its requests are first recorded without faults (Faults counts them). Then,
// for every request index k and every fault kind, the script runs again with
// that fault at request k, and is judged by where request k of that run fell
// (its cycle, its step, before or after the grant decision): on a busy
// machine a run may send one request more or fewer than the recording (a
// re-read a slow reply made due), which shifts the requests after it. What
// each fault does, to A:
//   drop        the link drops before request k is sent (which so fails with
//               connection_loss), and comes back on the same session;
//   reply_lost  request k is applied, then the link drops and its reply is lost;
//   expired     the session expires before request k is sent;
//   deleted     a foreign client deletes A's lock nodes before request k;
//   foreign     a foreign client creates a node of another lock protocol in
//               the lock's directory before request k (persistent);
//   scribble    a foreign client writes into A's lock nodes before request k.
//
// Safe, for A's grant of a cycle: its lock nodes exist with A's session as
// owner, that session lives, and (under SuspendedPolicy::lost only) no
// suspension of A's Client was announced after the grant decision, nor was
// the Client suspended at the grant (a drop just before the decision may or
// may not leave it so, by timing: then either answer is right). The lost
// signal must fire exactly when the grant is not safe. So, at the check
// point of a cycle (after the guarded write, everything delivered):
//   - a fault before the grant decision (the last listing of the acquire)
//     was dealt with by the acquire: the grant is held (or, for `foreign`,
//     the acquire refused with foreign_lock_protocol: the decision may have
//     seen the node);
//   - a fault after the decision and before the check point: drop and
//     reply_lost lose the grant (suspended) under SuspendedPolicy::lost and
//     never under ignore; expired loses it (session_lost); deleted loses it
//     (node_deleted); foreign and scribble never do (a foreign protocol that
//     arrives after our grant cannot be seen from our side: zkr/lock.hpp);
//   - a fault after the check point: the grant is released before it.
// Then, if the fault has struck and A's grant is still held, the probe: a
// foreign client deletes A's nodes, and the lost signal must fire
// (node_deleted): a watch the fault took away would leave it silent. Else A
// releases as usual.
// At every point the test checks: A and B never both hold (each holds only
// while its grant is neither lost nor released; a held grant whose node is
// not its session's must be lost within the bound); at the end, with both
// Clients closed and the containers reaped: nothing of A's or B's is left,
// and every foreign node is still there.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "lock_driver.hpp"
#include "support/fake_keeper.hpp"
#include "support/fault_keeper.hpp"
#include "support/state_counter.hpp"
#include "support/waits.hpp"
#include "zkr/leader_latch.hpp"
#include "zkr/lock.hpp"
#include "zkr/read_write_lock.hpp"
#include "zkr/semaphore.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;

constexpr auto kWait = 10s;  // bound on every wait; a healthy case takes milliseconds
const std::string kDir = "/locks/key";
const std::string kData = "/data";
const std::string kBystander = "/bystander";

enum class Fault { drop, reply_lost, expired, deleted, foreign, scribble };
constexpr Fault kFaults[] = {Fault::drop,    Fault::reply_lost, Fault::expired,
                             Fault::deleted, Fault::foreign,    Fault::scribble};
const char* name_of(Fault f) {
  switch (f) {
    case Fault::drop: return "drop";
    case Fault::reply_lost: return "reply_lost";
    case Fault::expired: return "expired";
    case Fault::deleted: return "deleted";
    case Fault::foreign: return "foreign";
    case Fault::scribble: return "scribble";
  }
  return "?";
}

// Where A's script stands; each request is recorded with it.
enum class Step { setup, acquire, hold, release, close };
struct Phase {
  int cycle = 0;
  Step step = Step::setup;
};

// One contender's lock, as the script drives it.
class Subject {
 public:
  virtual ~Subject() = default;
  // True when granted, false at the bound; throws what the acquire throws.
  virtual bool acquire() = 0;
  virtual std::vector<Grant> grants() const = 0;
  virtual void release() = 0;
};

template <class Lock>
class LockableSubject : public Subject {
 public:
  template <class... Args>
  explicit LockableSubject(int holds, Args&&... args)
      : lock_(std::forward<Args>(args)...), holds_(holds) {}
  bool acquire() override {
    taken_ = 0;
    for (int i = 0; i < holds_; ++i) {
      try {
        if (!lock_.try_acquire_for(kWait)) return taken_ > 0;
      } catch (const KeeperError&) {
        // A reentrant acquire refuses once the thread's hold is lost: the
        // grant stands, lost, and the test judges that.
        if (taken_ > 0 && lock_.grant().lost()) return true;
        throw;
      }
      ++taken_;
    }
    return true;
  }
  std::vector<Grant> grants() const override { return {lock_.grant()}; }
  void release() override {
    for (; taken_ > 0; --taken_) (void)lock_.release();
  }

 private:
  Lock lock_;
  const int holds_;  // 2: a reentrant hold
  int taken_ = 0;
};

class ReadWriteSubject : public Subject {
 public:
  ReadWriteSubject(Client& client, const LockOptions& options, bool write)
      : lock_(client, kDir, options), side_(write ? lock_.write_lock() : lock_.read_lock()) {}
  bool acquire() override { return side_.try_acquire_for(kWait); }
  std::vector<Grant> grants() const override { return {side_.grant()}; }
  void release() override { (void)side_.release(); }

 private:
  InterProcessReadWriteLock lock_;
  InterProcessReadWriteLock::Side& side_;
};

class SemaphoreSubject : public Subject {
 public:
  SemaphoreSubject(Client& client, const LockOptions& options)
      : semaphore_(client, kDir, SemaphoreLimit::fixed(1), options) {}
  bool acquire() override {
    held_ = semaphore_.try_acquire_for(1, kWait);
    return !held_.empty();
  }
  std::vector<Grant> grants() const override {
    std::vector<Grant> out;
    for (const auto& grant : held_) out.push_back(grant.grant());
    return out;
  }
  void release() override { held_.clear(); }

 private:
  InterProcessSemaphoreV2 semaphore_;
  std::vector<SemaphoreLease> held_;
};

// A participant of a leader latch: each cycle joins with a new latch (a
// closed one is done with), holds a term, and closes.
class LatchSubject : public Subject {
 public:
  LatchSubject(Client& client, const LockOptions& options) : client_(client) {
    options_.suspended_policy = options.suspended_policy;
    options_.acl = options.acl;
  }
  bool acquire() override {
    latch_ = std::make_unique<LeaderLatch>(client_, kDir, "participant", options_);
    return latch_->try_await_leadership_for(kWait);
  }
  std::vector<Grant> grants() const override {
    if (!latch_) return {};
    return {latch_->term()};
  }
  void release() override {
    if (latch_) latch_->close();
  }

 private:
  Client& client_;
  LeaderLatchOptions options_;
  std::unique_ptr<LeaderLatch> latch_;
};

struct Recipe {
  std::string name;
  SuspendedPolicy policy = SuspendedPolicy::lost;
  // second: B's lock (for the read/write lock, the other side)
  std::function<std::unique_ptr<Subject>(Client&, const LockOptions&, bool second)> make;
  std::string foreign_marker;    // the node name of another protocol, sequence appended
  std::string queue_dir = kDir;  // where a waiter's node shows
};

std::vector<Recipe> recipes() {
  const std::string writer = "_c_8c3a3b7e-0000-4000-8000-00000000f0f0-__WRIT__";
  const std::string locker = "_c_8c3a3b7e-0000-4000-8000-00000000f0f0-lock-";
  using Mutex = LockableSubject<InterProcessMutex>;
  return {
      {"mutex", SuspendedPolicy::lost,
       [](Client& c, const LockOptions& o, bool) { return std::make_unique<Mutex>(1, c, kDir, o); },
       writer},
      {"mutex_ignore_suspended", SuspendedPolicy::ignore,
       [](Client& c, const LockOptions& o, bool) { return std::make_unique<Mutex>(1, c, kDir, o); },
       writer},
      {"reentrant_mutex", SuspendedPolicy::lost,
       [](Client& c, const LockOptions& o, bool) { return std::make_unique<Mutex>(2, c, kDir, o); },
       writer},
      {"semaphore_mutex", SuspendedPolicy::lost,
       [](Client& c, const LockOptions& o, bool) {
         return std::make_unique<LockableSubject<NonReentrantMutex>>(1, c, kDir, o);
       },
       writer},
      {"read_lock", SuspendedPolicy::lost,
       [](Client& c, const LockOptions& o, bool second) {
         return std::make_unique<ReadWriteSubject>(c, o, /*write=*/second);
       },
       locker},
      {"write_lock", SuspendedPolicy::lost,
       [](Client& c, const LockOptions& o, bool second) {
         return std::make_unique<ReadWriteSubject>(c, o, /*write=*/!second);
       },
       locker},
      {"semaphore_v2", SuspendedPolicy::lost,
       [](Client& c, const LockOptions& o, bool) {
         return std::make_unique<SemaphoreSubject>(c, o);
       },
       locker, kDir + "/leases"},
      {"curator_semaphore_mutex", SuspendedPolicy::lost,
       [](Client& c, const LockOptions& o, bool) {
         return std::make_unique<LockableSubject<InterProcessSemaphoreMutex>>(1, c, kDir, o);
       },
       locker, kDir + "/leases"},
      {"semaphore_v2_ignore_suspended", SuspendedPolicy::ignore,
       [](Client& c, const LockOptions& o, bool) {
         return std::make_unique<SemaphoreSubject>(c, o);
       },
       locker, kDir + "/leases"},
      {"leader_latch", SuspendedPolicy::lost,
       [](Client& c, const LockOptions& o, bool) { return std::make_unique<LatchSubject>(c, o); },
       locker},
      {"leader_latch_ignore_suspended", SuspendedPolicy::ignore,
       [](Client& c, const LockOptions& o, bool) { return std::make_unique<LatchSubject>(c, o); },
       locker},
  };
}

// A thread that runs one contender's calls in order: a mutex is released by
// the thread that acquired it.
class Actor {
 public:
  Actor() : thread_([this] { run(); }) {}
  ~Actor() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  template <class F>
  auto post(F f) -> std::future<decltype(f())> {
    auto task = std::make_shared<std::packaged_task<decltype(f())()>>(std::move(f));
    auto result = task->get_future();
    {
      std::lock_guard lock(mutex_);
      tasks_.push_back([task] { (*task)(); });
    }
    cv_.notify_all();
    return result;
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      auto task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;  // guarded by mutex_
  bool stopping_ = false;                    // guarded by mutex_
  std::thread thread_;
};

struct Contender {
  std::shared_ptr<test::Faults> faults = std::make_shared<test::Faults>();
  std::shared_ptr<test::StateCounter> states = std::make_shared<test::StateCounter>(kWait);
  std::unique_ptr<Client> client;
  std::set<std::int64_t> sessions;  // every session it had
  std::unique_ptr<Subject> subject;

  std::vector<Grant> granted() {
    std::lock_guard lock(mutex_);
    return granted_;
  }
  void set_granted(std::vector<Grant> leases) {
    std::lock_guard lock(mutex_);
    granted_ = std::move(leases);
  }

 private:
  std::mutex mutex_;
  std::vector<Grant> granted_;  // guarded by mutex_: the current grant's leases

 public:
  Actor actor;  // last: its thread ends before the rest goes

  std::int64_t session() {
    const auto id = client->keeper()->session_id();
    sessions.insert(id);
    return id;
  }
  void flush() {
    if (auto k = std::dynamic_pointer_cast<test::FaultKeeper>(client->keeper())) k->flush();
  }
};

// One recorded request of A.
struct Request {
  Phase phase;
  test::OpKind kind = test::OpKind::any;
  bool after_decision = false;  // in an acquire, after its last listing
};

// What one run showed; no failures: every check held.
struct Outcome {
  std::vector<std::string> failures;
  std::size_t script_requests = 0;  // A's requests before the Clients close
  std::vector<Request> recorded;    // every request of A in this run
  bool fired = false;
};

class ScriptRun {
 public:
  // No fault: records A's requests. Else also the fault at request k.
  ScriptRun(const Recipe& recipe, std::optional<std::pair<std::size_t, Fault>> fault)
      : recipe_(recipe), fault_(fault) {}

  Outcome go() {
    setup();
    record();
    if (fault_) install(fault_->first, fault_->second);
    for (int cycle = 1; cycle <= 2; ++cycle) run_cycle(cycle);
    out_.script_requests = a_->faults->requests();
    finish();
    out_.fired = fired_;
    out_.recorded = recorded_requests();
    return std::move(out_);
  }

 private:
  void fail(const std::string& what) {
    std::lock_guard lock(mutex_);
    out_.failures.push_back("cycle " + std::to_string(phase_.cycle) + ": " + what);
  }
  void set_phase(int cycle, Step step) {
    std::lock_guard lock(mutex_);
    phase_ = {cycle, step};
  }

  std::unique_ptr<Contender> contender(bool second) {
    auto c = std::make_unique<Contender>();
    ClientOptions options;
    options.connect_string = "127.0.0.1:2181";  // not dialled: the factory is the fake's
    options.session_timeout = 4s;
    options.keeper_factory = test::with_faults(ensemble_.factory(), c->faults);
    options.retry_policy = std::make_shared<RetryNTimes>(10, 10ms);
    options.sleeper = std::make_shared<RecordingSleeper>();  // retries take no time
    options.logging.level = LogLevel::off;
    c->client = std::make_unique<Client>(options);
    c->client->add_listener([states = c->states](ConnectionState s) { states->on(s); });
    if (!c->client->block_until_connected(kWait)) fail("a client did not connect");
    c->session();
    LockOptions lock_options;
    lock_options.suspended_policy = recipe_.policy;
    // No directory removal on a timer in the middle of the script: at close.
    lock_options.directory_grace = std::chrono::hours(1);
    c->subject = recipe_.make(*c->client, lock_options, second);
    return c;
  }

  void setup() {
    foreign_ = ensemble_.connect();
    foreign_->create(kData, "0");
    foreign_->create(kBystander, "not the library's");
    foreign_nodes_ = {kData, kBystander};
    a_ = contender(false);
    b_ = contender(true);
  }

  // Every request of A, with the phase it was sent in.
  void record() {
    a_->faults->tap([this](std::size_t, test::OpKind kind) {
      std::lock_guard lock(mutex_);
      log_.push_back({phase_, kind});
    });
  }
  // Request k of this run as recorded so far: where the fault fell.
  Request struck() {
    const auto requests = recorded_requests();
    return fault_->first < requests.size() ? requests[fault_->first] : Request{};
  }
  std::vector<Request> recorded_requests() {
    std::lock_guard lock(mutex_);
    std::vector<Request> out;
    for (const auto& [phase, kind] : log_) out.push_back({phase, kind, false});
    // The grant decision of an acquire is its last listing: what follows it
    // in the acquire (the read of a node granted at once, a semaphore's
    // internal release) comes after the decision.
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (out[i].phase.step != Step::acquire) continue;
      std::optional<std::size_t> last_listing;
      std::size_t end = i;
      for (; end < out.size() && out[end].phase.cycle == out[i].phase.cycle &&
             out[end].phase.step == Step::acquire;
           ++end)
        if (log_[end].second == test::OpKind::children) last_listing = end;
      for (std::size_t j = i; j < end; ++j)
        out[j].after_decision = last_listing && j > *last_listing;
      i = end - 1;
    }
    return out;
  }

  // The rule for request k. The hooks that break the link wait until A's
  // Client has heard of it, so that what follows is ordered after it.
  void install(std::size_t k, Fault fault) {
    auto& rule = a_->faults->on_request(k);
    switch (fault) {
      case Fault::drop:
        rule.before([this](const test::FaultCall&) {
              fired_ = true;
              drop_link();
            })
            .after([this](const test::FaultCall&) { ensemble_.reconnect(current_a()); });
        break;
      case Fault::reply_lost:
        rule.lose_reply_after_apply().after([this](const test::FaultCall&) {
          fired_ = true;
          drop_link();
          ensemble_.reconnect(current_a());
        });
        break;
      case Fault::expired:
        rule.before([this](const test::FaultCall&) {
          fired_ = true;
          if (!a_->states->announced_after(ConnectionState::lost,
                                           [&] { ensemble_.expire(current_a()); }))
            fail("expiry not announced");
        });
        break;
      case Fault::deleted:
        rule.before([this](const test::FaultCall&) {
          fired_ = true;
          for (const auto& node : ensemble_.ephemerals_of(current_a())) foreign_->remove(node);
        });
        break;
      case Fault::foreign:
        rule.before([this](const test::FaultCall&) {
          fired_ = true;
          foreign_->create_parents(kDir + "/x", CreateMode::persistent);
          const auto made = foreign_->create(kDir + "/" + recipe_.foreign_marker, "",
                                             CreateMode::persistent_sequential);
          std::lock_guard lock(mutex_);
          foreign_nodes_.push_back(made.path);
          foreign_appeared_ = true;
        });
        break;
      case Fault::scribble:
        rule.before([this](const test::FaultCall&) {
          fired_ = true;
          for (const auto& node : ensemble_.ephemerals_of(current_a()))
            (void)foreign_->try_set(node, "scribbled by another client");
        });
        break;
    }
  }

  std::int64_t current_a() { return a_->client->keeper()->session_id(); }

  void drop_link() {
    if (!a_->states->announced_after(ConnectionState::suspended,
                                     [&] { ensemble_.disconnect(current_a()); }))
      fail("suspension not announced");
  }

  // Until nothing moves: every reply and event delivered, every request
  // answered, both Clients connected.
  void settle() {
    int quiet_rounds = 0;
    for (int round = 0; round < 100; ++round) {
      const auto before = a_->faults->requests() + b_->faults->requests();
      (void)ensemble_.wait_idle();
      (void)a_->client->block_until_connected(kWait);
      (void)b_->client->block_until_connected(kWait);
      if (!a_->states->caught_up() || !b_->states->caught_up())
        fail("a Client's listeners never heard it was back");
      a_->session();
      b_->session();
      a_->flush();
      b_->flush();
      (void)ensemble_.wait_idle();
      if (a_->faults->requests() + b_->faults->requests() != before) quiet_rounds = 0;
      else if (++quiet_rounds == 2) return;
    }
    fail("never settled");
  }

  // Held: granted, and neither lost nor released.
  static bool holds(const std::vector<Grant>& leases) {
    if (leases.empty()) return false;
    for (const auto& l : leases)
      if (l.lost() || l.released()) return false;
    return true;
  }

  // The grant's lost signal once heard, or none if the bound passes first. A
  // loss is announced from the Client's threads (a listener, a reply), which
  // may run behind what settle() sees: the promise is a bound, not an instant.
  static LostReason lost_within(const Grant& grant) {
    auto heard = std::make_shared<std::promise<void>>();
    auto once = std::make_shared<std::once_flag>();
    grant.on_lost(
        [heard, once](LostReason) { std::call_once(*once, [&] { heard->set_value(); }); });
    (void)heard->get_future().wait_for(kWait);
    return grant.lost_reason();
  }

  // A held grant whose node is not its session's must be lost within the
  // bound; and A and B never both hold.
  void check_holders(const char* where) {
    for (auto* c : {a_.get(), b_.get()}) {
      for (const auto& grant : c->granted()) {
        if (grant.lost() || grant.released()) continue;
        const auto stat = ensemble_.exists_now(grant.node_path());
        if (stat && c->sessions.count(stat->ephemeral_owner)) continue;
        if (lost_within(grant) == LostReason::none)
          fail(std::string(where) + ": a grant whose node is not its session's was never lost (" +
               grant.node_path() + ")");
      }
    }
    if (holds(a_->granted()) && holds(b_->granted()))
      fail(std::string(where) + ": A and B both hold the lock");
  }

  // What A's grant of this cycle must say at the check point (see the top).
  void check_lost_signal(int cycle) {
    LostReason expected = LostReason::none;
    if (fired_ && fault_) {
      const Request struck = this->struck();
      if (struck.phase.cycle == cycle &&
          (struck.after_decision || struck.phase.step == Step::hold)) {
        switch (fault_->second) {
          case Fault::drop:
          case Fault::reply_lost:
            if (recipe_.policy == SuspendedPolicy::lost) expected = LostReason::suspended;
            break;
          case Fault::expired: expected = LostReason::session_lost; break;
          case Fault::deleted: expected = LostReason::node_deleted; break;
          case Fault::foreign:
          case Fault::scribble: break;
        }
      }
    }
    // A link lost before the decision: replies already on their way (or a
    // new round sent at once on the link just back) may still grant while
    // the Client has not yet announced the reconnect. Under
    // SuspendedPolicy::lost a grant made while suspended is lost at once (it
    // is in doubt); whether the Client has caught up by then is timing.
    std::optional<LostReason> also;
    if (fired_ && fault_ &&
        (fault_->second == Fault::reply_lost || fault_->second == Fault::drop) &&
        recipe_.policy == SuspendedPolicy::lost && expected == LostReason::none &&
        struck().phase.cycle == cycle)
      also = LostReason::suspended;
    // Likewise a session that expires as the decision is made: a listing
    // answered before the expiry may grant on the session that is ending,
    // and that grant is lost at once (session_lost), which is the truth
    // about it. Which comes first is timing; both answers are safe.
    if (fired_ && fault_ && fault_->second == Fault::expired && expected == LostReason::none &&
        struck().phase.cycle == cycle)
      also = LostReason::session_lost;
    for (const auto& grant : a_->granted()) {
      const auto why = expected == LostReason::none ? grant.lost_reason() : lost_within(grant);
      if (why != expected && why != also)
        fail("A's lost signal says " + std::string(to_string(why)) + ", expected " +
             std::string(to_string(expected)) + " (" + grant.node_path() + ")");
    }
  }

  // An acquire on the contender's own thread; its result is looked at later.
  std::future<bool> acquiring(Contender& c) {
    return c.actor.post([&c] {
      const bool granted = c.subject->acquire();
      if (granted) c.set_granted(c.subject->grants());
      return granted;
    });
  }
  // The result of an acquire. A refusal for a foreign protocol is allowed
  // once its node exists, and required of an acquire that began after.
  bool result_of(std::future<bool>& acquire, bool began_after_foreign, const char* who) {
    if (acquire.wait_for(kWait * 3) != std::future_status::ready) {
      fail(std::string(who) + "'s acquire never returned");
      return false;
    }
    try {
      const bool granted = acquire.get();
      if (granted && began_after_foreign)
        fail(std::string(who) + " was granted beside a foreign protocol's node");
      else if (!granted) fail(std::string(who) + "'s acquire timed out");
      return granted;
    } catch (const KeeperError& e) {
      if (e.errc() != Errc::foreign_lock_protocol || !foreign_appeared_)
        fail(std::string(who) + "'s acquire threw " + e.what());
      return false;
    }
  }
  void release(Contender& c) {
    c.actor.post([&c] { c.subject->release(); }).get();
  }

  void run_cycle(int cycle) {
    std::optional<std::future<bool>> b_acquire;
    bool b_after_foreign = foreign_appeared_;
    if (cycle == 2) {
      // B holds first; A will wait behind it.
      b_acquire = acquiring(*b_);
      (void)result_of(*b_acquire, b_after_foreign, "B");
      b_acquire.reset();
      settle();
    }
    set_phase(cycle, Step::acquire);
    const bool a_after_foreign = foreign_appeared_;
    const auto sent_before = a_->faults->requests();
    auto a_acquire = acquiring(*a_);
    if (holds(b_->granted())) {
      // A is under way once its first request is out, and queued once its
      // node shows beside B's (unless a fault turned it away: then the
      // bound passes, and the script goes on).
      if (!a_->faults->wait_requests_beyond(sent_before, kWait)) fail("A sent nothing");
      (void)test::wait_children(
          *foreign_, recipe_.queue_dir,
          [](const std::vector<std::string>& names) { return names.size() >= 2; }, 2s);
      settle();
      check_holders("A waiting");
      if (holds(a_->granted())) fail("A was granted while B held");
      release(*b_);
    }
    const bool a_granted = result_of(a_acquire, a_after_foreign, "A");
    settle();
    check_holders("after A's acquire");
    if (a_granted) {
      set_phase(cycle, Step::hold);
      b_after_foreign = foreign_appeared_;
      b_acquire = acquiring(*b_);
      settle();
      a_->actor
          .post([this] {
            (void)zkr::guarded_write(*a_->client->keeper(), a_->subject->grants(),
                                     {op::Set{kData, "written by A"}}, kWait);
          })
          .get();
      settle();
      check_holders("A holding");
      check_lost_signal(cycle);
      if (fired_ && holds(a_->granted())) {
        // The probe: a delete of our node is heard, whatever the fault took.
        for (const auto& grant : a_->granted()) (void)foreign_->try_remove(grant.node_path());
        settle();
        for (const auto& grant : a_->granted())
          if (const auto why = lost_within(grant); why != LostReason::node_deleted)
            fail("the probe's delete of " + grant.node_path() +
                 " went unheard (lost signal: " + std::string(to_string(why)) + ")");
        check_holders("after the probe");
      }
      set_phase(cycle, Step::release);
      release(*a_);
      settle();
      check_holders("after A's release");
      if (result_of(*b_acquire, b_after_foreign, "B")) {
        settle();
        check_holders("B granted");
      }
    }
    release(*b_);
    a_->set_granted({});
    b_->set_granted({});
    settle();
  }

  void finish() {
    set_phase(3, Step::close);
    // The Clients' close answers its own requests: no fault from here on.
    a_->faults->clear();
    b_.reset();
    a_.reset();
    (void)ensemble_.wait_idle();
    for (int pass = 0; pass < 5; ++pass) (void)ensemble_.reap_containers();
    std::lock_guard lock(mutex_);
    for (const auto& node : foreign_nodes_)
      if (!ensemble_.exists_now(node)) out_.failures.push_back("foreign node deleted: " + node);
    // Whatever else is left must be an ancestor of a foreign node.
    std::vector<std::string> stack{"/"};
    while (!stack.empty()) {
      const auto dir = stack.back();
      stack.pop_back();
      for (const auto& child : ensemble_.children_now(dir)) {
        const auto path = (dir == "/" ? "" : dir) + "/" + child;
        if (path == "/zookeeper") continue;
        stack.push_back(path);
        bool kept = false;
        for (const auto& f : foreign_nodes_) kept |= f == path || f.starts_with(path + "/");
        if (!kept) out_.failures.push_back("left behind: " + path);
      }
    }
  }

  const Recipe& recipe_;
  const std::optional<std::pair<std::size_t, Fault>> fault_;
  test::FakeEnsemble ensemble_;  // first: the keepers and Clients go before it
  std::shared_ptr<test::FakeKeeper> foreign_;
  std::unique_ptr<Contender> a_, b_;
  std::mutex mutex_;
  Phase phase_;                                      // guarded by mutex_
  std::vector<std::pair<Phase, test::OpKind>> log_;  // guarded by mutex_
  std::vector<std::string> foreign_nodes_;           // guarded by mutex_ while running
  std::atomic<bool> fired_{false};
  std::atomic<bool> foreign_appeared_{false};
  Outcome out_;  // failures guarded by mutex_ while running
};

std::vector<std::string> recipe_names() {
  std::vector<std::string> names;
  for (const auto& recipe : recipes()) names.push_back(recipe.name);
  return names;
}

// One test per recipe: each is a few hundred runs of its script, and a
// sanitized build on a busy machine takes minutes over all of them, so they
// are apart for ctest to time and schedule one by one.
class FaultPoints : public ::testing::TestWithParam<std::string> {};

TEST_P(FaultPoints, TheRecipeSurvivesAFaultAtEveryRequest) {
  std::size_t cases = 0;
  std::size_t failed = 0;
  std::size_t reruns = 0;  // runs made again because their fault met no request
  // FAULT_POINTS_ONLY="recipe[:k[:fault]]" runs only those cases (debugging).
  const char* only_env = std::getenv("FAULT_POINTS_ONLY");
  const std::string only = only_env ? only_env : "";
  const auto all = recipes();
  const auto found =
      std::find_if(all.begin(), all.end(), [&](const Recipe& r) { return r.name == GetParam(); });
  ASSERT_NE(found, all.end());
  const Recipe& recipe = *found;
  if (!only.empty() && only.substr(0, only.find(':')) != recipe.name)
    GTEST_SKIP() << "FAULT_POINTS_ONLY=" << only;
  auto recording = ScriptRun(recipe, std::nullopt).go();
  ASSERT_TRUE(recording.failures.empty())
      << recipe.name << " fails without faults: " << recording.failures.front();
  // Deterministic: the same script sends the same requests, but for a
  // re-read a slow reply may make due on a busy machine: two recordings in
  // a row must agree, within a few tries.
  auto again = ScriptRun(recipe, std::nullopt).go();
  for (int retry = 0; again.script_requests != recording.script_requests && retry < 4; ++retry) {
    ++reruns;
    recording = std::move(again);
    again = ScriptRun(recipe, std::nullopt).go();
  }
  ASSERT_TRUE(recording.failures.empty() && again.failures.empty()) << recipe.name;
  const auto n = recording.script_requests;
  ASSERT_GT(n, 5u) << recipe.name;
  if (std::getenv("FAULT_POINTS_VERBOSE"))
    for (const Outcome* run :
         {static_cast<const Outcome*>(&recording), static_cast<const Outcome*>(&again)})
      for (std::size_t k = 0; k < run->recorded.size(); ++k) {
        const auto& r = run->recorded[k];
        std::cout << recipe.name << " request " << k << ": cycle " << r.phase.cycle << " step "
                  << static_cast<int>(r.phase.step) << " " << test::to_string(r.kind)
                  << (r.after_decision ? " (after the decision)" : "") << "\n";
      }
  ASSERT_EQ(again.script_requests, n) << recipe.name << ": the script is not deterministic";
  for (std::size_t k = 0; k < n; ++k) {
    for (const auto fault : kFaults) {
      const std::string id = recipe.name + ":" + std::to_string(k) + ":" + name_of(fault);
      if (only.find(':') != std::string::npos &&
          !id.starts_with(only +
                          (only.size() < id.size() && std::count(only.begin(), only.end(), ':') < 2
                               ? ":"
                               : "")))
        continue;
      ++cases;
      // On a busy machine a run may send its requests in another order than
      // the recording (a re-read that a slow reply made due, say), and the
      // fault then never meets request k: such a run proves nothing, so it
      // is made again, a few times at most, and counted.
      auto outcome = ScriptRun(recipe, std::make_pair(k, fault)).go();
      for (int retry = 0; !outcome.fired && retry < 4; ++retry) {
        ++reruns;
        outcome = ScriptRun(recipe, std::make_pair(k, fault)).go();
      }
      EXPECT_TRUE(outcome.fired) << recipe.name << " k=" << k << " " << name_of(fault);
      if (!outcome.failures.empty()) {
        ++failed;
        // Where request k fell in the run that failed.
        const Request r = k < outcome.recorded.size() ? outcome.recorded[k] : Request{};
        if (std::getenv("FAULT_POINTS_VERBOSE"))
          for (std::size_t i = 0; i < outcome.recorded.size(); ++i)
            std::cout << "  failed run request " << i << ": cycle "
                      << outcome.recorded[i].phase.cycle << " step "
                      << static_cast<int>(outcome.recorded[i].phase.step) << " "
                      << test::to_string(outcome.recorded[i].kind)
                      << (outcome.recorded[i].after_decision ? " (after the decision)" : "")
                      << "\n";
        ADD_FAILURE() << recipe.name << " k=" << k << " (cycle " << r.phase.cycle << ", "
                      << (r.phase.step == Step::acquire ? "acquire"
                          : r.phase.step == Step::hold  ? "hold"
                                                        : "release")
                      << (r.after_decision ? ", after the decision" : "") << ") " << name_of(fault)
                      << ": " << outcome.failures.front()
                      << (outcome.failures.size() > 1
                              ? " (+" + std::to_string(outcome.failures.size() - 1) + " more)"
                              : "");
      }
    }
  }
  std::cout << "fault points: " << GetParam() << ": " << cases << " cases (faults "
            << std::size(kFaults) << "), " << failed << " failed, " << reruns
            << " runs made again because their fault met no request" << std::endl;
}

INSTANTIATE_TEST_SUITE_P(Recipes, FaultPoints, ::testing::ValuesIn(recipe_names()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           return param_info.param;
                         });

}  // namespace
}  // namespace zkr
