// The zkrecipes-prometheus component on the live ensemble: a Client with a
// PrometheusObserver takes and releases a lock, times out behind another
// holder and loses a grant to a delete; a plain HTTP GET of the exposer's
// /metrics (127.0.0.1, an ephemeral port) shows each of those as counts.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stop_token>
#include <string>

#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include "support/ensemble.hpp"
#include "support/waits.hpp"
#include "zkr/lock.hpp"
#include "zkr/prometheus.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;

using test::kWait;

// GET /metrics from 127.0.0.1:port: the body, or "" on any failure. One
// connection, each read and write bounded by a timeout, the size by a cap.
std::string scrape(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return {};
  timeval timeout{.tv_sec = 10, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) {
    const std::string request = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
        static_cast<ssize_t>(request.size())) {
      char buffer[4096];
      for (ssize_t n;
           response.size() < (8u << 20) && (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;)
        response.append(buffer, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  const auto body = response.find("\r\n\r\n");
  if (!response.starts_with("HTTP/1.") || body == std::string::npos) return {};
  return response.substr(body + 4);
}

// The value of one series in the text format; nullopt if it is not there.
// Labels are written sorted by name (prometheus-cpp keeps them in a map).
std::optional<double> series_value(const std::string& text, const std::string& name,
                                   const std::map<std::string, std::string>& labels) {
  std::string series = name;
  if (!labels.empty()) {
    series += '{';
    for (const auto& [key, val] : labels) series += key + "=\"" + val + "\",";
    series.back() = '}';
  }
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.starts_with(series + ' ')) return std::stod(line.substr(series.size() + 1));
  return std::nullopt;
}

// The exporter, and a signal once it has counted the first connection state
// (told on the listener thread, perhaps after block_until_connected returns).
class Exporter : public PrometheusObserver {
 public:
  using PrometheusObserver::PrometheusObserver;
  void connection_state(ConnectionState state) override {
    PrometheusObserver::connection_state(state);
    std::call_once(once_, [&] { first_state_.set_value(); });
  }
  bool counted_a_state() {
    return first_state_future_.wait_for(kWait) == std::future_status::ready;
  }

 private:
  std::once_flag once_;
  std::promise<void> first_state_;
  std::future<void> first_state_future_ = first_state_.get_future();
};

class PrometheusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (test::connect_string().empty()) GTEST_SKIP() << "no ensemble: run scripts/test";
    dir_ = test::unique_path("prometheus");
  }
  void TearDown() override {
    if (other_) (void)other_->keeper()->try_remove(dir_);
  }

  std::unique_ptr<Client> client(std::shared_ptr<Observer> observer = {}) {
    ClientOptions options;
    options.connect_string = test::connect_string();
    options.session_timeout = 6s;
    options.observer = std::move(observer);
    auto c = std::make_unique<Client>(options);
    EXPECT_TRUE(c->block_until_connected(kWait));
    return c;
  }

  std::string dir_;
  std::unique_ptr<Client> other_;
};

TEST_F(PrometheusTest, AScrapeCountsGrantsTimeoutsAndALoss) {
  const auto registry = std::make_shared<prometheus::Registry>();
  const auto exposer = expose_metrics(registry, "127.0.0.1:0");
  const auto ports = exposer->GetListeningPorts();
  ASSERT_EQ(ports.size(), 1u);
  const auto exporter = std::make_shared<Exporter>(registry);
  const auto observed = client(exporter);
  other_ = client();  // not observed: its holds count nowhere

  // Three holds, given back.
  InterProcessMutex mutex(*observed, dir_);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(mutex.try_acquire_for(kWait));
    EXPECT_TRUE(mutex.release());
  }
  // A wait that times out behind another Client's hold.
  {
    InterProcessMutex theirs(*other_, dir_);
    ASSERT_TRUE(theirs.try_acquire_for(kWait));
    EXPECT_FALSE(mutex.try_acquire_for(200ms));
    EXPECT_TRUE(theirs.release());
  }
  // Their delete is sent without waiting: once it is applied, our next
  // grant is at once, not a hand-off.
  ASSERT_TRUE(test::wait_children(
      *other_->keeper(), dir_, [](const auto& names) { return names.empty(); }, kWait));
  // A hold lost: another session deletes our node.
  ASSERT_TRUE(mutex.try_acquire_for(kWait));
  const Grant grant = mutex.grant();
  std::promise<void> lost;
  const std::stop_callback on_lost(grant.lost_token(), [&] { lost.set_value(); });
  other_->keeper()->remove(grant.node_path());
  ASSERT_EQ(lost.get_future().wait_for(kWait), std::future_status::ready);
  (void)mutex.release();
  ASSERT_TRUE(exporter->counted_a_state());

  const auto text = scrape(ports.front());
  ASSERT_FALSE(text.empty()) << "no reply from 127.0.0.1:" << ports.front();
  const auto mutex_count = [&](const std::string& name, std::map<std::string, std::string> labels) {
    labels["recipe"] = "mutex";
    return series_value(text, name, labels);
  };
  EXPECT_EQ(mutex_count("zkr_lock_waits_total", {{"outcome", "granted"}}), 4);
  EXPECT_EQ(mutex_count("zkr_lock_waits_total", {{"outcome", "timed_out"}}), 1);
  EXPECT_EQ(mutex_count("zkr_lock_waits_total", {{"outcome", "failed"}}), 0);
  EXPECT_EQ(mutex_count("zkr_lock_wait_seconds_count", {{"outcome", "timed_out"}}), 1);
  EXPECT_GE(mutex_count("zkr_lock_wait_seconds_sum", {{"outcome", "timed_out"}}), 0.2);
  EXPECT_EQ(mutex_count("zkr_lock_grants_total", {{"hand_off", "false"}}), 4);
  EXPECT_EQ(mutex_count("zkr_lock_grants_total", {{"hand_off", "true"}}), 0);
  EXPECT_EQ(mutex_count("zkr_lock_hold_seconds_count", {{"outcome", "released"}}), 3);
  EXPECT_EQ(mutex_count("zkr_lock_hold_seconds_count", {{"outcome", "lost"}}), 1);
  EXPECT_EQ(mutex_count("zkr_lock_losses_total", {{"reason", "node_deleted"}}), 1);
  EXPECT_EQ(mutex_count("zkr_lock_losses_total", {{"reason", "session_lost"}}), 0);
  // Each of the five queued nodes was created by one request.
  EXPECT_GE(mutex_count("zkr_requests_total", {{"request", "create"}}), 5);
  EXPECT_EQ(series_value(text, "zkr_connection_states_total", {{"state", "connected"}}), 1);
  EXPECT_EQ(
      series_value(text, "zkr_lock_waits_total", {{"outcome", "granted"}, {"recipe", "read"}}), 0);
}

}  // namespace
}  // namespace zkr
