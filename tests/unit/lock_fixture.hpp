// The fixture of the lock unit tests: contenders on the in-memory ensemble,
// each a Client with its own faults and a sleeper that takes no time.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lock_driver.hpp"
#include "support/fake_keeper.hpp"
#include "support/fault_keeper.hpp"
#include "support/waits.hpp"
#include "zkr/lock.hpp"

namespace zkr {

using namespace std::chrono_literals;

constexpr auto kWait = 10s;  // bound on every wait; a healthy run takes milliseconds
const std::string kDir = "/locks/key";

struct Contender {
  std::shared_ptr<test::Faults> faults = std::make_shared<test::Faults>();
  std::shared_ptr<RecordingSleeper> sleeper = std::make_shared<RecordingSleeper>();
  std::unique_ptr<Client> client;
};

template <class Lock>
class LockUnitTest : public ::testing::Test {
 protected:
  // A client on the fake ensemble; its own faults and a sleeper that takes no
  // time. `adjust` may change its options before the Client is made.
  Contender& contender(const std::function<void(ClientOptions&)>& adjust = {}) {
    auto c = std::make_unique<Contender>();
    ClientOptions options;
    options.connect_string = "127.0.0.1:2181";  // not dialled: the factory is the fake's
    options.session_timeout = 4s;
    options.keeper_factory = test::with_faults(ensemble_.factory(), c->faults);
    options.retry_policy = std::make_shared<RetryNTimes>(5, 10ms);
    options.sleeper = c->sleeper;
    if (adjust) adjust(options);
    c->client = std::make_unique<Client>(options);
    EXPECT_TRUE(c->client->block_until_connected(kWait));
    contenders_.push_back(std::move(c));
    return *contenders_.back();
  }

  std::unique_ptr<Lock> lock_for(Contender& c, LockOptions options = {}) {
    return std::make_unique<Lock>(*c.client, kDir, options);
  }

  // A raw session to look at and tamper with the tree.
  Keeper& raw() {
    if (!raw_) raw_ = ensemble_.connect();
    return *raw_;
  }

  // The children of the lock directory (in name order).
  std::vector<std::string> lock_nodes() { return ensemble_.children_now(kDir); }
  // The lock nodes in queue order: holder first.
  std::vector<std::string> queue() { return detail::sorted_lock_nodes(lock_nodes()); }

  // Waits until n lock nodes queue in the directory.
  bool wait_queue_length(std::size_t n) {
    return test::wait_children(
        raw(), kDir, [n](const auto& names) { return names.size() == n; }, kWait);
  }

  std::int64_t session_of(Contender& c) { return c.client->keeper()->session_id(); }

  // No node of c's session is left anywhere.
  bool no_ephemerals_of(Contender& c) { return ensemble_.ephemerals_of(session_of(c)).empty(); }
  // A new contender takes the lock at once: whoever was before it let go.
  bool next_is_granted_at_once() {
    auto next = lock_for(contender());
    const bool granted = next->try_acquire_for(kWait);
    if (granted) next->release();
    return granted;
  }

  test::FakeEnsemble ensemble_;
  std::vector<std::unique_ptr<Contender>> contenders_;
  std::shared_ptr<Keeper> raw_;
};

using LockTypes = ::testing::Types<InterProcessMutex, NonReentrantMutex>;

}  // namespace zkr
