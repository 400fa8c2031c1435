// The delay proxy the benchmarks add round trips with (testkit/proxy): its
// delay must be latency, not a queue, or it charges a pipelined protocol one
// round trip per request in flight, which no network does.
#include "tcp_proxy.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>

namespace zkr::chaos {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

sockaddr_in loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

// A server on 127.0.0.1 that echoes what its one connection sends.
class EchoServer {
 public:
  EchoServer() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    auto addr = loopback(0);
    socklen_t len = sizeof addr;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listen_fd_, 1) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      throw std::runtime_error("echo server: cannot listen");
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      char buffer[4096];
      for (;;) {  // ends when the proxy closes the connection
        const auto n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0 || ::send(fd, buffer, static_cast<std::size_t>(n), MSG_NOSIGNAL) != n) break;
      }
      ::close(fd);
    });
  }
  ~EchoServer() {
    ::shutdown(listen_fd_, SHUT_RDWR);  // ends an accept that never came
    thread_.join();
    ::close(listen_fd_);
  }
  int port() const { return port_; }

 private:
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

// A ZooKeeper-shaped frame: length, then xid and opcode (getData: no fault
// rule of the proxy applies to it).
std::string frame(std::int32_t xid) {
  std::string out(12, '\0');
  const auto put = [&](std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out[at + i] = static_cast<char>(v >> (24 - 8 * i));
  };
  put(0, 8);
  put(4, static_cast<std::uint32_t>(xid));
  put(8, 4);
  return out;
}

// Reads exactly n bytes, or nullopt if they do not come by the deadline.
std::optional<Clock::time_point> read_exactly(int fd, std::size_t n, Clock::time_point deadline) {
  std::string got;
  while (got.size() < n) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left <= 0ms || ::poll(&p, 1, static_cast<int>(left.count())) != 1) return std::nullopt;
    char buffer[256];
    const auto r = ::recv(fd, buffer, std::min(sizeof buffer, n - got.size()), 0);
    if (r <= 0) return std::nullopt;
    got.append(buffer, static_cast<std::size_t>(r));
  }
  return Clock::now();
}

TEST(TcpProxy, DelayIsLatencyNotAQueue) {
  EchoServer echo;
  TcpProxy proxy(echo.port());
  constexpr auto kDelay = 40ms;  // each way
  constexpr auto kGap = 10ms;    // between the two requests
  proxy.set_mode(ProxyMode::delay, kDelay);

  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const auto addr = loopback(proxy.port());
  ASSERT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const auto deadline = Clock::now() + 10s;
  // The session's first frame (ZooKeeper's connect request) has no xid.
  const std::string hello = frame(0);
  ASSERT_EQ(::send(fd, hello.data(), hello.size(), 0), static_cast<ssize_t>(hello.size()));
  ASSERT_TRUE(read_exactly(fd, hello.size(), deadline));

  // Two requests in separate writes, the second while the first is on its way.
  const auto first = frame(1), second = frame(2);
  const auto sent = Clock::now();
  ASSERT_EQ(::send(fd, first.data(), first.size(), 0), static_cast<ssize_t>(first.size()));
  std::this_thread::sleep_for(kGap);  // the client's pacing, not a wait for the proxy
  ASSERT_EQ(::send(fd, second.data(), second.size(), 0), static_cast<ssize_t>(second.size()));
  const auto first_back = read_exactly(fd, first.size(), deadline);
  ASSERT_TRUE(first_back);
  const auto second_back = read_exactly(fd, second.size(), deadline);
  ASSERT_TRUE(second_back);
  ::close(fd);

  // Each request and its echo take the round trip the proxy adds...
  EXPECT_GE(*first_back - sent, 2 * kDelay);
  // ...and the second comes back about kGap after the first, as it was sent,
  // not a whole delay after it (a proxy that waited before reading on gave
  // 2 * kDelay here: one per direction).
  EXPECT_LT(*second_back - *first_back, kDelay) << "the second request queued behind the first";
}

}  // namespace
}  // namespace zkr::chaos
