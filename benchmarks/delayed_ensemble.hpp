// The ensemble behind delay proxies (proxy/tcp_proxy.hpp), one per local
// server: every byte each way waits half the added round trip, so that a
// request and its reply take rtt_ms longer, as over a network.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tcp_proxy.hpp"

namespace zkr::bench {

class DelayedEnsemble {
 public:
  // Throws RunError if connect names no server on 127.0.0.1.
  DelayedEnsemble(const std::string& connect, double rtt_ms);
  // The proxies' "127.0.0.1:port,...", in the order of connect's servers.
  const std::string& connect_string() const noexcept { return connect_; }

 private:
  std::vector<std::unique_ptr<chaos::TcpProxy>> proxies_;
  std::string connect_;
};

}  // namespace zkr::bench
