// A train yard worker: one process, one zkr::Client (one session), applying
// its share of the published stream.
//
// Work distribution: every worker generates the same stream from the seed and
// takes the messages whose index is its number modulo the worker count, in
// stream order, each once the leading dispatcher has published it (the
// cursor node, watched, says how far the stream is out). A train's next
// message may belong to another worker, so before applying message k of a
// train a worker waits (on a watch) until the train's record says k-1 were
// applied. This cannot deadlock: what is published is a prefix of the stream,
// the unapplied published message with the smallest index always has its
// predecessor applied, and its worker has finished all its earlier messages,
// so it is working on that one. Before waiting for a publish a worker reports
// what it applied, as the dispatcher publishes only that far ahead of it.
//
// Exactly once: the train record holds the count of its applied messages
// (seq), and every write is one multi that sets the train and its locations
// with the versions read under the locks. A retry after a lost reply reads
// seq again and sees whether the first attempt went through; a write by a
// worker that lost its locks fails as a whole (guarded_write checks the lock
// nodes in the same multi), so nothing is half applied or applied twice.
#include <sys/prctl.h>

#include <algorithm>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "dispatch.hpp"
#include "flag.hpp"
#include "yard.hpp"
#include "zkr/client.hpp"
#include "zkr/multi_lock.hpp"

namespace trainyard {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kMaxAttempts = 200;        // per message
constexpr auto kMessageDeadline = 120s;  // per message, all attempts
constexpr auto kLockTimeout = 5s;        // per acquisition, then retry
constexpr auto kReportEvery = 1s;

TrainRecord train_of(const zkr::NodeData& data, const std::string& path) {
  auto train = decode_train(data.data);
  if (!train) throw std::runtime_error("not a train record at " + path);
  return *train;
}

LocationRecord location_of(const zkr::NodeData& data, const std::string& path) {
  auto location = decode_location(data.data);
  if (!location) throw std::runtime_error("not a location record at " + path);
  return *location;
}

enum class Outcome { applied, retry };

class Worker {
 public:
  explicit Worker(const Options& options) : options_(options), client_(client_options()) {}

  int run() {
    if (!client_.block_until_connected(15s))
      throw std::runtime_error("could not connect to " + options_.connect);
    const auto stream = generate(options_.stream);
    std::vector<Message> mine;
    for (const auto& m : stream)
      if (m.index % options_.workers == options_.worker) mine.push_back(m);
    // --chaos: worker 0 expires its own session a third of the way through,
    // while it holds the locks of a message and before it writes.
    if (options_.chaos && options_.worker == 0 && !mine.empty())
      expire_from_ = mine[mine.size() / 3].index;
    // And the last worker loses a lock node two thirds of the way through,
    // on that message or, if the link drops before the refusal is seen, on
    // the next attempt.
    if (options_.chaos && options_.worker == options_.workers - 1 && !mine.empty())
      steal_from_ = mine[mine.size() * 2 / 3].index;

    auto last_report = Clock::now();
    for (const auto& m : mine) {
      process(m);
      if (Clock::now() - last_report >= kReportEvery) {
        report(false);
        last_report = Clock::now();
      }
    }
    report(true);
    return 0;
  }

 private:
  zkr::ClientOptions client_options() const {
    zkr::ClientOptions o;
    o.connect_string = options_.connect;
    // Short, so that a session lost with a killed server is noticed quickly.
    o.session_timeout = 6s;
    o.connection_timeout = 10s;
    return o;
  }

  void process(const Message& m) {
    const auto deadline = Clock::now() + kMessageDeadline;
    for (int attempt = 0; attempt < kMaxAttempts && Clock::now() < deadline; ++attempt) {
      try {
        wait_for_published(m, deadline);
        // An earlier attempt whose reply was lost may have applied it already.
        if (wait_for_predecessor(m, deadline) >= m.seq ||
            (options_.locks ? apply_locked(m) : apply_unlocked(m)) == Outcome::applied) {
          ++stats_.applied;
          return;
        }
      } catch (const zkr::KeeperError& e) {
        if (!zkr::is_connection_error(e.errc())) throw;
        ++stats_.errors;  // outcome unknown: the next attempt reads seq and knows
      }
    }
    throw std::runtime_error("message " + std::to_string(m.index) + " not applied after " +
                             std::to_string(kMaxAttempts) + " attempts or " +
                             std::to_string(kMessageDeadline.count()) + " s");
  }

  // Waits until the dispatcher has published message m.
  void wait_for_published(const Message& m, Clock::time_point deadline) {
    if (published_ > m.index) return;
    const auto path = cursor_path(options_);
    // The cursor only grows; a round ends on its change, a session event, or
    // after kReportEvery to try a report that failed again.
    while (Clock::now() < deadline) {
      // The dispatcher publishes only so far ahead of what we report applied.
      if (reported_applied_ != stats_.applied) report(false);
      auto changed = std::make_shared<Flag>();
      auto keeper = client_.keeper_when_connected();
      const auto data = await_node(
          keeper->async_get(path, [changed](const zkr::WatchEvent&) { changed->raise(); }), path);
      const auto cursor = decode_cursor(data.data);
      if (!cursor) throw std::runtime_error("not a cursor at " + path);
      published_ = cursor->next;
      if (published_ > m.index) return;
      changed->wait_until(std::min(deadline, Clock::now() + kReportEvery));
    }
    throw std::runtime_error("message " + std::to_string(m.index) + " was not published in time");
  }

  // Waits until the train's previous message is applied; returns the train's seq.
  int wait_for_predecessor(const Message& m, Clock::time_point deadline) {
    const auto path = train_path(options_, m.train);
    // seq only grows, so at most m.seq changes to see (plus a few session events)
    for (int i = 0; i <= m.seq + 16; ++i) {
      auto changed = std::make_shared<Flag>();
      auto keeper = client_.keeper_when_connected();
      const auto train = train_of(
          await_node(
              keeper->async_get(path, [changed](const zkr::WatchEvent&) { changed->raise(); }),
              path),
          path);
      if (train.seq >= m.seq - 1) return train.seq;
      if (!changed->wait_until(deadline)) break;
    }
    throw std::runtime_error("message " + std::to_string(m.index) +
                             ": the train's previous message was not applied in time");
  }

  std::vector<std::string> lock_paths(const Message& m) const {
    const auto root = lock_root(options_);
    std::vector<std::string> paths{root + "/train-" + std::to_string(m.train)};
    if (m.from >= 0) paths.push_back(root + "/loc-" + std::to_string(m.from));
    if (m.to >= 0) paths.push_back(root + "/loc-" + std::to_string(m.to));
    return paths;
  }

  Outcome apply_locked(const Message& m) {
    zkr::MultiLock locks(client_, lock_paths(m));
    const auto asked = Clock::now();
    if (!locks.try_acquire_for(kLockTimeout)) {
      ++stats_.timeouts;
      return Outcome::retry;
    }
    stats_.lock_wait_us.push_back(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - asked).count());
    // Released on every way out, by this thread (an InterProcessMutex is per thread).
    struct Release {
      zkr::MultiLock& locks;
      ~Release() { locks.release(); }
    } release{locks};
    return write_locked(m, locks);
  }

  // Reads, computes and writes one message's records while holding its locks.
  Outcome write_locked(const Message& m, const zkr::MultiLock& locks) {
    // The three reads are pipelined: one round trip.
    auto keeper = client_.keeper();
    const auto tpath = train_path(options_, m.train);
    const auto fpath = m.from >= 0 ? location_path(options_, m.from) : std::string();
    const auto dpath = m.to >= 0 ? location_path(options_, m.to) : std::string();
    auto train_reply = keeper->async_get(tpath);
    std::future<zkr::Result<zkr::NodeData>> from_reply, to_reply;
    if (!fpath.empty()) from_reply = keeper->async_get(fpath);
    if (!dpath.empty()) to_reply = keeper->async_get(dpath);
    const auto train_data = await_node(std::move(train_reply), tpath);
    auto train = train_of(train_data, tpath);
    if (train.seq >= m.seq) return Outcome::applied;  // by our own lost-reply attempt
    if (train.seq != m.seq - 1)
      throw std::runtime_error("message " + std::to_string(m.index) + ": train at seq " +
                               std::to_string(train.seq) + " under its lock");
    zkr::NodeData from_data, to_data;
    if (!fpath.empty()) from_data = await_node(std::move(from_reply), fpath);
    if (!dpath.empty()) to_data = await_node(std::move(to_reply), dpath);
    LocationRecord from = fpath.empty() ? LocationRecord{} : location_of(from_data, fpath);
    LocationRecord to = dpath.empty() ? LocationRecord{} : location_of(to_data, dpath);
    apply(m, train, from, to);

    // Every write carries the version it was computed from.
    std::vector<zkr::Op> ops{zkr::op::Set{tpath, encode(train), train_data.stat.version}};
    if (!fpath.empty()) ops.push_back(zkr::op::Set{fpath, encode(from), from_data.stat.version});
    if (!dpath.empty()) ops.push_back(zkr::op::Set{dpath, encode(to), to_data.stat.version});
    std::vector<std::string> written{tpath};  // the ops' paths, in order
    for (const auto& path : {fpath, dpath})
      if (!path.empty()) written.push_back(path);

    const auto grants = locks.grants();
    if (grant_lost(grants)) {  // the link dropped while we read: do not even try
      ++stats_.abandoned;
      return Outcome::retry;
    }
    // Stolen from only while held (hence after that check): a lost grant's
    // node may be gone, and its name another's.
    const bool steal = steal_from_ >= 0 && m.index >= steal_from_;
    if (steal) {
      // --chaos: one of our lock nodes is deleted (as a careless operator
      // might) and we write at once, before the grant can tell us: the two
      // requests are pipelined, so the server sees the delete first, and the
      // guarded write must be refused.
      std::fprintf(
          stderr, "worker %d: chaos: deleting our own lock node %s and writing message %d anyway\n",
          options_.worker, grants.front().node_path().c_str(), m.index);
      (void)keeper->async_remove(grants.front().node_path());
    }
    if (expire_from_ >= 0 && m.index >= expire_from_ && expire_own_session(m))
      expire_from_ = -1;  // once
    const auto result = zkr::guarded_write(*keeper, grants, std::move(ops), kRequestTimeout);
    const auto error = std::string(zkr::errc_name(result.error));
    switch (result.outcome) {
      case zkr::GuardedWriteResult::Outcome::applied: return Outcome::applied;
      case zkr::GuardedWriteResult::Outcome::lock_lost:
        if (steal) steal_from_ = -1;  // the refusal the chaos wanted: once is enough
        ++stats_.refused;
        std::fprintf(stderr,
                     "worker %d: message %d: write refused, a lock was lost (%s); retrying\n",
                     options_.worker, m.index, error.c_str());
        return Outcome::retry;
      case zkr::GuardedWriteResult::Outcome::unknown:
        // Applied or not, we cannot tell: the next attempt reads seq and knows.
        ++stats_.errors;
        std::fprintf(stderr, "worker %d: message %d: write outcome unknown (%s); retrying\n",
                     options_.worker, m.index, error.c_str());
        return Outcome::retry;
      case zkr::GuardedWriteResult::Outcome::conflict:
        if (result.error != zkr::Errc::bad_version) break;
        ++stats_.conflicts;
        std::fprintf(stderr,
                     "worker %d: message %d: CONFLICT, %s was modified by someone else while "
                     "we held its lock\n",
                     options_.worker, m.index, written[result.failed_op].c_str());
        return Outcome::retry;
    }
    throw zkr::KeeperError(result.error, written[result.failed_op],
                           "message " + std::to_string(m.index) + ": write refused");
  }

  // --no-locks: read, compute, write back with no version: the classic lost
  // update whenever two workers touch one location at once.
  Outcome apply_unlocked(const Message& m) {
    auto keeper = client_.keeper_when_connected();
    const auto tpath = train_path(options_, m.train);
    const auto fpath = m.from >= 0 ? location_path(options_, m.from) : std::string();
    const auto dpath = m.to >= 0 ? location_path(options_, m.to) : std::string();
    auto train = train_of(await_node(keeper->async_get(tpath), tpath), tpath);
    if (train.seq >= m.seq) return Outcome::applied;
    LocationRecord from, to;
    if (!fpath.empty()) from = location_of(await_node(keeper->async_get(fpath), fpath), fpath);
    if (!dpath.empty()) to = location_of(await_node(keeper->async_get(dpath), dpath), dpath);
    apply(m, train, from, to);
    if (!fpath.empty()) keeper->set(fpath, encode(from), zkr::kAnyVersion, kRequestTimeout);
    if (!dpath.empty()) keeper->set(dpath, encode(to), zkr::kAnyVersion, kRequestTimeout);
    keeper->set(tpath, encode(train), zkr::kAnyVersion, kRequestTimeout);
    return Outcome::applied;
  }

  static bool grant_lost(const std::vector<zkr::Grant>& grants) {
    for (const auto& grant : grants)
      if (grant.lost()) return true;
    return false;
  }

  // Ends our own session the way an operator's network partition would: a
  // second handle joins the session with its id and password, and closing
  // that handle closes the session on the server. The locks we hold go with it.
  bool expire_own_session(const Message& m) {
    auto victim = client_.keeper();
    auto joined = std::make_shared<Flag>();
    zkr::KeeperConfig config;
    config.hosts = options_.connect;
    config.session_timeout = victim->session_timeout();
    config.session_id = victim->session_id();
    config.session_password = victim->session_password();
    auto intruder = zkr::connect_keeper(config, [joined](zkr::SessionState s) {
      if (s == zkr::SessionState::connected) joined->raise();
    });
    if (!joined->wait_until(Clock::now() + kRequestTimeout)) {
      // The ensemble may be electing: try again on the next attempt.
      std::fprintf(stderr, "worker %d: chaos: could not join our own session to expire it\n",
                   options_.worker);
      return false;
    }
    intruder.reset();
    ++stats_.expired;
    std::fprintf(stderr,
                 "worker %d: chaos: expired own session 0x%llx holding the locks of message %d\n",
                 options_.worker, static_cast<unsigned long long>(config.session_id), m.index);
    return true;
  }

  void report(bool done) {
    stats_.done = done;
    WorkerStats progress = stats_;
    if (!done) progress.lock_wait_us.clear();  // only the final report carries samples
    const auto path = worker_path(options_, options_.worker);
    const auto data = encode(progress);
    // Only this worker writes its znode, so an unversioned set is safe to repeat.
    try {
      client_.with_retry([&](zkr::Keeper& k) { return k.set(path, data); });
      reported_applied_ = progress.applied;
    } catch (const zkr::KeeperError&) {
      if (done) throw;  // the orchestrator needs the final report
      // A progress report can wait for the next one (the ensemble may be in chaos).
    }
  }

  const Options& options_;
  zkr::Client client_;
  WorkerStats stats_;
  int expire_from_ = -1;  // stream index from which to expire our session, until done
  int steal_from_ = -1;   // stream index from which to lose a lock node, until refused
  int published_ = 0;     // messages [0, published_) are published, as last read
  std::int64_t reported_applied_ = 0;
};

}  // namespace

int run_worker(const Options& options) {
  // Die with the orchestrator, whatever way it ends.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  try {
    Worker worker(options);
    return worker.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "worker %d failed: %s\n", options.worker, e.what());
    return 1;
  }
}

}  // namespace trainyard
