#include "tcp_proxy.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <string_view>
#include <system_error>
#include <vector>

namespace zkr::chaos {
namespace {

using Clock = std::chrono::steady_clock;
// How often a blocked pump looks at its flags: bounds how long a reset, a mode
// change or shutdown takes to be noticed.
constexpr int kPollMs = 20;
// ZooKeeper's own limit (jute.maxbuffer) is 1 MiB by default; anything far
// larger is not a frame, and the connection is dropped rather than buffered.
constexpr std::uint32_t kMaxFrame = 64u << 20;

std::uint32_t be32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (std::uint32_t{u[0]} << 24) | (std::uint32_t{u[1]} << 16) | (std::uint32_t{u[2]} << 8) |
         u[3];
}

// Requests that change the tree: a reply lost after one of these is the case
// lock recipes must survive (the server applied it, the client cannot know).
bool is_mutating(std::int32_t opcode) {
  switch (opcode) {
    case 1:   // create
    case 2:   // delete
    case 5:   // setData
    case 14:  // multi
    case 15:  // create2
    case 19:  // createContainer
    case 21:  // createTTL
      return true;
    default: return false;
  }
}

std::int64_t be64(const char* p) {
  return static_cast<std::int64_t>((std::uint64_t{be32(p)} << 32) | be32(p + 4));
}

// Reads a jute string or buffer (4-byte length, -1 for none, then the bytes)
// at p and moves p past it; nullopt if it does not fit before end.
std::optional<std::string_view> jute_bytes(const char*& p, const char* end) {
  if (end - p < 4) return std::nullopt;
  const auto n = static_cast<std::int32_t>(be32(p));
  p += 4;
  if (n < 0) return std::string_view{};
  if (end - p < n) return std::nullopt;
  const std::string_view out(p, static_cast<std::size_t>(n));
  p += n;
  return out;
}

bool is_create(std::int32_t opcode) {
  return opcode == 1 || opcode == 15 || opcode == 19 || opcode == 21;
}

// The paths each session asked to create, newest last, across every proxy of
// this process: the nemesis drives all of them, and a session that moves to
// another server keeps its nodes. A few per session are enough for a lock
// client (one node per lock it waits for or holds).
struct OwnNodes {
  static constexpr std::size_t kPerSession = 64;
  std::mutex mutex;
  std::map<std::int64_t, std::deque<std::string>> paths;

  void created(std::int64_t session, std::string_view path) {
    std::lock_guard lock(mutex);
    auto& list = paths[session];
    list.emplace_back(path);
    if (list.size() > kPerSession) list.pop_front();
  }
  // A sequential node's name is the path asked for plus its sequence
  // (digits, with a '-' once the counter wrapped), so a node is the
  // session's own if some path it asked for is its path less the sequence.
  bool owns(std::int64_t session, std::string_view path) {
    std::lock_guard lock(mutex);
    const auto it = paths.find(session);
    if (it == paths.end()) return false;
    for (const auto& asked : it->second) {
      if (!path.starts_with(asked)) continue;
      auto rest = path.substr(asked.size());
      if (rest.starts_with('-')) rest.remove_prefix(1);
      if (rest.empty()) return path.size() == asked.size();
      if (std::all_of(rest.begin(), rest.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
        return true;
    }
    return false;
  }
};

OwnNodes& own_nodes() {
  static OwnNodes nodes;
  return nodes;
}

// The first of the session's own nodes under `under` that a multi's ops (the
// request body) delete, if any. Ops of kinds it cannot step over end the
// search (no match).
std::optional<std::string> multi_deletes_own(std::int64_t session, std::string_view under,
                                             const char* p, const char* end) {
  while (end - p >= 9) {
    const auto type = static_cast<std::int32_t>(be32(p));
    const bool done = p[4] != 0;
    p += 9;  // type, done, err
    if (type == -1 || done) return std::nullopt;
    const auto path = jute_bytes(p, end);
    if (!path) return std::nullopt;
    if (type == 2 && path->starts_with(under) && own_nodes().owns(session, *path))
      return std::string(*path);
    if (type == 2 || type == 13) {  // delete, check: version
      p += 4;
    } else if (type == 5) {  // setData: data, version
      if (!jute_bytes(p, end)) return std::nullopt;
      p += 4;
    } else if (is_create(type)) {  // data, acl, flags (createTTL: ttl)
      if (!jute_bytes(p, end) || end - p < 4) return std::nullopt;
      const auto acls = static_cast<std::int32_t>(be32(p));
      p += 4;
      for (std::int32_t i = 0; i < acls; ++i) {
        p += 4;  // perms
        if (p > end || !jute_bytes(p, end) || !jute_bytes(p, end)) return std::nullopt;
      }
      p += type == 21 ? 12 : 4;
    } else {
      return std::nullopt;
    }
    if (p > end) return std::nullopt;
  }
  return std::nullopt;
}

// Whether a request (opcode, then body) from `session` is of `kind`, on a path
// under `under`; `path` gets that path.
bool request_is(RequestKind kind, std::int64_t session, std::string_view under, std::int32_t opcode,
                const char* body, const char* end, std::string& path) {
  if (kind == RequestKind::release && opcode == 14) {
    const auto deleted = multi_deletes_own(session, under, body, end);
    if (deleted) path = *deleted;
    return deleted.has_value();
  }
  const char* p = body;
  const auto first = jute_bytes(p, end);
  if (!first || !first->starts_with(under)) return false;
  path = std::string(*first);
  switch (kind) {
    case RequestKind::own_watch:
      return (opcode == 3 || opcode == 4) && p < end && *p != 0 && own_nodes().owns(session, path);
    case RequestKind::listing: return opcode == 8 || opcode == 12;
    case RequestKind::release: return opcode == 2 && own_nodes().owns(session, path);
  }
  return false;
}

sockaddr_in loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

int connect_upstream(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  const auto addr = loopback(port);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return fd;
  if (errno != EINPROGRESS) {
    ::close(fd);
    return -1;
  }
  pollfd p{fd, POLLOUT, 0};
  int error = 0;
  socklen_t len = sizeof error;
  if (::poll(&p, 1, 1000) != 1 || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0 ||
      error != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

struct TcpProxy::Connection {
  int client_fd = -1;
  int server_fd = -1;
  std::atomic<bool> closed{false};
  std::atomic<bool> rst{false};
  std::atomic<int> live_pumps{2};
  std::atomic<std::int64_t> drop_xid{-1};  // xid of the reply to drop; -1: none
  std::atomic<std::int64_t> session{0};    // from the server's connect response
  std::thread up;
  std::thread down;

  void close(bool with_rst) {
    if (with_rst) rst = true;
    closed = true;
  }
  // Called by the last pump to finish: only then are the descriptors closed,
  // so neither pump ever uses a closed (or reused) descriptor.
  void release_fds() {
    for (const int fd : {client_fd, server_fd}) {
      if (rst) {
        linger l{1, 0};  // close() then sends RST instead of FIN
        ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
      }
      ::close(fd);
    }
  }
};

TcpProxy::TcpProxy(int upstream_port) : upstream_port_(upstream_port) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0) throw std::system_error(errno, std::generic_category(), "socket");
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  auto addr = loopback(0);
  socklen_t len = sizeof addr;
  if (::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 128) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int error = errno;
    ::close(listen_fd_);
    throw std::system_error(error, std::generic_category(), "proxy listen");
  }
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

TcpProxy::~TcpProxy() {
  stopping_ = true;
  acceptor_.join();
  std::list<std::shared_ptr<Connection>> all;
  {
    std::lock_guard lock(mutex_);
    all.swap(connections_);
  }
  for (auto& c : all) c->close(false);
  for (auto& c : all) {
    c->up.join();
    c->down.join();
  }
  ::close(listen_fd_);
}

void TcpProxy::set_mode(ProxyMode mode, std::chrono::microseconds delay) {
  delay_us_ = delay.count();
  mode_ = static_cast<int>(mode);
}

int TcpProxy::reset_all() {
  std::lock_guard lock(mutex_);
  int n = 0;
  for (auto& c : connections_) {
    if (!c->closed) ++n;
    c->close(true);
  }
  return n;
}

void TcpProxy::arm_drop_reply(std::vector<int> opcodes) {
  {
    std::lock_guard lock(mutex_);
    dropped_.clear();
    drop_opcodes_ = std::move(opcodes);
  }
  drop_armed_ = true;
}

void TcpProxy::arm_drop_request(std::int64_t session, RequestKind kind, std::string under) {
  {
    std::lock_guard lock(mutex_);
    dropped_.clear();
    request_session_ = session;
    request_kind_ = kind;
    request_under_ = std::move(under);
  }
  request_armed_ = true;
}

std::string TcpProxy::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

int TcpProxy::connections() const {
  std::lock_guard lock(mutex_);
  int n = 0;
  for (const auto& c : connections_) n += c->closed ? 0 : 1;
  return n;
}

void TcpProxy::reap_finished() {
  std::list<std::shared_ptr<Connection>> done;
  {
    std::lock_guard lock(mutex_);
    for (auto it = connections_.begin(); it != connections_.end();) {
      if ((*it)->live_pumps == 0) {
        done.push_back(*it);
        it = connections_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& c : done) {
    c->up.join();
    c->down.join();
  }
}

void TcpProxy::accept_loop() {
  while (!stopping_) {
    reap_finished();
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) != 1) continue;
    const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (client < 0) continue;
    const int server = connect_upstream(upstream_port_);
    if (server < 0) {  // server down: the client sees its connection refused-ish
      linger l{1, 0};
      ::setsockopt(client, SOL_SOCKET, SO_LINGER, &l, sizeof l);
      ::close(client);
      continue;
    }
    // Both ends send at once, as ZooKeeper's own client and server do: with
    // Nagle, a request sent while the previous one is unacknowledged waits
    // for the peer's delayed ACK (40 ms), which a delay makes the rule.
    const int one = 1;
    ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto c = std::make_shared<Connection>();
    c->client_fd = client;
    c->server_fd = server;
    {
      std::lock_guard lock(mutex_);
      connections_.push_back(c);
    }
    c->up = std::thread([this, c] { pump(c, true); });
    c->down = std::thread([this, c] { pump(c, false); });
  }
}

void TcpProxy::pump(const std::shared_ptr<Connection>& c, bool to_server) {
  const int src = to_server ? c->client_fd : c->server_fd;
  const int dst = to_server ? c->server_fd : c->client_fd;
  std::string buffer;
  bool first_frame = true;  // the connect request / response: no xid
  std::vector<char> chunk(64 * 1024);
  const auto alive = [&] { return !c->closed && !stopping_; };

  // Whole frames read but not yet sent, each with the time it may go. Reading
  // goes on while they wait: a delay is latency, not a queue, so requests
  // pipelined in separate writes each arrive one delay after they were sent
  // (a pump that slept before reading on would delay the second by two).
  struct Pending {
    Clock::time_point due;
    std::string bytes;
    bool reset_after = false;  // an armed drop: nothing after these arrives
  };
  std::deque<Pending> pending;
  bool reading = true;  // false after the peer's FIN or a dropped reply

  const auto send_all = [&](const std::string& out) {
    std::size_t done = 0;
    while (done < out.size() && alive()) {
      const auto n = ::send(dst, out.data() + done, out.size() - done, MSG_NOSIGNAL);
      if (n > 0) {
        done += static_cast<std::size_t>(n);
      } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        pollfd p{dst, POLLOUT, 0};
        ::poll(&p, 1, kPollMs);  // a stopped peer may never read: keep looking at flags
      } else {
        return false;
      }
    }
    return done == out.size();
  };
  // Sends what is due, in order. False once the connection is to end.
  const auto send_due = [&] {
    const auto now = Clock::now();
    while (!pending.empty() && pending.front().due <= now) {
      auto next = std::move(pending.front());
      pending.pop_front();
      if (!next.bytes.empty() && !send_all(next.bytes)) {
        c->close(true);
        return false;
      }
      if (next.reset_after) {
        c->close(true);
        return false;
      }
    }
    if (!reading && pending.empty()) {  // the peer's FIN, passed on after its data
      c->close(false);
      return false;
    }
    return true;
  };

  while (alive()) {
    if (mode_ == static_cast<int>(ProxyMode::blackhole)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
      continue;
    }
    // Waits for bytes or for the next frame's time, whichever comes first,
    // and at most kPollMs, to notice a reset or shutdown. To the microsecond:
    // the benchmarks add round trips of 1 ms, half of it each way.
    auto wait =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::milliseconds(kPollMs));
    if (!pending.empty())
      wait = std::clamp(
          std::chrono::duration_cast<std::chrono::nanoseconds>(pending.front().due - Clock::now()),
          std::chrono::nanoseconds::zero(), wait);
    const timespec timeout{static_cast<time_t>(wait.count() / 1'000'000'000),
                           static_cast<long>(wait.count() % 1'000'000'000)};
    pollfd p{reading ? src : -1, POLLIN, 0};  // -1: only the timeout wakes us
    const int ready = ::ppoll(&p, 1, &timeout, nullptr);
    if (ready == 1 && reading) {
      const auto n = ::recv(src, chunk.data(), chunk.size(), 0);
      if (n < 0 && errno != EAGAIN && errno != EINTR) {  // reset: so does the proxy, at once
        c->close(true);
        break;
      }
      if (n == 0) reading = false;
      if (n > 0) {
        const auto arrived = Clock::now();
        buffer.append(chunk.data(), static_cast<std::size_t>(n));
        Pending out{arrived, {}, false};
        if (mode_ == static_cast<int>(ProxyMode::delay))
          out.due += std::chrono::microseconds(delay_us_.load());
        while (buffer.size() >= 4) {
          const std::uint32_t length = be32(buffer.data());
          if (length > kMaxFrame) {
            c->close(true);
            break;
          }
          if (buffer.size() < 4 + length) break;
          const std::string frame = buffer.substr(0, 4 + length);
          buffer.erase(0, 4 + length);
          if (first_frame && !to_server && length >= 16)
            c->session = be64(frame.data() + 12);  // protocolVersion, timeOut, sessionId
          if (!first_frame && length >= 8) {
            const auto xid = static_cast<std::int32_t>(be32(frame.data() + 4));
            if (to_server) {
              const auto opcode = static_cast<std::int32_t>(be32(frame.data() + 8));
              const auto session = c->session.load();
              if (xid > 0 && session != 0 && is_create(opcode)) {
                const char* at = frame.data() + 12;
                if (const auto path = jute_bytes(at, frame.data() + frame.size()))
                  own_nodes().created(session, *path);
              }
              if (xid > 0 && session != 0 && request_armed_) {
                std::lock_guard lock(mutex_);
                std::string path;
                bool armed = true;
                if (session == request_session_ &&
                    request_is(request_kind_, session, request_under_, opcode, frame.data() + 12,
                               frame.data() + frame.size(), path) &&
                    request_armed_.compare_exchange_strong(armed, false)) {
                  // Neither this request nor anything after it reaches the
                  // server; what came before it in the chunk still goes.
                  dropped_ = "opcode " + std::to_string(opcode) + " xid " + std::to_string(xid) +
                             " path " + path;
                  out.reset_after = true;
                  reading = false;
                  break;
                }
              }
              if (xid > 0 && drop_armed_) {
                std::lock_guard lock(mutex_);
                // Named opcodes may be reads too (a get that sets a watch).
                const bool wanted = drop_opcodes_.empty()
                                        ? is_mutating(opcode)
                                        : std::find(drop_opcodes_.begin(), drop_opcodes_.end(),
                                                    opcode) != drop_opcodes_.end();
                bool armed = true;
                if (wanted && drop_armed_.compare_exchange_strong(armed, false)) {
                  c->drop_xid = xid;  // set before the request goes out, so before its reply
                  dropped_ = "opcode " + std::to_string(opcode) + " xid " + std::to_string(xid);
                }
              }
            } else if (xid > 0 && xid == c->drop_xid) {
              // This reply and everything after it never arrive.
              out.reset_after = true;
              reading = false;
              break;
            }
          }
          first_frame = false;
          out.bytes += frame;
        }
        if (c->closed) break;
        if (!out.bytes.empty() || out.reset_after) pending.push_back(std::move(out));
      }
    }
    if (!send_due()) break;
  }
  if (--c->live_pumps == 0) c->release_fds();
}

}  // namespace zkr::chaos
