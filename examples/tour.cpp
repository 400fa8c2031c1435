// A short tour of zkrecipes against a running ensemble:
//   zkr-tour 127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183
// Connects, creates, watches, runs a multi, takes a lock, and removes all it made.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>

#include "zkr/client.hpp"
#include "zkr/lock.hpp"

using namespace std::chrono_literals;

namespace {

void step(const std::string& what) { std::printf("  %s\n", what.c_str()); }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s HOST:PORT[,HOST:PORT...]\n", argv[0]);
    return 2;
  }
  try {
    zkr::ClientOptions options;
    options.connect_string = argv[1];
    options.session_timeout = 10s;
    zkr::Client client(options);
    client.add_listener([](zkr::ConnectionState s) {
      std::printf("  [connection: %s]\n", std::string(zkr::to_string(s)).c_str());
    });
    if (!client.block_until_connected(15s)) {
      std::fprintf(stderr, "could not connect to %s\n", argv[1]);
      return 1;
    }
    auto keeper = client.keeper();
    std::printf("connected, session 0x%llx\n",
                static_cast<unsigned long long>(keeper->session_id()));

    const std::string root = "/zkr-tour";
    keeper->create(root, "hello");
    step("created " + root + " = \"" + keeper->get(root).data + "\"");

    std::mutex mutex;
    std::condition_variable cv;
    bool fired = false;
    (void)keeper->get(root, [&](const zkr::WatchEvent& e) {
      std::lock_guard lock(mutex);
      fired = e.type == zkr::EventType::changed;
      cv.notify_all();
    });
    keeper->set(root, "world");
    {
      std::unique_lock lock(mutex);
      cv.wait_for(lock, 10s, [&] { return fired; });
    }
    step(std::string("set it to \"world\"; the watch ") + (fired ? "fired" : "did NOT fire"));

    for (int i = 0; i < 3; ++i)
      keeper->create(root + "/item-", std::to_string(i), zkr::CreateMode::persistent_sequential);
    step("three sequential children: " + std::to_string(keeper->children(root).names.size()));

    const auto multi =
        keeper->try_multi({zkr::op::Check{root, 1}, zkr::op::Create{root + "/atomic", "yes"},
                           zkr::op::Check{root, 99}});
    step(std::string("a multi with a failing check: ") + std::string(zkr::errc_name(multi.error)) +
         ", and /atomic " +
         (keeper->exists(root + "/atomic") ? "exists (WRONG)" : "was rolled back"));

    {
      zkr::InterProcessMutex lock(client, root + "-locks/demo");
      lock.acquire();
      step("holding lock " + lock.path() + " with fencing token " +
           std::to_string(lock.grant().fencing_token()));
      lock.release();
      step("released it");
    }

    for (const auto& child : keeper->children(root).names) keeper->remove(root + "/" + child);
    keeper->remove(root);
    step("removed everything the tour created");
    return fired && !multi.ok() ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tour failed: %s\n", e.what());
    return 1;
  }
}
