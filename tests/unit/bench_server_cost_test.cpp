// What the benchmarks read of the servers' counters (benchmarks/server_cost.hpp),
// against a stand-in for a server's four-letter words on loopback: a reading
// tries again when a server is electing, not when it refuses; a span whose
// reading failed or whose leader changed is left out of the cost.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "server_cost.hpp"

namespace zkr::bench {
namespace {

constexpr const char* kNotServing = "This ZooKeeper instance is not currently serving requests\n";
constexpr const char* kNotAllowed = "mntr is not executed because it is not in the whitelist.\n";

std::string standalone_mntr(std::int64_t packets, std::int64_t fsyncs) {
  return "zk_version\t3.8.0\nzk_server_state\tstandalone\nzk_packets_received\t" +
         std::to_string(packets) + "\nzk_cnt_fsynctime\t" + std::to_string(fsyncs) + "\n";
}

std::string srvr_at(const char* zxid_hex) {
  return std::string("Zookeeper version: 3.8.0\nZxid: 0x") + zxid_hex + "\nMode: standalone\n";
}

// Answers each connection's four-letter word with the next reply queued for
// it, then closes, as a server does; counts the words asked. Only what the
// test queued is answered: a word with no reply queued gets none.
class FourLetterStandIn {
 public:
  FourLetterStandIn() {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof addr;
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), size) != 0 ||
        ::listen(listener_, 8) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &size) != 0)
      throw std::runtime_error("no loopback listener");
    port_ = ntohs(addr.sin_port);
    thread_ = std::jthread([this](std::stop_token stop) { serve(stop); });
  }
  ~FourLetterStandIn() {
    thread_.request_stop();
    thread_.join();
    ::close(listener_);
  }

  std::string connect_string() const { return "127.0.0.1:" + std::to_string(port_); }
  void queue(const std::string& word, std::string reply) {
    std::lock_guard lock(mutex_);
    (word == "mntr" ? mntr_ : srvr_).push_back(std::move(reply));
  }
  // What a standalone server answers to one reading: mntr, then srvr.
  void queue_reading(std::int64_t packets, std::int64_t fsyncs, const char* zxid_hex) {
    queue("mntr", standalone_mntr(packets, fsyncs));
    queue("srvr", srvr_at(zxid_hex));
  }
  int asked(const std::string& word) const {
    std::lock_guard lock(mutex_);
    return word == "mntr" ? mntr_asked_ : srvr_asked_;
  }

 private:
  void serve(const std::stop_token& stop) {
    while (!stop.stop_requested()) {
      pollfd p{listener_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;  // 50 ms: how soon the destructor is heard
      const int conn = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn < 0) continue;
      char word[4];
      std::size_t got = 0;
      for (ssize_t n = 1; got < sizeof word && n > 0; got += static_cast<std::size_t>(n))
        if ((n = ::recv(conn, word + got, sizeof word - got, 0)) <= 0) break;
      std::string reply;
      {
        std::lock_guard lock(mutex_);
        const std::string asked(word, got);
        auto& replies = asked == "mntr" ? mntr_ : srvr_;
        ++(asked == "mntr" ? mntr_asked_ : srvr_asked_);
        if (!replies.empty()) {
          reply = std::move(replies.front());
          replies.pop_front();
        }
      }
      (void)::send(conn, reply.data(), reply.size(), MSG_NOSIGNAL);
      ::close(conn);
    }
  }

  int listener_ = -1;
  std::uint16_t port_ = 0;
  mutable std::mutex mutex_;
  std::deque<std::string> mntr_, srvr_;
  int mntr_asked_ = 0, srvr_asked_ = 0;
  std::jthread thread_;
};

TEST(BenchServerCost, AReadingSumsThePacketsAndTakesTheLeadersZxidAndFsyncs) {
  FourLetterStandIn server;
  server.queue_reading(120, 7, "20000002a");
  const auto reading = read_server_counters(server.connect_string());
  ASSERT_TRUE(reading.counters) << reading.problem;
  EXPECT_EQ(reading.counters->packets_received, 120);
  EXPECT_EQ(reading.counters->leader_zxid, 0x20000002a);
  EXPECT_EQ(reading.counters->leader_fsyncs, 7);
}

TEST(BenchServerCost, AServerElectingIsAskedAgain) {
  FourLetterStandIn server;
  server.queue("mntr", kNotServing);
  server.queue_reading(5, 1, "100000001");
  const auto reading = read_server_counters(server.connect_string());
  ASSERT_TRUE(reading.counters) << reading.problem;
  EXPECT_EQ(reading.counters->packets_received, 5);
  EXPECT_EQ(server.asked("mntr"), 2);
}

TEST(BenchServerCost, ARefusalIsNotAskedAgainAndIsSaid) {
  FourLetterStandIn server;
  server.queue("mntr", kNotAllowed);
  const auto reading = read_server_counters(server.connect_string());
  EXPECT_FALSE(reading.counters);
  EXPECT_NE(reading.problem.find("not in the whitelist"), std::string::npos) << reading.problem;
  EXPECT_NE(reading.problem.find("port "), std::string::npos) << reading.problem;
  EXPECT_EQ(server.asked("mntr"), 1);
}

TEST(BenchServerCost, AServerThatStaysElectingIsGivenUpOnAfterThreeAskings) {
  FourLetterStandIn server;
  for (int i = 0; i < 3; ++i) server.queue("mntr", kNotServing);
  const auto reading = read_server_counters(server.connect_string());
  EXPECT_FALSE(reading.counters);
  EXPECT_NE(reading.problem.find("3 times"), std::string::npos) << reading.problem;
  EXPECT_EQ(server.asked("mntr"), 3);
}

TEST(BenchServerCost, NoLocalServerIsSaidAtOnce) {
  const auto reading = read_server_counters("zk.example.com:2181");
  EXPECT_FALSE(reading.counters);
  EXPECT_NE(reading.problem.find("127.0.0.1"), std::string::npos) << reading.problem;
}

TEST(BenchServerCost, ASpanIsCountedPerOperation) {
  FourLetterStandIn server;
  server.queue_reading(100, 10, "100000010");
  server.queue_reading(160, 30, "100000028");
  CostMeter cost(server.connect_string());
  cost.begin();
  cost.end(20);
  ASSERT_TRUE(cost.requests_per_op());
  EXPECT_DOUBLE_EQ(*cost.requests_per_op(), 60.0 / 20);
  ASSERT_TRUE(cost.writes_per_op());
  EXPECT_DOUBLE_EQ(*cost.writes_per_op(), 24.0 / 20);
  EXPECT_EQ(cost.fsyncs(), 20);
}

TEST(BenchServerCost, ASpanOverALeaderChangeIsLeftOut) {
  FourLetterStandIn server;
  server.queue_reading(100, 10, "100000010");
  server.queue_reading(160, 30, "200000003");  // a new epoch: another leader
  CostMeter cost(server.connect_string());
  cost.begin();
  cost.end(20);
  EXPECT_FALSE(cost.requests_per_op());
  EXPECT_FALSE(cost.writes_per_op());
}

TEST(BenchServerCost, ASpanWithAFailedReadingIsLeftOutAndTheNextKept) {
  FourLetterStandIn server;
  server.queue("mntr", kNotAllowed);  // the first span's start
  server.queue_reading(100, 10, "100000010");
  server.queue_reading(110, 10, "100000012");
  server.queue_reading(150, 12, "100000016");
  CostMeter cost(server.connect_string());
  cost.begin();
  cost.end(1000);  // left out: its start was not read
  cost.begin();
  cost.end(4);
  ASSERT_TRUE(cost.requests_per_op());
  EXPECT_DOUBLE_EQ(*cost.requests_per_op(), 40.0 / 4);
  EXPECT_DOUBLE_EQ(*cost.writes_per_op(), 4.0 / 4);
}

CounterReading read_as(std::int64_t zxid, std::int64_t fsyncs) {
  return {ServerCounters{.packets_received = 0, .leader_zxid = zxid, .leader_fsyncs = fsyncs}, {}};
}

TEST(BenchServerCost, FsyncsBetweenTheRunsReadingsSayForceSyncIsOn) {
  EXPECT_EQ(durability_line(read_as(10, 5), read_as(40, 9)),
            "Durability: ZooKeeper's default, forceSync=yes (the leader fsynced its log 4 times "
            "for 30 zxids)");
}

TEST(BenchServerCost, WritesWithNoFsyncSayForceSyncIsOff) {
  const auto line = durability_line(read_as(10, 5), read_as(40, 5));
  EXPECT_TRUE(line.starts_with("Durability: forceSync=no (the leader never fsynced, for 30 zxids)"))
      << line;
}

TEST(BenchServerCost, AFailedReadingLeavesDurabilityUnknownAndSaysWhy) {
  const CounterReading failed{std::nullopt, "mntr got no answer (port 2181)"};
  EXPECT_EQ(durability_line(failed, read_as(40, 9)),
            "Durability: unknown (at the start, mntr got no answer (port 2181); forceSync not "
            "checked)");
  EXPECT_EQ(durability_line(read_as(10, 5), failed),
            "Durability: unknown (at the end, mntr got no answer (port 2181); forceSync not "
            "checked)");
}

}  // namespace
}  // namespace zkr::bench
