// NamespaceKeeper on its own, over the in-memory ensemble: which connections
// it admits, what it keeps for callers, when it tries again, and the watch
// that brings the session thread back. The Client's tests (client_test.cpp)
// show the same through listeners; these look at the gate's own answers.
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>

#include <gtest/gtest.h>
#include <spdlog/logger.h>

#include "log.hpp"

#include "client_options.hpp"
#include "namespace_keeper.hpp"
#include "session_inbox.hpp"
#include "support/fake_keeper.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A session of the ensemble opened in namespace /app, and a gate for it
// whose bootstrap handles (those without chroot) can be refused: the factory
// then returns none, which the gate must take as a failure to make it.
struct Gate {
  Gate() {
    ClientOptions o;
    o.connect_string = "127.0.0.1:2181";
    o.namespace_path = "app";
    o.connection_timeout = 5s;
    o.keeper_factory = [this, factory = ensemble.factory()](const KeeperConfig& c,
                                                            SessionCallback on_state) {
      if (c.chroot.empty() && refuse_bootstrap) return std::shared_ptr<Keeper>{};
      return factory(c, std::move(on_state));
    };
    options = detail::validated_options(std::move(o));
    config.hosts = options.connect_string;
    config.chroot = "/app";
    config.session_timeout = options.session_timeout;
    config.default_acl = *options.default_acl;
    session = Client::Session{ensemble.connect(config, {}), 1};
    ns = std::make_unique<detail::NamespaceKeeper>(
        options, config, inbox, detail::make_logger(options.logging), [this] { ++changes; });
  }

  test::FakeEnsemble ensemble;
  ClientOptions options;
  KeeperConfig config;
  Client::Session session;
  std::atomic<bool> refuse_bootstrap = false;
  std::atomic<int> changes = 0;
  const std::shared_ptr<detail::SessionInbox> inbox = std::make_shared<detail::SessionInbox>();
  std::unique_ptr<detail::NamespaceKeeper> ns;
};

TEST(NamespaceKeeper, WithoutANamespaceEveryConnectionIsAdmittedUntouched) {
  Gate gate;
  gate.config.chroot.clear();
  detail::NamespaceKeeper ns(gate.options, gate.config, gate.inbox,
                             detail::make_logger(gate.options.logging), [&] { ++gate.changes; });
  EXPECT_TRUE(ns.admit(SessionState::connected, gate.session));
  EXPECT_FALSE(ns.retry_at());
  EXPECT_FALSE(ns.error());
  EXPECT_EQ(gate.changes, 0) << "looked at a namespace there is none of";
  EXPECT_FALSE(gate.ensemble.exists_now("/app"));
}

TEST(NamespaceKeeper, MissingNamespaceIsMadeBeforeTheConnectionIsAdmitted) {
  Gate gate;
  ASSERT_FALSE(gate.ensemble.exists_now("/app"));
  EXPECT_TRUE(gate.ns->admit(SessionState::connected, gate.session));
  EXPECT_TRUE(gate.ensemble.exists_now("/app"));
  EXPECT_FALSE(gate.ns->retry_at());
  EXPECT_FALSE(gate.ns->error());
  EXPECT_EQ(gate.changes, 1);
}

// Held back, the connection comes out of on_retry() once the namespace is
// made; meanwhile callers get the reason, and the pause doubles.
TEST(NamespaceKeeper, HeldBackConnectionIsGivenBackOnceTheNamespaceIsMade) {
  Gate gate;
  gate.refuse_bootstrap = true;
  auto before = Clock::now();
  EXPECT_FALSE(gate.ns->admit(SessionState::connected_read_only, gate.session));
  auto after = Clock::now();
  ASSERT_TRUE(gate.ns->retry_at());
  EXPECT_GE(*gate.ns->retry_at(), before + 1s);
  EXPECT_LE(*gate.ns->retry_at(), after + 1s);
  const auto error = gate.ns->error();
  ASSERT_TRUE(error);
  EXPECT_TRUE(gate.ns->failed());
  EXPECT_EQ(error->path(), "/app");
  EXPECT_NE(std::string(error->what()).find("keeper_factory returned no keeper"), std::string::npos)
      << error->what();
  EXPECT_EQ(gate.changes, 1);

  before = Clock::now();
  EXPECT_FALSE(gate.ns->on_retry(/*connected=*/false, gate.session));
  after = Clock::now();
  ASSERT_TRUE(gate.ns->retry_at()) << "gave up";
  EXPECT_GE(*gate.ns->retry_at(), before + 2s) << "the pause did not grow";
  EXPECT_LE(*gate.ns->retry_at(), after + 2s);

  gate.refuse_bootstrap = false;
  EXPECT_EQ(gate.ns->on_retry(/*connected=*/false, gate.session),
            SessionState::connected_read_only);
  EXPECT_TRUE(gate.ensemble.exists_now("/app"));
  EXPECT_FALSE(gate.ns->retry_at());
  EXPECT_FALSE(gate.ns->error());
  EXPECT_EQ(gate.changes, 3);
}

TEST(NamespaceKeeper, AnotherEventOfTheSessionVoidsWhatWasHeldBack) {
  Gate gate;
  gate.refuse_bootstrap = true;
  ASSERT_FALSE(gate.ns->admit(SessionState::connected, gate.session));
  gate.ns->on_other_event();
  EXPECT_FALSE(gate.ns->retry_at());
  // Asked anyway, not connected, it has nothing to give back: a later look
  // is the next connection's.
  gate.refuse_bootstrap = false;
  EXPECT_FALSE(gate.ns->on_retry(/*connected=*/false, gate.session));
  EXPECT_FALSE(gate.ensemble.exists_now("/app"));
  EXPECT_TRUE(gate.ns->failed()) << "the reason goes only once the namespace is made";
}

// A lost link says nothing about the namespace: no error for callers, who
// keep waiting for a connection; but it is tried again.
TEST(NamespaceKeeper, ALostLinkIsNoErrorForCallers) {
  Gate gate;
  gate.ensemble.disconnect(gate.session.keeper->session_id());
  EXPECT_FALSE(gate.ns->admit(SessionState::connected, gate.session));
  EXPECT_FALSE(gate.ns->error());
  EXPECT_TRUE(gate.ns->retry_at());
  EXPECT_EQ(gate.changes, 1);
}

// The look that admits a connection leaves a watch: its deletion reaches the
// inbox as the session's namespace event, and on_changed() makes it again.
// Each look arms a new watch (one fires once), so every deletion is heard.
TEST(NamespaceKeeper, DeletedNamespaceIsReportedAndMadeAgain) {
  Gate gate;
  ASSERT_TRUE(gate.ns->admit(SessionState::connected, gate.session));
  auto created = gate.ensemble.exists_now("/app")->czxid;
  const auto next_event = [&] {
    detail::SessionInbox::Event event;
    EXPECT_EQ(gate.inbox->wait(Clock::now() + 5s, event), detail::SessionInbox::Wake::event);
    EXPECT_TRUE(event.namespace_changed);
    EXPECT_EQ(event.epoch, gate.session.epoch);
  };
  for (int deletion = 1; deletion <= 2; ++deletion) {
    SCOPED_TRACE(deletion);
    gate.ensemble.connect()->remove("/app");
    next_event();
    gate.ns->on_changed(/*connected=*/true, gate.session);
    ASSERT_TRUE(gate.ensemble.exists_now("/app"));
    EXPECT_GT(gate.ensemble.exists_now("/app")->czxid, created);
    created = gate.ensemble.exists_now("/app")->czxid;
    EXPECT_FALSE(gate.ns->retry_at());
    // The look found it missing, so its watch fires on our own create: the
    // session thread looks once more, which arms the watch the next deletion
    // fires.
    next_event();
    gate.ns->on_changed(/*connected=*/true, gate.session);
  }
}

// Not connected, a watch event waits for the next connection, which looks
// anyway: nothing is made now.
TEST(NamespaceKeeper, AChangeWhileNotConnectedWaitsForTheNextConnection) {
  Gate gate;
  ASSERT_TRUE(gate.ns->admit(SessionState::connected, gate.session));
  gate.ensemble.connect()->remove("/app");
  gate.ns->on_changed(/*connected=*/false, gate.session);
  EXPECT_FALSE(gate.ensemble.exists_now("/app"));
  EXPECT_FALSE(gate.ns->retry_at());
  EXPECT_TRUE(gate.ns->admit(SessionState::connected, gate.session));
  EXPECT_TRUE(gate.ensemble.exists_now("/app"));
}

}  // namespace
}  // namespace zkr
