// A service on one Asio thread that takes a per-key lock for each request
// (zkr/asio.hpp): thousands of requests wait for their key's lock as
// coroutines, with no thread each. Some clients are impatient: their request
// gives up after a few milliseconds, and Asio's cancellation takes it out of
// the lock's queue.
//
//   zkr-lock_service HOST:PORT[,HOST:PORT...] [REQUESTS] [KEYS]
//
// Prints what it served and exits 0 if no key ever had two requests inside
// at once, every request was served or gave up, and no lock node was left.
#include <unistd.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "zkr/asio.hpp"
#include "zkr/client.hpp"
#include "zkr/lock.hpp"

namespace net = boost::asio;
using namespace std::chrono_literals;
using namespace boost::asio::experimental::awaitable_operators;

namespace {

struct Tally {
  int served = 0;
  int gave_up = 0;
  int overlaps = 0;  // a key with two requests inside at once: must stay 0
};

class LockService {
 public:
  LockService(net::io_context& io, zkr::Client& client, std::string root)
      : io_(io), client_(client), root_(std::move(root)) {}

  // One request on `key`. An impatient one waits for the lock 5 ms at most.
  net::awaitable<void> handle(int key, bool impatient) {
    auto& mutex = lock_of(key);
    zkr::LockGuard held;
    if (impatient) {
      net::steady_timer patience(io_, 5ms);
      auto first = co_await (zkr::asio::async_acquire_guard(mutex, net::use_awaitable) ||
                             patience.async_wait(net::use_awaitable));
      if (first.index() == 0) held = std::move(std::get<0>(first));
    } else {
      held = co_await zkr::asio::async_acquire_guard(mutex, std::chrono::steady_clock::now() + 60s,
                                                     net::use_awaitable);
    }
    if (!held) {
      ++tally_.gave_up;
      co_return;
    }
    // The work under the lock spans a suspension, as real work would.
    if (inside_[key]++ != 0) ++tally_.overlaps;
    net::steady_timer work(io_, 1ms);
    co_await work.async_wait(net::use_awaitable);
    --inside_[key];
    ++tally_.served;
  }  // the guard goes: the next request of the key is granted

  std::string dir_of(int key) const { return root_ + "/key-" + std::to_string(key); }
  const Tally& tally() const { return tally_; }

 private:
  zkr::InterProcessMutex& lock_of(int key) {
    auto& mutex = locks_[key];
    if (!mutex) mutex = std::make_unique<zkr::InterProcessMutex>(client_, dir_of(key));
    return *mutex;
  }

  net::io_context& io_;
  zkr::Client& client_;
  const std::string root_;
  std::map<int, std::unique_ptr<zkr::InterProcessMutex>> locks_;
  std::map<int, int> inside_;
  Tally tally_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: %s HOST:PORT[,HOST:PORT...] [REQUESTS] [KEYS]\n", argv[0]);
    return 2;
  }
  const int requests = argc > 2 ? std::stoi(argv[2]) : 2000;
  const int keys = argc > 3 ? std::stoi(argv[3]) : 20;
  if (requests < 1 || keys < 1) {
    std::fprintf(stderr, "REQUESTS and KEYS must be positive\n");
    return 2;
  }
  try {
    zkr::ClientOptions options;
    options.connect_string = argv[1];
    zkr::Client client(options);
    if (!client.block_until_connected(15s)) {
      std::fprintf(stderr, "could not connect to %s\n", argv[1]);
      return 1;
    }
    net::io_context io;
    LockService service(io, client, "/zkr-lock-service-" + std::to_string(::getpid()));
    for (int i = 0; i < requests; ++i)
      net::co_spawn(io, service.handle(i % keys, /*impatient=*/i % 10 == 9), net::detached);
    io.run();  // one thread; returns once every request has ended

    const auto& tally = service.tally();
    int left = 0;
    auto keeper = client.keeper();
    for (int k = 0; k < keys; ++k)
      if (auto listed = keeper->try_children(service.dir_of(k)); listed.ok())
        left += static_cast<int>(listed.value().names.size());
    std::printf(
        "lock service: %d requests on %d keys, one thread: %d served, %d gave up, "
        "%d overlaps, %d lock nodes left\n",
        requests, keys, tally.served, tally.gave_up, tally.overlaps, left);
    const bool ok = tally.overlaps == 0 && tally.served + tally.gave_up == requests && left == 0;
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lock service: %s\n", e.what());
    return 1;
  }
}
