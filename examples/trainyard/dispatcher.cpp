// A train yard dispatcher candidate: one process, one session, one
// participant of the dispatchers' LeaderLatch. The leader publishes the
// stream to the workers (see dispatch.hpp for the record); the others stand
// by, and take over when its node goes (killed: when its session expires).
//
// A new leader resumes from the cursor the servers hold, never from its
// memory: every publish is a guarded_write under its term that sets the
// cursor with the version it read and creates the batch's node, so a publish
// by a deposed leader, or one computed from a stale cursor, is refused as a
// whole. A publish whose reply is lost is found out by reading the cursor
// again. Every candidate ends once the cursor says the whole stream is out.
#include <sys/prctl.h>
#include <unistd.h>

#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "dispatch.hpp"
#include "yard.hpp"
#include "zkr/client.hpp"
#include "zkr/leader_latch.hpp"

namespace trainyard {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Short, so that a killed leader's node goes (and a failover starts) soon.
constexpr auto kSessionTimeout = 4s;

// Raised from watches and stop callbacks; waited on with the count seen before
// the reads, so that a change in between is not missed.
struct Signal {
  std::mutex mutex;
  std::condition_variable cv;
  std::uint64_t raised = 0;
  void raise() {
    std::lock_guard lock(mutex);
    ++raised;
    cv.notify_all();
  }
  std::uint64_t count() {
    std::lock_guard lock(mutex);
    return raised;
  }
  void wait_past(std::uint64_t seen, Clock::duration at_most) {
    std::unique_lock lock(mutex);
    cv.wait_for(lock, at_most, [&] { return raised != seen; });
  }
};

Cursor cursor_of(const zkr::NodeData& data, const std::string& path) {
  auto cursor = decode_cursor(data.data);
  if (!cursor) throw std::runtime_error("not a cursor at " + path);
  return *cursor;
}

class Dispatcher {
 public:
  explicit Dispatcher(const Options& options)
      : options_(options),
        client_(client_options()),
        total_(static_cast<int>(generate(options.stream).size())),
        name_("dispatcher " + std::to_string(options.dispatcher)),
        stats_path_(dispatchers_path(options) + "/d" + std::to_string(options.dispatcher) + "-" +
                    std::to_string(getpid())) {}

  int run() {
    if (!client_.block_until_connected(15s))
      throw std::runtime_error("could not connect to " + options_.connect);
    client_.with_retry([&](zkr::Keeper& k) {
      auto created = k.try_create(stats_path_, encode(stats_));
      if (!created.ok() && created.error() != zkr::Errc::node_exists) (void)created.value();
      return 0;
    });
    zkr::LeaderLatch latch(
        client_, latch_path(options_),
        "dispatcher-" + std::to_string(options_.dispatcher) + "-pid" + std::to_string(getpid()));
    std::jthread finisher([this](std::stop_token stop) {
      try {
        watch_until_published(stop);
      } catch (...) {  // ends this candidate: run() throws it once this thread is joined
        failure_ = std::current_exception();
        done_.request_stop();
        wake_->raise();
      }
    });
    std::int64_t last_epoch = 0;
    while (!done_.stop_requested()) {
      try {
        if (!latch.await_leadership(done_.get_token())) break;
        const auto term = latch.term();
        if (term.fencing_token() != last_epoch) {
          last_epoch = term.fencing_token();
          std::fprintf(stderr, "%s: leading, epoch %lld\n", name_.c_str(),
                       static_cast<long long>(last_epoch));
        }
        lead(term);
      } catch (const zkr::KeeperError& e) {
        if (!zkr::is_connection_error(e.errc())) throw;
        // The link failed: the term may live on (then the await returns at
        // once) or be lost (then it waits for the next one).
      }
    }
    latch.close();
    finisher.request_stop();
    finisher.join();
    if (failure_) std::rethrow_exception(failure_);
    stats_.done = true;
    client_.with_retry([&](zkr::Keeper& k) { return k.set(stats_path_, encode(stats_)); });
    return 0;
  }

 private:
  zkr::ClientOptions client_options() const {
    zkr::ClientOptions o;
    o.connect_string = options_.connect;
    o.session_timeout = kSessionTimeout;
    o.connection_timeout = 10s;
    return o;
  }

  // Publishes while `term` lasts and the stream is not all out.
  void lead(const zkr::Grant& term) {
    const auto epoch = term.fencing_token();
    std::stop_callback on_lost(term.lost_token(), [wake = wake_] { wake->raise(); });
    bool first = true;
    while (!term.lost() && !done_.stop_requested()) {
      const auto seen = wake_->count();
      auto keeper = client_.keeper_when_connected();
      const auto path = cursor_path(options_);
      const auto data = await_node(keeper->async_get(path), path);
      const auto cursor = cursor_of(data, path);
      if (cursor.next >= total_) {
        done_.request_stop();
        return;
      }
      if (cursor.epoch > epoch) {
        // A newer leader published, so our node is gone; the lost signal may
        // still be on its way to this thread.
        const auto deadline = Clock::now() + kRequestTimeout;
        while (!term.lost() && Clock::now() < deadline)
          wake_->wait_past(wake_->count(), kRecheckEvery);
        if (!term.lost())
          throw std::runtime_error("epoch " + std::to_string(cursor.epoch) +
                                   " published while we lead with epoch " + std::to_string(epoch));
        return;
      }
      if (cursor.next - applied(*keeper) >= kPublishWindow) {
        wake_->wait_past(seen, kRecheckEvery);
        continue;
      }
      const auto batch = next_batch(cursor, total_, kBatchSize, epoch);
      std::vector<zkr::Op> ops{
          zkr::op::Set{path, encode(advance(cursor, batch, options_.dispatcher)),
                       data.stat.version},
          zkr::op::Create{batch_path(options_, batch.first), encode(batch)}};
      const auto result = zkr::guarded_write(*keeper, term, std::move(ops), kRequestTimeout);
      const auto error = std::string(zkr::errc_name(result.error));
      switch (result.outcome) {
        case zkr::GuardedWriteResult::Outcome::applied:
          if (first)
            std::fprintf(stderr, "%s: epoch %lld: first publish, messages [%d, %d)\n",
                         name_.c_str(), static_cast<long long>(epoch), batch.first,
                         batch.first + batch.count);
          first = false;
          break;
        case zkr::GuardedWriteResult::Outcome::lock_lost:
          ++stats_.refused;
          std::fprintf(stderr, "%s: epoch %lld: publish refused, the term is over (%s)\n",
                       name_.c_str(), static_cast<long long>(epoch), error.c_str());
          report();
          return;
        case zkr::GuardedWriteResult::Outcome::unknown:
          // Applied or not: the next round reads the cursor and knows.
          std::fprintf(stderr, "%s: publish outcome unknown (%s); reading the cursor again\n",
                       name_.c_str(), error.c_str());
          break;
        case zkr::GuardedWriteResult::Outcome::conflict:
          // The cursor moved under us, or the batch exists: only another
          // leader could have done it. The next round reads who did.
          std::fprintf(stderr, "%s: epoch %lld: publish CONFLICT on %s (%s)\n", name_.c_str(),
                       static_cast<long long>(epoch),
                       result.failed_op == 0 ? "the cursor" : "the batch", error.c_str());
          break;
      }
    }
  }

  // Messages the workers reported applied; a report's change wakes us.
  std::int64_t applied(zkr::Keeper& keeper) {
    std::vector<std::future<zkr::Result<zkr::NodeData>>> replies;
    for (int w = 0; w < options_.workers; ++w)
      replies.push_back(keeper.async_get(
          worker_path(options_, w), [wake = wake_](const zkr::WatchEvent&) { wake->raise(); }));
    std::int64_t sum = 0;
    for (int w = 0; w < options_.workers; ++w)
      if (auto stats =
              decode_stats(await_node(std::move(replies[w]), worker_path(options_, w)).data))
        sum += stats->applied;
    return sum;
  }

  // Ends every wait of this candidate once the cursor says all is published.
  void watch_until_published(std::stop_token stop) {
    auto changed = std::make_shared<Signal>();
    while (!stop.stop_requested()) {
      const auto seen = changed->count();
      try {
        auto keeper = client_.keeper_when_connected();
        const auto path = cursor_path(options_);
        const auto cursor = cursor_of(
            await_node(
                keeper->async_get(path, [changed](const zkr::WatchEvent&) { changed->raise(); }),
                path),
            path);
        if (cursor.next >= total_) {
          done_.request_stop();
          wake_->raise();
          return;
        }
      } catch (const zkr::KeeperError& e) {
        if (!zkr::is_connection_error(e.errc())) throw;
      }
      changed->wait_past(seen, kRecheckEvery);
    }
  }

  // Only this candidate writes its node, so an unversioned set is safe to repeat.
  void report() {
    try {
      client_.with_retry([&](zkr::Keeper& k) { return k.set(stats_path_, encode(stats_)); });
    } catch (const zkr::KeeperError& e) {
      std::fprintf(stderr, "%s: could not report: %s\n", name_.c_str(), e.what());
    }
  }

  const Options& options_;
  zkr::Client client_;
  const int total_;
  const std::string name_;
  const std::string stats_path_;
  DispatcherStats stats_;
  std::stop_source done_;       // the whole stream is published (or the finisher failed)
  std::exception_ptr failure_;  // the finisher's, read once it is joined
  std::shared_ptr<Signal> wake_ = std::make_shared<Signal>();
};

}  // namespace

int run_dispatcher(const Options& options) {
  // Die with the orchestrator, whatever way it ends.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  try {
    Dispatcher dispatcher(options);
    return dispatcher.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dispatcher %d failed: %s\n", options.dispatcher, e.what());
    return 1;
  }
}

}  // namespace trainyard
