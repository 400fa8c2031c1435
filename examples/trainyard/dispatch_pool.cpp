#include "dispatch_pool.hpp"

#include <csignal>
#include <cstdio>
#include <future>
#include <memory>
#include <set>
#include <stdexcept>
#include <utility>

#include "flag.hpp"
#include "process.hpp"
#include "zkr/leader_latch.hpp"

namespace trainyard {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The next leader comes once the killed one's session expires (4 s), and may
// have to wait for a server election in between.
constexpr auto kFailoverPatience = 90s;

std::string latch_id(int slot, pid_t pid) {
  return "dispatcher-" + std::to_string(slot) + "-pid" + std::to_string(pid);
}

}  // namespace

DispatcherPool::DispatcherPool(const Options& options, zkr::Client& client, int total, Args args)
    : options_(options), client_(client), total_(total), args_(std::move(args)) {}

DispatcherPool::~DispatcherPool() {
  kill_all();
  std::vector<std::jthread> reapers;
  {
    std::lock_guard lock(mutex_);
    reapers = std::move(reapers_);
  }
  // Their destructors join them: each returns once its process is reaped.
}

void DispatcherPool::start() {
  std::lock_guard lock(mutex_);
  for (int slot = 0; slot < kDispatchers; ++slot) spawn_candidate(slot);
}

void DispatcherPool::spawn_candidate(int slot) {
  const pid_t pid = spawn(args_(slot));
  const std::size_t index = candidates_.size();
  candidates_.push_back({slot, pid});
  reapers_.emplace_back([this, index, pid] {
    const int code = wait_exit(pid);
    std::lock_guard lock(mutex_);
    candidates_[index].exited = true;
    candidates_[index].code = code;
    changed_.notify_all();
  });
}

bool DispatcherPool::wait_exited(Clock::duration timeout) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] {
    for (const auto& c : candidates_)
      if (!c.exited) return false;
    return true;
  });
}

void DispatcherPool::kill_all() {
  std::lock_guard lock(mutex_);
  for (const auto& c : candidates_)
    if (!c.exited) kill(c.pid, SIGKILL);
}

Cursor DispatcherPool::read_cursor(const zkr::Watcher& watcher) {
  auto keeper = client_.keeper_when_connected();
  const auto path = cursor_path(options_);
  const auto data =
      zkr::await_reply(keeper->async_get(path, watcher), kRequestTimeout, path).value();
  auto cursor = decode_cursor(data.data);
  if (!cursor) throw std::runtime_error("not a cursor at " + path);
  return *cursor;
}

bool DispatcherPool::kill_leader(int at, const std::function<bool()>& finished) {
  // Reads who leads from the latch as any observer may: this latch never joins.
  zkr::LeaderLatch observer(client_, latch_path(options_), "orchestrator");
  Failover failover;
  Clock::time_point killed_at;
  // 1. Wait until `at` are published, then kill the leader: the latch's first
  //    participant, when it is also the candidate that published last (so
  //    that the cursor's epoch is its term's).
  while (failover.slot < 0) {
    if (finished()) return false;
    auto changed = std::make_shared<Flag>();
    try {
      const auto cursor = read_cursor([changed](const zkr::WatchEvent&) { changed->raise(); });
      if (cursor.next >= total_) return false;
      if (cursor.next >= at && cursor.slot >= 0) {
        const auto leader = observer.leader();
        std::lock_guard lock(mutex_);
        for (auto& c : candidates_)
          if (c.slot == cursor.slot && !c.exited && !c.killed && leader &&
              leader->id == latch_id(c.slot, c.pid)) {
            kill(c.pid, SIGKILL);
            killed_at = Clock::now();
            c.killed = true;
            failover = {c.slot, cursor.epoch};
            std::fprintf(stderr,
                         "trainyard: chaos: killing dispatcher %d (pid %d), the leader, epoch "
                         "%lld, at message %d\n",
                         c.slot, static_cast<int>(c.pid), static_cast<long long>(cursor.epoch),
                         cursor.next);
            break;
          }
        if (failover.slot >= 0) spawn_candidate(failover.slot);  // three candidates again
      }
    } catch (const zkr::KeeperError& e) {
      if (!zkr::is_connection_error(e.errc())) throw;
    }
    if (failover.slot < 0) changed->wait_for(kRecheckEvery);
  }
  // 2. Wait for the next leader's first publish: the cursor with a newer epoch.
  const auto deadline = killed_at + kFailoverPatience;
  while (Clock::now() < deadline && !finished()) {
    auto changed = std::make_shared<Flag>();
    try {
      const auto cursor = read_cursor([changed](const zkr::WatchEvent&) { changed->raise(); });
      if (cursor.epoch != failover.old_epoch) {
        failover.new_epoch = cursor.epoch;
        failover.seconds = std::chrono::duration<double>(Clock::now() - killed_at).count();
        std::fprintf(stderr,
                     "trainyard: chaos: dispatcher %d leads with epoch %lld, first publish %.1f s "
                     "after the kill\n",
                     cursor.slot, static_cast<long long>(cursor.epoch), failover.seconds);
        break;
      }
    } catch (const zkr::KeeperError& e) {
      if (!zkr::is_connection_error(e.errc())) throw;
    }
    changed->wait_for(kRecheckEvery);
  }
  std::lock_guard lock(mutex_);
  failovers_.push_back(failover);
  return failover.new_epoch != 0;
}

std::vector<Invariant> DispatcherPool::report(bool chaos) {
  auto keeper = client_.keeper_when_connected();
  const auto cursor = read_cursor();
  // The batches and the candidates' reports, each listing's reads pipelined.
  auto read_all = [&](const std::string& dir) {
    const auto names = keeper->children(dir, {}, kRequestTimeout).names;
    std::vector<std::future<zkr::Result<zkr::NodeData>>> replies;
    for (const auto& name : names) replies.push_back(keeper->async_get(dir + "/" + name));
    std::vector<zkr::NodeData> nodes;
    for (std::size_t i = 0; i < names.size(); ++i)
      nodes.push_back(
          zkr::await_reply(std::move(replies[i]), kRequestTimeout, dir + "/" + names[i]).value());
    return nodes;
  };
  std::vector<PublishedBatch> batches;
  Invariant readable{"every batch node holds a batch"};
  for (const auto& node : read_all(batches_path(options_))) {
    if (auto batch = decode_batch(node.data)) batches.push_back({*batch, node.stat.czxid});
    else violated(readable, "'" + node.data + "'");
  }
  std::int64_t refused = 0;
  for (const auto& node : read_all(dispatchers_path(options_)))
    if (auto stats = decode_dispatcher_stats(node.data)) refused += stats->refused;
  std::set<std::int64_t> terms;  // that published
  for (const auto& b : batches) terms.insert(b.batch.epoch);

  std::lock_guard lock(mutex_);
  std::printf("  %-34s %zu by %zu leader term(s); %zu candidates, %d killed\n",
              "dispatcher publishes (batches)", batches.size(), terms.size(), candidates_.size(),
              static_cast<int>(failovers_.size()));
  std::printf("  %-34s %lld\n", "publishes refused, term over", static_cast<long long>(refused));
  for (std::size_t i = 0; i < failovers_.size(); ++i) {
    const auto& f = failovers_[i];
    if (f.new_epoch != 0)
      std::printf("  %-34s %.1f s to the next first publish, epoch %lld -> %lld\n",
                  ("dispatcher failover " + std::to_string(i + 1)).c_str(), f.seconds,
                  static_cast<long long>(f.old_epoch), static_cast<long long>(f.new_epoch));
    else
      std::printf("  %-34s no new leader published, epoch %lld\n",
                  ("dispatcher failover " + std::to_string(i + 1)).c_str(),
                  static_cast<long long>(f.old_epoch));
  }

  std::vector<Invariant> invariants{readable};
  for (auto& i : check_published(total_, cursor, std::move(batches)))
    invariants.push_back(std::move(i));
  Invariant exits{"every dispatcher candidate not killed ended cleanly"};
  for (const auto& c : candidates_)
    if (!c.killed && c.code != 0)
      violated(exits, "dispatcher " + std::to_string(c.slot) + " (pid " + std::to_string(c.pid) +
                          ") exited " + std::to_string(c.code));
  invariants.push_back(exits);
  if (chaos) invariants.push_back(check_failovers(failovers_, 2));
  return invariants;
}

}  // namespace trainyard
