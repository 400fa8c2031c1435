#include "seeder.hpp"

#include "zkr/cleanup.hpp"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

#include "progress.hpp"

namespace zkr::bench {
namespace {

// A reply not in after this long means the session is in trouble.
constexpr auto kReplyTimeout = std::chrono::seconds(60);

struct Shared {
  std::atomic<std::uint64_t> done{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::condition_variable finished;
  unsigned running = 0;            // guarded by mutex
  std::exception_ptr first_error;  // guarded by mutex
};

void settle(std::future<Result<Created>>& reply, const std::string& path) {
  const auto result = await_reply(std::move(reply), kReplyTimeout, path);
  if (!result.ok() && result.error() != Errc::node_exists)
    throw KeeperError(result.error(), path, "seeding");
}

// Session s creates indices s, s + S, s + 2S, ...: each keeps `window`
// creates in flight and settles the oldest before sending the next.
void seed_one_session(Keeper& keeper, std::uint64_t first, std::uint64_t stride,
                      std::uint64_t count, const std::function<std::string(std::uint64_t)>& path_of,
                      const SeedOptions& options, Shared& shared) {
  try {
    std::deque<std::pair<std::string, std::future<Result<Created>>>> in_flight;
    for (std::uint64_t i = first; i < count && !shared.failed.load(); i += stride) {
      if (in_flight.size() >= options.window) {
        settle(in_flight.front().second, in_flight.front().first);
        in_flight.pop_front();
        shared.done.fetch_add(1);
      }
      std::string path = path_of(i);
      // As locks leave them: with the mark that lets a sweep remove them.
      auto reply = keeper.async_create(path, std::string(kLockDirectoryMark), options.mode);
      in_flight.emplace_back(std::move(path), std::move(reply));
    }
    for (auto& [path, reply] : in_flight) {
      settle(reply, path);
      shared.done.fetch_add(1);
    }
  } catch (...) {
    shared.failed = true;
    std::lock_guard lock(shared.mutex);
    if (!shared.first_error) shared.first_error = std::current_exception();
  }
  {
    std::lock_guard lock(shared.mutex);
    --shared.running;
  }
  shared.finished.notify_all();
}

}  // namespace

void create_nodes(const std::vector<Client*>& sessions, std::uint64_t count,
                  const std::function<std::string(std::uint64_t)>& path_of,
                  const SeedOptions& options) {
  if (count == 0 || sessions.empty()) return;
  Shared shared;
  shared.running = static_cast<unsigned>(sessions.size());
  {
    std::vector<std::jthread> threads;
    for (std::size_t s = 0; s < sessions.size(); ++s) {
      auto keeper = sessions[s]->keeper_when_connected();
      threads.emplace_back([&, s, keeper] {
        seed_one_session(*keeper, s, sessions.size(), count, path_of, options, shared);
      });
    }
    Progress progress(options.progress_label, count);
    std::unique_lock lock(shared.mutex);
    // Bounded: each session settles every reply within kReplyTimeout or fails.
    while (!shared.finished.wait_for(lock, std::chrono::seconds(1),
                                     [&] { return shared.running == 0; }))
      if (!options.progress_label.empty()) progress.update(shared.done.load());
  }  // joins
  if (shared.first_error) std::rethrow_exception(shared.first_error);
}

}  // namespace zkr::bench
