// A TCP proxy on 127.0.0.1 in front of one ZooKeeper server, so the chaos
// nemesis can sever or stall client connections without touching the server,
// and the benchmarks can add round-trip latency (ProxyMode::delay). Shared by
// both (library zkr_tcp_proxy); it was written for the chaos suite, whose
// namespace it keeps.
//
// Workers connect to the proxy; each accepted connection gets its own
// upstream connection and two pump threads (one per direction). Both pumps
// cut the byte stream into ZooKeeper frames (4-byte big-endian length, then
// the payload), which lets the proxy drop exactly one whole reply.
//
// Faults (each applies to connections open now and, for modes, to new ones):
//   reset_all()        RST every connection (SO_LINGER 0), both sides
//   set_mode(blackhole) stop forwarding both ways, sockets kept open
//   set_mode(delay, d)  forward every chunk d later than it arrived (each way)
//   arm_drop_reply()   on the next mutating request (create, delete, setData,
//                      multi...) any client sends, drop the server's reply to
//                      it and reset that connection: the server applied the
//                      request but the client never hears so (a lost reply);
//                      given opcodes, the next request of one of them, reads
//                      included (a getData that would set a watch)
//   arm_drop_request(session, kind, under)
//                      on the next request of that kind from that session (its
//                      own-node watch, a listing, its release) on a path that
//                      starts with `under`, reset the connection before the
//                      request reaches the server: the request is lost with
//                      the link, so the C client answers it with connection
//                      loss and sets no watch
//
//   zkr::chaos::TcpProxy proxy(server_port);      // listens on an ephemeral port
//   connect_string = "127.0.0.1:" + std::to_string(proxy.port());
//   proxy.set_mode(zkr::chaos::ProxyMode::blackhole);
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace zkr::chaos {

enum class ProxyMode { forward, blackhole, delay };

// Requests arm_drop_request can stop, by what they are to a lock. A session's
// own nodes are the ones it asked to create (any proxy of this process saw the
// create: a session moves between servers, so the record is shared).
enum class RequestKind {
  own_watch,  // getData or exists with a watch on one of the session's own nodes
  listing,    // getChildren (either form)
  release,    // a delete of one of its own nodes, alone or in a multi
};

class TcpProxy {
 public:
  // Listens on 127.0.0.1:<ephemeral>; throws std::system_error.
  explicit TcpProxy(int upstream_port);
  // Closes the listener and every connection, joins every thread.
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const noexcept { return port_; }
  // delay: each way, for ProxyMode::delay (a round trip gets twice it).
  void set_mode(ProxyMode mode, std::chrono::microseconds delay = {});
  // Returns how many connections were reset.
  int reset_all();
  // opcodes: the requests whose reply may be dropped (reads too); empty: any
  // mutating one.
  void arm_drop_reply(std::vector<int> opcodes = {});
  void disarm_drop_reply() { drop_armed_ = false; }
  // session: the id the server gave in its connect response. under: a path
  // prefix the request's path (a multi's: the deleted node's) must have, so
  // that a session serving several recipes loses the one request aimed at.
  void arm_drop_request(std::int64_t session, RequestKind kind, std::string under = "/");
  void disarm_drop_request() { request_armed_ = false; }
  // What the last armed drop did: "" while still armed or never armed, else
  // "opcode 14 xid 57" for the request whose reply was dropped, or
  // "opcode 4 xid 57 path /a/b" for a request dropped before the server.
  std::string dropped() const;
  int connections() const;

 private:
  struct Connection;
  void accept_loop();
  void pump(const std::shared_ptr<Connection>& c, bool to_server);
  void reap_finished();

  int upstream_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> mode_{0};
  std::atomic<std::int64_t> delay_us_{0};
  std::atomic<bool> drop_armed_{false};
  std::atomic<bool> request_armed_{false};

  mutable std::mutex mutex_;
  std::list<std::shared_ptr<Connection>> connections_;  // guarded by mutex_
  std::string dropped_;                                 // guarded by mutex_
  std::vector<int> drop_opcodes_;                       // guarded by mutex_
  std::int64_t request_session_ = 0;                    // guarded by mutex_
  RequestKind request_kind_ = RequestKind::listing;     // guarded by mutex_
  std::string request_under_ = "/";                     // guarded by mutex_
  std::thread acceptor_;
};

}  // namespace zkr::chaos
