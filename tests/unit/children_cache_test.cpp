// ChildrenCache on the in-memory ensemble: the first read, events in order,
// a re-create told by czxid and a same-bytes write by mzxid, a missing,
// deleted and re-created parent, a reconnect and a session's end, a fault at
// every request the cache sends, and a seeded random run whose final view
// must be the server's tree. The pure diff is tested first.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "children_diff.hpp"
#include "support/fake_keeper.hpp"
#include "support/fault_keeper.hpp"
#include "zkr/children_cache.hpp"
#include "zkr/client.hpp"
#include "zkr/path.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;

constexpr auto kWait = 10s;  // bound on every wait; a healthy run takes milliseconds
const std::string kGroup = "/services/search";

ChildNode child(std::string data, std::int64_t czxid, std::int64_t mzxid, Version version = 0) {
  ChildNode n;
  n.data = std::move(data);
  n.stat.czxid = czxid;
  n.stat.mzxid = mzxid;
  n.stat.version = version;
  return n;
}

TEST(ChildrenDiff, TellsAddedUpdatedAndRemovedInNameOrder) {
  const ChildMap before{{"a", child("1", 5, 5)}, {"b", child("2", 6, 6)}, {"c", child("3", 7, 7)}};
  const ChildMap after{
      {"a", child("1", 5, 5)}, {"c", child("3x", 7, 9, 1)}, {"d", child("4", 8, 8)}};
  const std::vector<ChildEvent> expected{
      {ChildEventType::removed, "b", child("2", 6, 6)},
      {ChildEventType::updated, "c", child("3x", 7, 9, 1)},
      {ChildEventType::added, "d", child("4", 8, 8)},
  };
  EXPECT_EQ(detail::diff_children(before, after), expected);
  EXPECT_TRUE(detail::diff_children(after, after).empty());
}

TEST(ChildrenDiff, ARecreatedChildIsRemovedThenAddedByCzxidWhateverItsVersionAndData) {
  // Same name, data and version: only the czxid shows it is another node.
  const ChildMap before{{"a", child("x", 5, 5)}};
  const ChildMap after{{"a", child("x", 9, 9)}};
  const std::vector<ChildEvent> expected{{ChildEventType::removed, "a", child("x", 5, 5)},
                                         {ChildEventType::added, "a", child("x", 9, 9)}};
  EXPECT_EQ(detail::diff_children(before, after), expected);
}

TEST(ChildrenDiff, ADataChangeIsToldByMzxidEvenWithTheSameBytesAndAWrappedVersion) {
  const ChildMap before{{"a", child("x", 5, 6, 7)}};
  const ChildMap same_bytes{{"a", child("x", 5, 8, 8)}};
  EXPECT_EQ(detail::diff_children(before, same_bytes).size(), 1u);
  EXPECT_EQ(detail::diff_children(before, same_bytes)[0].type, ChildEventType::updated);
  // The version may come back to where it was (it wraps): the mzxid never does.
  const ChildMap same_version{{"a", child("y", 5, 10, 7)}};
  ASSERT_EQ(detail::diff_children(before, same_version).size(), 1u);
  EXPECT_EQ(detail::diff_children(before, same_version)[0].node.data, "y");
}

// The events a cache told, and a wait for its view to satisfy something.
class EventLog {
 public:
  void operator()(const ChildEvent& e) {
    std::lock_guard lock(mutex_);
    events_.push_back(e);
    changed_.notify_all();
  }
  std::vector<ChildEvent> events() {
    std::lock_guard lock(mutex_);
    return events_;
  }
  // Waits until pred(the events so far) holds, checking it at every event
  // (a cache publishes its view before it tells the events of it).
  bool wait(const std::function<bool(const std::vector<ChildEvent>&)>& pred) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kWait, [&] { return pred(events_); });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<ChildEvent> events_;
};

// Replays events over a view: what a listener that kept its own map has.
ChildMap replay(ChildMap view, const std::vector<ChildEvent>& events) {
  for (const auto& e : events) {
    if (e.type == ChildEventType::removed) {
      EXPECT_EQ(view.count(e.name), 1u) << "removed an unknown child " << e.name;
      view.erase(e.name);
    } else {
      EXPECT_EQ(view.count(e.name), e.type == ChildEventType::added ? 0u : 1u)
          << to_string(e.type) << " " << e.name;
      view[e.name] = e.node;
    }
  }
  return view;
}

// One ensemble, a Client with its own faults for the cache, and a raw
// session that changes the tree.
class Rig {
 public:
  Rig() {
    ClientOptions options;
    options.connect_string = "127.0.0.1:2181";  // not dialled: the factory is the fake's
    options.session_timeout = 4s;
    options.keeper_factory = test::with_faults(ensemble.factory(), faults);
    options.retry_policy = std::make_shared<RetryNTimes>(5, 10ms);
    options.sleeper = std::make_shared<RecordingSleeper>();
    options.lost_when_suspended_too_long = false;
    client = std::make_unique<Client>(options);
    EXPECT_TRUE(client->block_until_connected(kWait));
    raw = ensemble.connect();
  }
  ~Rig() {
    if (cache) cache->close();
  }

  ChildrenCache& start_cache() {
    ChildrenCacheOptions options;
    options.on_event = [l = log](const ChildEvent& e) { (*l)(e); };
    cache = std::make_unique<ChildrenCache>(*client, kGroup, options);
    cache->start();
    EXPECT_TRUE(cache->wait_until_initialized(kWait));
    return *cache;
  }

  // The children of kGroup as the server holds them now.
  ChildMap tree() const {
    ChildMap view;
    for (const auto& name : ensemble.children_now(kGroup)) {
      const auto path = join_path(kGroup, name);
      const auto stat = ensemble.exists_now(path);
      const auto data = ensemble.data_now(path);
      if (stat && data) view.emplace(name, ChildNode{*data, *stat});
    }
    return view;
  }

  // Waits until the cache's view is the server's tree, and the events told
  // so far (the first read's included, as additions to nothing) give that
  // view too.
  ::testing::AssertionResult converged() {
    const bool same = log->wait([&](const std::vector<ChildEvent>& events) {
      const auto t = tree();
      return cache->snapshot() == t && replay({}, events) == t;
    });
    if (same) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "cache " << describe(cache->snapshot()) << " server " << describe(tree())
           << " replayed " << describe(replay({}, log->events()));
  }

  static std::string describe(const ChildMap& view) {
    std::string out = "{";
    for (const auto& [name, node] : view)
      out += " " + name + "=" + node.data + "@" + std::to_string(node.stat.mzxid);
    return out + " }";
  }

  std::int64_t session() const { return client->keeper()->session_id(); }

  test::FakeEnsemble ensemble;  // first: outlives every keeper's watchers
  std::shared_ptr<test::Faults> faults = std::make_shared<test::Faults>();
  std::shared_ptr<EventLog> log = std::make_shared<EventLog>();
  std::unique_ptr<Client> client;
  std::shared_ptr<Keeper> raw;
  std::unique_ptr<ChildrenCache> cache;
};

void make_group(Keeper& k) {
  k.create_parents(kGroup, CreateMode::persistent);
  k.create(kGroup);
}

TEST(ChildrenCache, FirstReadThenEventsInOrderWithRecreateByCzxidAndRewriteByMzxid) {
  Rig rig;
  make_group(*rig.raw);
  rig.raw->create(kGroup + "/a", "1");
  rig.raw->create(kGroup + "/b", "2", CreateMode::ephemeral);
  auto& cache = rig.start_cache();
  EXPECT_EQ(cache.snapshot(), rig.tree());
  ASSERT_EQ(cache.snapshot().size(), 2u);
  EXPECT_EQ(cache.snapshot().at("b").stat.ephemeral_owner, rig.raw->session_id());

  ASSERT_TRUE(rig.converged());
  const auto first = rig.log->events().size();
  EXPECT_EQ(first, 2u);  // the first read: a and b added
  rig.raw->create(kGroup + "/c", "3");
  ASSERT_TRUE(rig.converged());
  rig.raw->set(kGroup + "/a", "1");  // the same bytes: a new mzxid all the same
  ASSERT_TRUE(rig.converged());
  // Deleted and made again in one atomic step, same data: a cache cannot
  // see a gap, only the new czxid.
  const auto old_b = rig.tree().at("b");
  (void)rig.raw->multi({op::Remove{kGroup + "/b"}, op::Create{kGroup + "/b", "2"}});
  ASSERT_TRUE(rig.converged());
  rig.raw->remove(kGroup + "/c");
  ASSERT_TRUE(rig.converged());

  auto events = rig.log->events();
  events.erase(events.begin(), events.begin() + static_cast<std::ptrdiff_t>(first));
  ASSERT_EQ(events.size(), 5u) << Rig::describe(rig.tree());
  EXPECT_EQ(events[0].type, ChildEventType::added);
  EXPECT_EQ(events[0].name, "c");
  EXPECT_EQ(events[1].type, ChildEventType::updated);
  EXPECT_EQ(events[1].name, "a");
  EXPECT_EQ(events[1].node.data, "1");
  EXPECT_EQ(events[2].type, ChildEventType::removed);
  EXPECT_EQ(events[2].name, "b");
  EXPECT_EQ(events[2].node, old_b);
  EXPECT_EQ(events[3].type, ChildEventType::added);
  EXPECT_EQ(events[3].name, "b");
  EXPECT_EQ(events[3].node.stat.ephemeral_owner, 0);  // the new node, persistent
  EXPECT_EQ(events[4].type, ChildEventType::removed);
  EXPECT_EQ(events[4].name, "c");
}

TEST(ChildrenCache, AMissingParentIsAnEmptyGroupAndItsDeleteAndRecreateAreFollowed) {
  Rig rig;
  auto& cache = rig.start_cache();  // no parent: initialized, empty
  EXPECT_TRUE(cache.snapshot().empty());
  make_group(*rig.raw);
  rig.raw->create(kGroup + "/a", "1");
  ASSERT_TRUE(rig.converged());
  EXPECT_EQ(cache.snapshot().size(), 1u);

  rig.raw->remove(kGroup + "/a");
  rig.raw->remove(kGroup);
  ASSERT_TRUE(rig.converged());
  rig.raw->create(kGroup);
  rig.raw->create(kGroup + "/a", "again");
  ASSERT_TRUE(rig.converged());
  EXPECT_EQ(cache.snapshot().at("a").data, "again");
}

TEST(ChildrenCache, AReconnectReadsAgainAndTheWatchesStillWork) {
  Rig rig;
  make_group(*rig.raw);
  rig.raw->create(kGroup + "/a", "1");
  rig.start_cache();
  rig.ensemble.disconnect(rig.session());
  rig.raw->set(kGroup + "/a", "2");
  rig.raw->create(kGroup + "/b", "3");
  rig.ensemble.reconnect(rig.session());
  ASSERT_TRUE(rig.converged());
  rig.raw->set(kGroup + "/b", "4");  // watched again after the reconnect
  ASSERT_TRUE(rig.converged());
}

TEST(ChildrenCache, AReplyLostWithTheLinkSetNoWatchSoTheReconnectReadsItAgain) {
  Rig rig;
  make_group(*rig.raw);
  rig.raw->create(kGroup + "/a", "1");
  // The first read of /a is applied (the server would arm its watch) but
  // its reply is lost with the link: no watch is set.
  auto& rule = rig.faults->on(test::OpKind::get, kGroup + "/a")
                   .lose_reply_after_apply()
                   .after([&](const test::FaultCall&) {
                     rig.ensemble.disconnect(rig.session());
                     rig.ensemble.reconnect(rig.session());
                   });
  rig.start_cache();
  EXPECT_EQ(rule.fired(), 1);
  ASSERT_TRUE(rig.converged());
  rig.raw->set(kGroup + "/a", "2");  // seen only if the re-read set the watch
  ASSERT_TRUE(rig.converged());
  EXPECT_EQ(rig.cache->snapshot().at("a").data, "2");
}

TEST(ChildrenCache, ASessionsEndIsFollowedByAWholeReadInTheNextOne) {
  Rig rig;
  make_group(*rig.raw);
  rig.raw->create(kGroup + "/a", "1");
  rig.start_cache();
  const auto old = rig.session();
  rig.ensemble.expire(old);
  rig.raw->set(kGroup + "/a", "2");
  rig.raw->create(kGroup + "/b", "3");
  ASSERT_TRUE(rig.converged());  // read again, in the new session: the old one is gone
  EXPECT_NE(rig.session(), old);
  rig.raw->remove(kGroup + "/a");  // watched in the new session
  ASSERT_TRUE(rig.converged());
  EXPECT_EQ(rig.cache->snapshot().count("a"), 0u);
}

TEST(ChildrenCache, MisuseIsRefused) {
  Rig rig;
  EXPECT_THROW(ChildrenCache(*rig.client, "relative"), std::invalid_argument);
  ChildrenCache twice(*rig.client, kGroup);
  twice.start();
  EXPECT_THROW(twice.start(), std::logic_error);
  twice.close();
  EXPECT_THROW(twice.start(), std::logic_error);
}

// ---- A fault at every request the cache sends.
//
// The script: a group with two children; the cache starts; then each step
// below, waiting for the cache to converge after each; then a probe (a
// change the cache can only see through a watch set after the fault). Its
// requests are recorded once without faults; then for every index k and
// every fault the script runs again with that fault at request k:
//   drop        the link drops before request k (it fails with connection_loss)
//               and comes back on the same session;
//   reply_lost  request k is applied (a read arms its watch on the server),
//               its reply is lost with the link, which comes back;
//   expired     the session expires before request k.
enum class Fault { none, drop, reply_lost, expired };
const char* name_of(Fault f) {
  switch (f) {
    case Fault::none: return "none";
    case Fault::drop: return "drop";
    case Fault::reply_lost: return "reply_lost";
    case Fault::expired: return "expired";
  }
  return "?";
}

struct ScriptRun {
  std::size_t requests = 0;
  bool fired = false;
};

ScriptRun run_script(Fault fault, std::size_t k) {
  ScriptRun out;  // before the rig: the hooks write it until the rig is gone
  Rig rig;
  make_group(*rig.raw);
  rig.raw->create(kGroup + "/a", "1");
  rig.raw->create(kGroup + "/b", "2", CreateMode::ephemeral);
  if (fault != Fault::none) {
    auto& rule = rig.faults->on_request(k);
    switch (fault) {
      case Fault::drop:
        rule.before([&](const test::FaultCall&) {
              out.fired = true;
              rig.ensemble.disconnect(rig.session());
            })
            .after([&](const test::FaultCall&) { rig.ensemble.reconnect(rig.session()); });
        break;
      case Fault::reply_lost:
        rule.lose_reply_after_apply().after([&](const test::FaultCall&) {
          out.fired = true;
          rig.ensemble.disconnect(rig.session());
          rig.ensemble.reconnect(rig.session());
        });
        break;
      case Fault::expired:
        rule.before([&](const test::FaultCall&) {
          out.fired = true;
          rig.ensemble.expire(rig.session());
        });
        break;
      case Fault::none: break;
    }
  }
  rig.start_cache();
  const std::vector<std::function<void()>> steps{
      [&] { rig.raw->set(kGroup + "/a", "1b"); },
      [&] { rig.raw->create(kGroup + "/c", "3"); },
      [&] { rig.raw->remove(kGroup + "/b"); },
      [&] {
        (void)rig.raw->multi({op::Remove{kGroup + "/a"}, op::Create{kGroup + "/a", "1c"}});
      },
      [&] {
        rig.raw->remove(kGroup + "/a");
        rig.raw->remove(kGroup + "/c");
        rig.raw->remove(kGroup);
      },
      [&] {
        rig.raw->create(kGroup);
        rig.raw->create(kGroup + "/d", "4");
      },
      [&] { rig.raw->set(kGroup + "/d", "probe"); },  // the probe
  };
  for (std::size_t i = 0; i < steps.size(); ++i) {
    steps[i]();
    EXPECT_TRUE(rig.converged()) << name_of(fault) << " at request " << k << ", step " << i;
  }
  rig.cache->close();
  out.requests = rig.faults->requests();
  return out;
}

TEST(ChildrenCacheFaultPoints, ConvergesAndKeepsWatchingWithAFaultAtEveryRequest) {
  // The fewest requests the script sends: a children read per step, and
  // the first read's three.
  constexpr std::size_t kAtLeast = 14;
  const auto recorded = run_script(Fault::none, 0).requests;
  ASSERT_GE(recorded, kAtLeast);
  int cases = 0;
  int fired = 0;
  for (const Fault fault : {Fault::drop, Fault::reply_lost, Fault::expired}) {
    // Runs differ by a few requests (two watches that fire together make
    // one read or two, by timing): every index any run of this fault
    // reached is tried.
    std::size_t reached = recorded;
    std::size_t struck = 0;
    for (std::size_t k = 0; k < reached; ++k) {
      const auto run = run_script(fault, k);
      ++cases;
      reached = std::max(reached, run.requests);
      // A fault at an index the run never reached cannot strike; any it reached must have.
      if (run.requests > k) {
        EXPECT_TRUE(run.fired) << name_of(fault) << " at request " << k << " never struck";
      }
      struck += run.fired ? 1 : 0;
      if (::testing::Test::HasFailure()) return;
    }
    EXPECT_GE(struck, kAtLeast) << name_of(fault) << ": too few points struck";
    fired += static_cast<int>(struck);
  }
  std::cout << "children cache fault points: " << recorded << " requests recorded, " << cases
            << " cases, " << fired << " struck\n";
}

// ---- A seeded random run: changes, link drops and expiries in any order;
// ---- the final view must be the server's tree.
TEST(ChildrenCache, ASeededRandomRunEndsWithTheServersTree) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 random(seed);
  Rig rig;
  make_group(*rig.raw);
  rig.start_cache();
  const std::vector<std::string> names{"a", "b", "c", "d", "e"};
  for (int i = 0; i < 300; ++i) {
    const auto path = join_path(kGroup, names[random() % names.size()]);
    const bool group_exists = rig.ensemble.exists_now(kGroup).has_value();
    const bool exists = rig.ensemble.exists_now(path).has_value();
    switch (random() % 10) {
      case 0:
      case 1:
      case 2:
        if (group_exists && !exists) rig.raw->create(path, std::to_string(i));
        break;
      case 3:
      case 4:
        if (exists) rig.raw->set(path, std::to_string(i));
        break;
      case 5:
      case 6:
        if (exists) rig.raw->remove(path);
        break;
      case 7:
        if (exists) (void)rig.raw->multi({op::Remove{path}, op::Create{path, std::to_string(i)}});
        break;
      case 8:
        if (random() % 4 == 0 && group_exists && rig.ensemble.children_now(kGroup).empty())
          rig.raw->remove(kGroup);
        else if (!group_exists) rig.raw->create(kGroup);
        break;
      case 9:
        if (random() % 3 == 0) {
          rig.ensemble.expire(rig.session());
          ASSERT_TRUE(rig.client->block_until_connected(kWait));
        } else {
          rig.ensemble.disconnect(rig.session());
          rig.ensemble.reconnect(rig.session());
        }
        break;
    }
  }
  ASSERT_TRUE(rig.converged());
}

}  // namespace
}  // namespace zkr
