#include "server_cost.hpp"

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

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

// A reading is taken between timed spans, so a slow one costs no figure: a
// server that is slow to answer on a loaded machine, or an election under
// way, gets a few more chances. A refusal (the four-letter words not allowed)
// does not pass.
constexpr int kReadAttempts = 3;
constexpr int kAnswerTimeoutMs = 5000;
// No event says when an election is over: a few of the test servers' ticks.
constexpr auto kPauseBetweenAttempts = std::chrono::milliseconds(500);

struct Attempt {
  CounterReading reading;
  bool may_pass = false;  // worth another attempt
};

Attempt passing(std::string problem) { return {{std::nullopt, std::move(problem)}, true}; }

// A reply with nothing to read in it: a refusal, which passes only when the
// server is electing a leader.
Attempt refused(const std::string& word, const std::string& reply, const std::string& at) {
  const bool electing = reply.find("not currently serving") != std::string::npos;
  return {{std::nullopt, word + " answered '" + reply.substr(0, reply.find('\n')) + "'" + at},
          electing};
}

Attempt read_once(const std::vector<std::uint16_t>& ports) {
  ServerCounters counters;
  bool leader = false;
  for (const auto port : ports) {
    const auto at = " (port " + std::to_string(port) + ")";
    const auto reply = four_letter_word(port, "mntr", kAnswerTimeoutMs);
    if (!reply) return passing("mntr got no answer" + at);
    const auto values = mntr_values(*reply);
    if (values.empty()) return refused("mntr", *reply, at);
    const auto packets = number(values, "zk_packets_received");
    if (!packets) return {{std::nullopt, "mntr gave no zk_packets_received" + at}, false};
    counters.packets_received += *packets;
    const auto state = values.find("zk_server_state");
    if (state == values.end() || (state->second != "leader" && state->second != "standalone"))
      continue;
    const auto srvr = four_letter_word(port, "srvr", kAnswerTimeoutMs);
    if (!srvr) return passing("srvr got no answer" + at);
    const auto zxid = zxid_of(*srvr);
    if (!zxid) return refused("srvr", *srvr, at);
    counters.leader_zxid = *zxid;
    counters.leader_fsyncs = number(values, "zk_cnt_fsynctime").value_or(0);
    leader = true;
  }
  if (!leader) return passing("no server was the leader");
  return {{counters, {}}, false};
}

}  // namespace

CounterReading read_server_counters(const std::string& connect) {
  const auto ports = local_ports(connect);
  if (ports.empty()) return {std::nullopt, "no server of " + connect + " is on 127.0.0.1"};
  Attempt attempt = read_once(ports);
  for (int n = 1; n < kReadAttempts && attempt.may_pass; ++n) {
    std::this_thread::sleep_for(kPauseBetweenAttempts);
    attempt = read_once(ports);
  }
  if (attempt.may_pass) attempt.reading.problem += ", " + std::to_string(kReadAttempts) + " times";
  return attempt.reading;
}

std::string durability_line(const CounterReading& before, const CounterReading& after) {
  if (!before.counters || !after.counters)
    return "Durability: unknown (" +
           (before.counters ? "at the end, " + after.problem : "at the start, " + before.problem) +
           "; forceSync not checked)";
  const auto fsyncs = after.counters->leader_fsyncs - before.counters->leader_fsyncs;
  const auto writes = after.counters->leader_zxid - before.counters->leader_zxid;
  if (fsyncs > 0)
    return "Durability: ZooKeeper's default, forceSync=yes (the leader fsynced its log " +
           std::to_string(fsyncs) + " times for " + std::to_string(writes) + " zxids)";
  return "Durability: forceSync=no (the leader never fsynced, for " + std::to_string(writes) +
         " zxids): faster than ZooKeeper's default; not the figures to publish";
}

void CostMeter::begin() { start_ = read_server_counters(connect_); }

void CostMeter::end(std::uint64_t ops) {
  const auto start = std::exchange(start_, {});
  const auto stop = read_server_counters(connect_);
  std::string problem;
  if (!start.counters) problem = "before it, " + start.problem;
  else if (!stop.counters) problem = "after it, " + stop.problem;
  else if (epoch_of(start.counters->leader_zxid) != epoch_of(stop.counters->leader_zxid))
    problem = "the leader changed during it";
  if (!problem.empty()) {
    // Once per reason: against a remote ensemble, every span has the same one.
    if (problem != last_problem_)
      std::cerr << "bench:   the servers' cost of a span of " << ops
                << " operations is left out: " << problem << "\n";
    last_problem_ = std::move(problem);
    return;
  }
  packets_ += stop.counters->packets_received - start.counters->packets_received;
  writes_ += stop.counters->leader_zxid - start.counters->leader_zxid;
  fsyncs_ += stop.counters->leader_fsyncs - start.counters->leader_fsyncs;
  ops_ += ops;
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
