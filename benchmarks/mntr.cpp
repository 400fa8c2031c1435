#include "mntr.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <sstream>
#include <vector>

#include "stats.hpp"

namespace zkr::bench {
namespace {

// Closes the socket on every path.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

// Ports of the servers of `connect` that are on this machine.
std::vector<std::uint16_t> local_ports(const std::string& connect) {
  std::vector<std::uint16_t> ports;
  std::stringstream list(connect);
  std::string host_port;
  while (std::getline(list, host_port, ',')) {
    const auto colon = host_port.rfind(':');
    if (colon == std::string::npos) continue;
    const std::string host = host_port.substr(0, colon);
    if (host != "127.0.0.1" && host != "localhost") continue;
    unsigned port = 0;
    const char* begin = host_port.data() + colon + 1;
    const char* end = host_port.data() + host_port.size();
    if (std::from_chars(begin, end, port).ec == std::errc() && port > 0 && port < 65536)
      ports.push_back(static_cast<std::uint16_t>(port));
  }
  return ports;
}

std::optional<std::string> four_letter_word(std::uint16_t port, const std::string& word,
                                            int timeout_ms) {
  Fd sock{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (sock.fd < 0) return std::nullopt;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // Loopback connects at once or is refused; the reply is what may hang (a
  // frozen server accepts but never answers), so only reads are bounded.
  if (::connect(sock.fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
    return std::nullopt;
  if (::send(sock.fd, word.data(), word.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(word.size()))
    return std::nullopt;
  std::string reply;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (int reads = 0; reads < 10000; ++reads) {  // bounded: a reply is a few KiB
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{sock.fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
    char buf[4096];
    const ssize_t n = ::recv(sock.fd, buf, sizeof buf, 0);
    if (n < 0) return std::nullopt;
    if (n == 0) break;  // the server closes after its reply
    reply.append(buf, static_cast<std::size_t>(n));
  }
  return reply;
}

std::map<std::string, std::string> mntr_values(const std::string& reply) {
  std::map<std::string, std::string> values;
  std::stringstream lines(reply);
  std::string line;
  while (std::getline(lines, line)) {
    const auto tab = line.find('\t');
    if (tab != std::string::npos) values[line.substr(0, tab)] = line.substr(tab + 1);
  }
  return values;
}

std::optional<std::map<std::string, std::string>> mntr(std::uint16_t port, int timeout_ms) {
  const auto reply = four_letter_word(port, "mntr", timeout_ms);
  if (!reply) return std::nullopt;
  auto values = mntr_values(*reply);
  if (values.empty()) return std::nullopt;
  return values;
}

std::optional<std::int64_t> leader_znode_count(const std::string& connect) {
  std::optional<std::int64_t> any;
  for (const auto port : local_ports(connect)) {
    const auto values = mntr(port);
    if (!values) continue;
    const auto count = values->find("zk_znode_count");
    if (count == values->end()) continue;
    std::int64_t n = 0;
    const auto& text = count->second;
    if (std::from_chars(text.data(), text.data() + text.size(), n).ec != std::errc()) continue;
    const auto state = values->find("zk_server_state");
    if (state != values->end() && (state->second == "leader" || state->second == "standalone"))
      return n;
    if (!any) any = n;
  }
  return any;  // no leader answered: the first server that did
}

}  // namespace zkr::bench
