#include "server_cost.hpp"

#include <charconv>
#include <cstdlib>
#include <sstream>

#include "mntr.hpp"

namespace zkr::bench {
namespace {

std::optional<std::int64_t> number(const std::map<std::string, std::string>& values,
                                   const std::string& key) {
  const auto it = values.find(key);
  if (it == values.end()) return std::nullopt;
  std::int64_t n = 0;
  const auto& text = it->second;
  if (std::from_chars(text.data(), text.data() + text.size(), n).ec != std::errc())
    return std::nullopt;
  return n;
}

// "Zxid: 0x100000abc" in srvr's reply.
std::optional<std::int64_t> zxid_of(const std::string& srvr) {
  std::stringstream lines(srvr);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("Zxid: 0x", 0) != 0) continue;
    std::int64_t zxid = 0;
    const char* begin = line.data() + 8;
    const char* end = line.data() + line.size();
    if (std::from_chars(begin, end, zxid, 16).ec != std::errc()) return std::nullopt;
    return zxid;
  }
  return std::nullopt;
}

constexpr std::int64_t epoch_of(std::int64_t zxid) { return zxid >> 32; }

}  // namespace

std::optional<ServerCounters> read_server_counters(const std::string& connect) {
  const auto ports = local_ports(connect);
  if (ports.empty()) return std::nullopt;
  ServerCounters counters;
  bool leader = false;
  for (const auto port : ports) {
    const auto values = mntr(port);
    if (!values) return std::nullopt;
    const auto packets = number(*values, "zk_packets_received");
    if (!packets) return std::nullopt;
    counters.packets_received += *packets;
    const auto state = values->find("zk_server_state");
    if (state == values->end() || (state->second != "leader" && state->second != "standalone"))
      continue;
    const auto srvr = four_letter_word(port, "srvr");
    const auto zxid = srvr ? zxid_of(*srvr) : std::nullopt;
    if (!zxid) return std::nullopt;
    counters.leader_zxid = *zxid;
    counters.leader_fsyncs = number(*values, "zk_cnt_fsynctime").value_or(0);
    leader = true;
  }
  if (!leader) return std::nullopt;
  return counters;
}

void CostMeter::begin() { start_ = read_server_counters(connect_); }

void CostMeter::end(std::uint64_t ops) {
  const auto stop = read_server_counters(connect_);
  if (!start_ || !stop || epoch_of(start_->leader_zxid) != epoch_of(stop->leader_zxid)) return;
  packets_ += stop->packets_received - start_->packets_received;
  writes_ += stop->leader_zxid - start_->leader_zxid;
  fsyncs_ += stop->leader_fsyncs - start_->leader_fsyncs;
  ops_ += ops;
  start_.reset();
}

std::optional<double> CostMeter::requests_per_op() const {
  if (ops_ == 0) return std::nullopt;
  return static_cast<double>(packets_) / static_cast<double>(ops_);
}

std::optional<double> CostMeter::writes_per_op() const {
  if (ops_ == 0) return std::nullopt;
  return static_cast<double>(writes_) / static_cast<double>(ops_);
}

}  // namespace zkr::bench
