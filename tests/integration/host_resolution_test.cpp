// The C client resolves the connect string's host names again on every poll
// of its socket unless told otherwise: a getaddrinfo for each host, for each
// reply, which cost a third of our client's CPU under load. Our sessions ask
// it to do so at most once per window. This binary counts the calls by
// defining getaddrinfo itself (the C client's calls resolve to ours, which
// forwards to the C library), so it is a test binary of its own.
#include <dlfcn.h>
#include <netdb.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "support/ensemble.hpp"
#include "zkr/keeper.hpp"

namespace {
std::atomic<int> resolutions{0};
}

extern "C" int getaddrinfo(const char* node, const char* service, const struct addrinfo* hints,
                           struct addrinfo** result) {
  using Real = int (*)(const char*, const char*, const struct addrinfo*, struct addrinfo**);
  static const auto real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "getaddrinfo"));
  resolutions.fetch_add(1);
  return real(node, service, hints, result);
}

namespace zkr {
namespace {

using namespace std::chrono_literals;

TEST(HostResolution, RequestsDoNotResolveTheHostsAgainEachTime) {
  ZKR_REQUIRE_ENSEMBLE();
  std::mutex mutex;
  std::condition_variable changed;
  bool connected = false;
  KeeperConfig config;
  config.hosts = test::connect_string();
  const int before_connect = resolutions.load();
  auto keeper = connect_keeper(config, [&](SessionState s) {
    std::lock_guard lock(mutex);
    connected = s == SessionState::connected;
    changed.notify_all();
  });
  {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(changed.wait_for(lock, 30s, [&] { return connected; }));
  }
  // Connecting resolves the hosts (that is how this test knows it counts the
  // C client's calls at all); 300 round trips after it resolve them again
  // at most once or twice (a window may end meanwhile), not 300 times.
  EXPECT_GT(resolutions.load(), before_connect);
  const int connected_at = resolutions.load();
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(keeper->try_get("/").ok());
  EXPECT_LE(resolutions.load() - connected_at, 2 * 3) << "getaddrinfo calls during 300 requests";
  keeper->close();
}

}  // namespace
}  // namespace zkr
