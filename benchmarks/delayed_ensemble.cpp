#include "delayed_ensemble.hpp"

#include <chrono>

#include "context.hpp"
#include "mntr.hpp"

namespace zkr::bench {

DelayedEnsemble::DelayedEnsemble(const std::string& connect, double rtt_ms) {
  const auto each_way = std::chrono::microseconds(static_cast<std::int64_t>(rtt_ms * 1000.0 / 2.0));
  for (const auto port : local_ports(connect)) {
    proxies_.push_back(std::make_unique<chaos::TcpProxy>(port));
    proxies_.back()->set_mode(chaos::ProxyMode::delay, each_way);
    connect_ += (connect_.empty() ? "" : ",") + std::string("127.0.0.1:") +
                std::to_string(proxies_.back()->port());
  }
  if (proxies_.empty())
    throw RunError("--rtt needs the servers on 127.0.0.1 (the delay proxies run here): " + connect);
}

}  // namespace zkr::bench
