// A fault at every request of PersistentNode's script, in both modes, on the
// in-memory ensemble.
//
// The script of node A (a Client of its own, whose requests the Faults
// count): start() until the servers hold A's node with "v1", set_data("v2")
// until they hold "v2", then close(). Its requests are first recorded without
// faults; then, for every request index k and every fault kind, the script
// runs again with that fault at request k:
//   drop        the link drops before request k is sent, and comes back on
//               the same session;
//   reply_lost  request k is applied, then the link drops and its reply is lost;
//   expired     A's session expires before request k is sent;
//   deleted     another client deletes A's node before request k;
//   replaced    another client deletes A's node (if there) and makes its own
//               at the path before request k: ephemeral in A's ephemeral mode,
//               persistent in its persistent mode.
// Judged, at each step: the servers come to hold A's node with the step's
// data (an ephemeral one owned by A's current session), or, once replaced,
// the other client's node is never deleted by A: an ephemeral one is refused
// (A waits, and makes its own once the other client deletes theirs), a
// persistent one adopted with what it holds. After close(): nothing of A's is
// left, except a persistent node whose create's reply was lost (nothing can
// prove it A's, so it is left), and the other client's node is still there.
//
// PERSISTENT_FAULTS_ONLY=k:fault runs one case; PERSISTENT_FAULTS_DEBUG=1
// logs A's Client and every request.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "lock_fixture.hpp"
#include "support/state_counter.hpp"
#include "zkr/persistent_node.hpp"

namespace zkr {
namespace {

const std::string kNode = "/services/search/host-7";
const std::string kTheirs = "theirs";

enum class Fault { drop, reply_lost, expired, deleted, replaced };
constexpr Fault kFaults[] = {Fault::drop, Fault::reply_lost, Fault::expired, Fault::deleted,
                             Fault::replaced};
const char* name_of(Fault f) {
  switch (f) {
    case Fault::drop: return "drop";
    case Fault::reply_lost: return "reply_lost";
    case Fault::expired: return "expired";
    case Fault::deleted: return "deleted";
    case Fault::replaced: return "replaced";
  }
  return "?";
}

// Wakes the test whenever the node announces a state or the other client
// replaced the node, to wait for a condition on both.
class Changes {
 public:
  void poke() {
    {
      std::lock_guard lock(mutex_);
      ++count_;
    }
    changed_.notify_all();
  }
  template <class Pred>
  bool wait(Pred pred) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kWait, pred);
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int count_ = 0;  // guarded by mutex_
};

// What one run of the script came to.
struct Outcome {
  std::size_t requests = 0;    // A's requests in all
  bool fired = false;          // the fault struck
  bool left_unproven = false;  // a persistent node whose create's reply was lost, left
  std::vector<std::string> failures;
};

// One run: a fresh ensemble, A, and the other client.
class Scene {
 public:
  Scene(CreateMode mode, std::optional<std::pair<std::size_t, Fault>> fault)
      : mode_(mode), fault_(fault) {
    other_ = ensemble_.connect();
    ClientOptions options;
    options.connect_string = "127.0.0.1:2181";  // not dialled: the factory is the fake's
    options.session_timeout = 4s;
    options.keeper_factory = test::with_faults(ensemble_.factory(), faults_);
    options.retry_policy = std::make_shared<RetryNTimes>(5, 10ms);
    options.sleeper = std::make_shared<RecordingSleeper>();
    options.logging.level =
        std::getenv("PERSISTENT_FAULTS_DEBUG") ? LogLevel::debug : LogLevel::off;
    client_ = std::make_unique<Client>(options);
    client_->add_listener([states = states_](ConnectionState s) { states->on(s); });
    if (!client_->block_until_connected(kWait)) fail("A did not connect");
    if (fault_) install(fault_->first, fault_->second);
    if (std::getenv("PERSISTENT_FAULTS_DEBUG"))
      faults_->tap([](std::size_t i, test::OpKind kind) {
        std::cerr << "req " << i << " " << test::to_string(kind) << "\n";
      });
  }

  Outcome run() {
    PersistentNodeOptions options;
    options.mode = mode_;
    options.on_state = [changes = changes_](PersistentNodeState) { changes->poke(); };
    PersistentNode node(*client_, kNode, "v1", options);
    node.start();
    reach(node, "v1");
    node.set_data("v2");
    reach(node, "v2");
    node.close();
    judge_close();
    out_.requests = faults_->requests();
    out_.fired = fired_;
    return out_;
  }

 private:
  void fail(const std::string& what) { out_.failures.push_back(what); }

  std::int64_t a_session() { return client_->keeper()->session_id(); }

  // The step is reached when the servers hold A's node with `data` and A
  // says present; or, once their node replaced A's, when that is dealt with
  // as the mode says. A never writes kTheirs: a node with it is theirs.
  void reach(PersistentNode& node, const std::string& data) {
    for (int round = 0; round < 3; ++round) {
      const bool settled = test::wait_node(
          *other_, kNode,
          [&](const std::optional<NodeData>& n) {
            if (!n) return false;
            if (n->data == kTheirs) return true;  // judged below
            const bool owner_ok = mode_ == CreateMode::ephemeral
                                      ? n->stat.ephemeral_owner == a_session()
                                      : n->stat.ephemeral_owner == 0;
            return owner_ok && n->data == data;
          },
          kWait);
      if (!settled) return fail("the servers never held A's node with " + data);
      // Theirs may come after the servers showed ours, before A's look.
      if (!changes_->wait(
              [&] { return node.state() == PersistentNodeState::present || pending(); }))
        return fail("A never said present with " + data);
      if (!pending()) return;
      handled_ = true;
      if (mode_ == CreateMode::persistent) continue;  // adopted as it is
      if (!changes_->wait([&] { return node.state() == PersistentNodeState::refused; }))
        return fail("another session's node at the path was not refused");
      const auto stat = ensemble_.exists_now(kNode);
      if (!stat || stat->czxid != theirs_) return fail("their node was deleted");
      other_->remove(kNode);  // they let go: A makes its own
      theirs_ = 0;
    }
    fail("the step never settled");
  }

  // Their node replaced ours and the test has not dealt with it yet.
  bool pending() const { return theirs_ != 0 && !handled_; }

  void judge_close() {
    const auto stat = ensemble_.exists_now(kNode);
    if (theirs_ != 0) {
      if (!stat || stat->czxid != theirs_) fail("close() deleted the other client's node");
      return;
    }
    if (mode_ == CreateMode::persistent && create_reply_lost_) {
      // Nothing proves it A's: it must be left, not guessed at.
      if (!stat) fail("a persistent node A could not prove its own was deleted");
      out_.left_unproven = true;
      return;
    }
    if (stat) fail("close() left A's node behind");
    if (!ensemble_.ephemerals_of(a_session()).empty()) fail("an ephemeral node of A's is left");
  }

  void drop_link() {
    if (!states_->announced_after(ConnectionState::suspended,
                                  [&] { ensemble_.disconnect(a_session()); }))
      fail("suspension not announced");
  }

  void install(std::size_t k, Fault fault) {
    auto& rule = faults_->on_request(k);
    switch (fault) {
      case Fault::drop:
        rule.before([this](const test::FaultCall&) {
              fired_ = true;
              drop_link();
            })
            .after([this](const test::FaultCall&) { ensemble_.reconnect(a_session()); });
        break;
      case Fault::reply_lost:
        rule.lose_reply_after_apply().after([this](const test::FaultCall& call) {
          fired_ = true;
          // The node's create is a multi (create and set) whose first op is it.
          if (call.kind == test::OpKind::multi && call.path == kNode && call.error == Errc::ok)
            create_reply_lost_ = true;
          drop_link();
          ensemble_.reconnect(a_session());
        });
        break;
      case Fault::expired:
        rule.before([this](const test::FaultCall&) {
          fired_ = true;
          if (!states_->announced_after(ConnectionState::lost,
                                        [&] { ensemble_.expire(a_session()); }))
            fail("expiry not announced");
        });
        break;
      case Fault::deleted:
        rule.before([this](const test::FaultCall&) {
          fired_ = true;
          (void)other_->try_remove(kNode);
        });
        break;
      case Fault::replaced:
        rule.before([this](const test::FaultCall&) {
          fired_ = true;
          (void)other_->try_remove(kNode);
          other_->create_parents(kNode, CreateMode::persistent);
          const auto made = other_->try_create(kNode, kTheirs, mode_);
          if (made.ok()) theirs_ = made.value().stat.czxid;
          changes_->poke();
        });
        break;
    }
  }

  const CreateMode mode_;
  const std::optional<std::pair<std::size_t, Fault>> fault_;
  test::FakeEnsemble ensemble_;
  std::shared_ptr<Keeper> other_;
  std::shared_ptr<test::Faults> faults_ = std::make_shared<test::Faults>();
  std::shared_ptr<test::StateCounter> states_ = std::make_shared<test::StateCounter>(kWait);
  std::unique_ptr<Client> client_;
  std::atomic<bool> fired_{false};
  std::atomic<bool> create_reply_lost_{false};
  std::atomic<std::int64_t> theirs_{0};  // the czxid of the other client's node at the path
  std::atomic<bool> handled_{false};     // the test dealt with their node
  std::shared_ptr<Changes> changes_ = std::make_shared<Changes>();
  Outcome out_;
};

class PersistentNodeFaultPoints : public ::testing::TestWithParam<CreateMode> {};

TEST_P(PersistentNodeFaultPoints, EveryFaultAtEveryRequestKeepsTheNodeAndLeavesNothing) {
  const CreateMode mode = GetParam();
  const auto clean = Scene(mode, std::nullopt).run();
  ASSERT_TRUE(clean.failures.empty()) << clean.failures.front();
  ASSERT_GE(clean.requests, 5u) << "the script sent too few requests to mean anything";
  int cases = 0;
  int struck = 0;
  int left_unproven = 0;  // cases that reached the lost create reply of a persistent node
  const char* only = std::getenv("PERSISTENT_FAULTS_ONLY");
  for (std::size_t k = 0; k < clean.requests; ++k) {
    for (const Fault fault : kFaults) {
      if (only && std::to_string(k) + ":" + name_of(fault) != only) continue;
      const auto out = Scene(mode, std::pair{k, fault}).run();
      ++cases;
      struck += out.fired ? 1 : 0;
      left_unproven += out.left_unproven ? 1 : 0;
      for (const auto& failure : out.failures)
        ADD_FAILURE() << name_of(fault) << " at request " << k << ": " << failure;
    }
  }
  // Over the whole table only: one case picked by hand need not be that one.
  if (mode == CreateMode::persistent && !only) {
    EXPECT_GE(left_unproven, 1) << "no case lost the reply to the node's create";
  }
  // A run may send a request more or fewer than the recording (a look a
  // slow reply made due), but nearly every fault must have struck.
  EXPECT_GE(struck, cases * 9 / 10) << struck << " of " << cases << " faults struck";
  std::cout << "[ persistent node, " << (mode == CreateMode::ephemeral ? "ephemeral" : "persistent")
            << " ] " << clean.requests << " requests x " << std::size(kFaults)
            << " faults: " << cases << " cases, " << struck << " struck, " << left_unproven
            << " left unproven\n";
}

INSTANTIATE_TEST_SUITE_P(Modes, PersistentNodeFaultPoints,
                         ::testing::Values(CreateMode::ephemeral, CreateMode::persistent),
                         [](const ::testing::TestParamInfo<CreateMode>& mode) {
                           return mode.param == CreateMode::ephemeral ? "Ephemeral" : "Persistent";
                         });

}  // namespace
}  // namespace zkr
