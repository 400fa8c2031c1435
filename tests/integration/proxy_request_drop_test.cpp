// The chaos nemesis's aimed drops (testkit/proxy, arm_drop_request) on a real
// server: armed for one kind of request under a path prefix, the proxy lets
// the session's requests elsewhere through and drops the first one there,
// naming it. A chaos worker's session serves a lock and a leader latch at
// once; a drop meant for the lock that hits the latch tests nothing the
// checker judges, and the run then reports the fault as one that never hit.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "support/ensemble.hpp"
#include "support/waits.hpp"
#include "tcp_proxy.hpp"
#include "zkr/client.hpp"
#include "zkr/keeper.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using chaos::RequestKind;

using test::kWait;

// A session through the proxy with an ephemeral node of its own in each of
// two directories, <root>/a and <root>/b; the tree goes with the fixture.
class ProxyRequestDrop : public ::testing::Test {
 protected:
  void SetUp() override {
    ZKR_REQUIRE_ENSEMBLE();
    proxy_ = std::make_unique<chaos::TcpProxy>(test::first_server_port());
    direct_ = test::connected_client(test::connect_string(), 10s);
    proxied_ = test::connected_client("127.0.0.1:" + std::to_string(proxy_->port()), 10s);
    root_ = test::unique_path("proxy-request-drop");
    direct_->keeper()->create(root_);
    direct_->keeper()->create(root_ + "/a");
    direct_->keeper()->create(root_ + "/b");
    keeper_ = proxied_->keeper();
    node_a_ = keeper_->create(root_ + "/a/n-", "", CreateMode::ephemeral_sequential).path;
    node_b_ = keeper_->create(root_ + "/b/n-", "", CreateMode::ephemeral_sequential).path;
  }

  void TearDown() override {
    if (!direct_) return;
    keeper_.reset();
    proxied_.reset();  // its session's ephemeral nodes go with it
    for (const auto* dir : {"/a", "/b"}) {
      auto children = direct_->keeper()->try_children(root_ + dir);
      if (children.ok())
        for (const auto& name : children.value().names)
          (void)direct_->keeper()->try_remove(root_ + dir + "/" + name);
      (void)direct_->keeper()->try_remove(root_ + dir);
    }
    (void)direct_->keeper()->try_remove(root_);
  }

  // The reply the proxied session gets to `call`, and then its link back:
  // a dropped request is answered with connection loss once the link goes.
  template <typename Call>
  Errc answer_to(Call call) {
    const auto reply = call(*keeper_).get();
    const Errc errc = reply.ok() ? Errc::ok : reply.error();
    EXPECT_TRUE(proxied_->block_until_connected(kWait)) << "no link back after a drop";
    return errc;
  }

  std::unique_ptr<chaos::TcpProxy> proxy_;
  std::unique_ptr<Client> direct_;
  std::unique_ptr<Client> proxied_;
  std::shared_ptr<Keeper> keeper_;
  std::string root_, node_a_, node_b_;
};

TEST_F(ProxyRequestDrop, AnOwnNodeWatchIsDroppedOnlyUnderThePrefix) {
  proxy_->arm_drop_request(keeper_->session_id(), RequestKind::own_watch, root_ + "/b/");
  const auto watch = [](const WatchEvent&) {};
  EXPECT_EQ(answer_to([&](Keeper& k) { return k.async_exists(node_a_, watch); }), Errc::ok);
  EXPECT_EQ(proxy_->dropped(), "");
  EXPECT_EQ(answer_to([&](Keeper& k) { return k.async_get(node_b_, watch); }),
            Errc::connection_loss);
  EXPECT_TRUE(proxy_->dropped().starts_with("opcode 4 ")) << proxy_->dropped();
  EXPECT_TRUE(proxy_->dropped().ends_with(" path " + node_b_)) << proxy_->dropped();
}

TEST_F(ProxyRequestDrop, AListingIsDroppedOnlyUnderThePrefix) {
  proxy_->arm_drop_request(keeper_->session_id(), RequestKind::listing, root_ + "/b");
  EXPECT_EQ(answer_to([&](Keeper& k) { return k.async_children(root_ + "/a"); }), Errc::ok);
  EXPECT_EQ(proxy_->dropped(), "");
  EXPECT_EQ(answer_to([&](Keeper& k) { return k.async_children(root_ + "/b"); }),
            Errc::connection_loss);
  EXPECT_TRUE(proxy_->dropped().ends_with(" path " + root_ + "/b")) << proxy_->dropped();
}

// Alone and in a multi: the dropped delete never reached the server, so its
// node is still there.
TEST_F(ProxyRequestDrop, AReleaseIsDroppedOnlyUnderThePrefix) {
  proxy_->arm_drop_request(keeper_->session_id(), RequestKind::release, root_ + "/b/");
  EXPECT_EQ(answer_to([&](Keeper& k) { return k.async_remove(node_a_); }), Errc::ok);
  EXPECT_EQ(proxy_->dropped(), "");
  std::vector<Op> ops;
  ops.emplace_back(op::Check{root_ + "/b"});
  ops.emplace_back(op::Remove{node_b_});
  EXPECT_EQ(keeper_->async_multi(std::move(ops)).get().error, Errc::connection_loss);
  EXPECT_TRUE(proxied_->block_until_connected(kWait));
  EXPECT_TRUE(proxy_->dropped().starts_with("opcode 14 ")) << proxy_->dropped();
  EXPECT_TRUE(proxy_->dropped().ends_with(" path " + node_b_)) << proxy_->dropped();
  EXPECT_TRUE(direct_->keeper()->exists(node_b_).has_value());

  proxy_->arm_drop_request(keeper_->session_id(), RequestKind::release, root_ + "/b/");
  EXPECT_EQ(answer_to([&](Keeper& k) { return k.async_remove(node_b_); }), Errc::connection_loss);
  EXPECT_TRUE(proxy_->dropped().starts_with("opcode 2 ")) << proxy_->dropped();
  EXPECT_TRUE(direct_->keeper()->exists(node_b_).has_value());
}

}  // namespace
}  // namespace zkr
