// One table of bad arguments against every Keeper: the shared checks alone
// (src/keeper_arguments.hpp), the in-memory FakeKeeper the unit tests run on,
// the FaultKeeper that decorates it, and CKeeper over the C client. Each must
// refuse every row before anything is sent, with std::invalid_argument and the
// very message the shared checks give: a fake that let through a call the C
// client refuses (it used to let through a container create in a multi and
// data over 2 GiB) lets a recipe pass its unit tests and fail in production.
//
// CKeeper needs no server here: it is pointed at a port nobody listens on, and
// its checks run before the C client sees the request.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "keeper_arguments.hpp"
#include "log.hpp"
#include "support/failure.hpp"
#include "support/fake_keeper.hpp"
#include "support/fault_keeper.hpp"
#include "zkr/client.hpp"
#include "zkr/keeper.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using test::FakeEnsemble;

// A Keeper that runs the shared checks and nothing else, answering what
// passes with unimplemented: the reference the other Keepers are held to.
class ChecksOnlyKeeper final : public Keeper {
 public:
  void send_create(std::string path, std::string data, CreateMode mode, CreateOptions options,
                   ReplyHandler<Result<Created>> on_reply) override {
    detail::check_create(path, data, mode, options);
    return on_reply(test::failure<Result<Created>>(Errc::unimplemented, path));
  }
  void send_remove(std::string path, Version, ReplyHandler<Result<Empty>> on_reply) override {
    detail::check_write_path(path);
    return on_reply(test::failure<Result<Empty>>(Errc::unimplemented, path));
  }
  void send_exists(std::string path, Watcher, ReplyHandler<Result<Stat>> on_reply) override {
    detail::check_read_path(path);
    return on_reply(test::failure<Result<Stat>>(Errc::unimplemented, path));
  }
  void send_get(std::string path, Watcher, ReplyHandler<Result<NodeData>> on_reply) override {
    detail::check_read_path(path);
    return on_reply(test::failure<Result<NodeData>>(Errc::unimplemented, path));
  }
  void send_set(std::string path, std::string data, Version,
                ReplyHandler<Result<Stat>> on_reply) override {
    detail::check_set(path, data);
    return on_reply(test::failure<Result<Stat>>(Errc::unimplemented, path));
  }
  void send_children(std::string path, Watcher, ReplyHandler<Result<Children>> on_reply) override {
    detail::check_read_path(path);
    return on_reply(test::failure<Result<Children>>(Errc::unimplemented, path));
  }
  void send_multi(std::vector<Op> ops, ReplyHandler<MultiResult> on_reply) override {
    detail::check_multi(ops);
    return on_reply(test::failure<MultiResult>(Errc::unimplemented, ""));
  }
  void send_sync(std::string path, ReplyHandler<Result<Empty>> on_reply) override {
    detail::check_read_path(path);
    return on_reply(test::failure<Result<Empty>>(Errc::unimplemented, path));
  }

  void close() noexcept override {}
  std::int64_t session_id() const override { return 0; }
  std::string session_password() const override { return {}; }
  SessionState session_state() const override { return SessionState::connecting; }
  std::chrono::milliseconds session_timeout() const override { return 1000ms; }
  std::string connected_host() const override { return {}; }
};

// One past what the C client can pass as an int: 2 GiB, made anew by each
// row that needs it (the call takes the string and frees it as it throws),
// which costs about a second, so three rows have it.
[[maybe_unused]] std::string oversize() { return std::string(detail::kMaxDataLength + 1, 'x'); }

using Call = std::function<void(Keeper&)>;

struct BadCall {
  std::string name;
  std::string mention;  // a piece of the message that says which rule
  Call call;
};

std::vector<BadCall> oversize_calls() {
#ifdef __SANITIZE_THREAD__
  // TSan shadows every byte a string's construction writes: 2 GiB would cost
  // it several more GiB and many seconds per row. The other builds run these.
  return {};
#else
  return {
      {"create: data over 2 GiB", "larger than 2 GiB",
       [](Keeper& k) { (void)k.async_create("/big", oversize(), CreateMode::persistent); }},
      {"set: data over 2 GiB", "larger than 2 GiB",
       [](Keeper& k) { (void)k.async_set("/big", oversize()); }},
      {"multi: set data over 2 GiB", "larger than 2 GiB",
       [](Keeper& k) {
         std::vector<Op> ops;  // not an initializer list, which would copy the 2 GiB
         ops.emplace_back(op::Create{"/ok"});
         ops.emplace_back(op::Set{"/big", oversize()});
         (void)k.async_multi(std::move(ops));
       }},
  };
#endif
}

Call create_at(std::string path, CreateMode mode = CreateMode::persistent,
               CreateOptions options = {}) {
  return [=](Keeper& k) { (void)k.async_create(path, "", mode, options); };
}

Call multi_of(std::vector<Op> ops) {
  return [=](Keeper& k) { (void)k.async_multi(ops); };
}

std::vector<BadCall> bad_calls() {
  constexpr auto kTtlMode = CreateMode::persistent_with_ttl;
  const CreateOptions ttl{.acl = std::nullopt, .ttl = 1000ms};
  const CreateOptions huge_ttl{.acl = std::nullopt,
                               .ttl = std::chrono::milliseconds(detail::kMaxTtlMs + 1)};
  const CreateOptions empty_acl{.acl = AclList{}, .ttl = 0ms};
  const op::Create ok{"/ok"};
  std::vector<BadCall> rows = {
      {"create: relative", "absolute", create_at("a")},
      {"create: empty", "empty", create_at("")},
      {"create: trailing /", "ends with '/'", create_at("/a/")},
      {"create: //", "empty segment", create_at("/a//b")},
      {"create: ..", "relative segment", create_at("/a/../b")},
      {"create: control", "control character", create_at("/a\n")},
      {"create: reserved", "reserved", create_at("/zookeeper/x")},
      {"create: sequential under /", "parent path",
       create_at("/", CreateMode::persistent_sequential)},
      {"create: TTL mode, no ttl", "needs 0 < ttl", create_at("/t", kTtlMode)},
      {"create: ttl over 40 bits", "needs 0 < ttl", create_at("/t", kTtlMode, huge_ttl)},
      {"create: ttl, plain mode", "only for the *_with_ttl modes",
       create_at("/t", CreateMode::persistent, ttl)},
      {"create: empty ACL", "the ACL is empty", create_at("/a", CreateMode::persistent, empty_acl)},
      {"remove: reserved", "reserved", [](Keeper& k) { (void)k.async_remove("/zookeeper"); }},
      {"remove: relative", "absolute", [](Keeper& k) { (void)k.async_remove("a"); }},
      {"set: empty", "empty", [](Keeper& k) { (void)k.async_set("", "x"); }},
      {"set: reserved", "reserved", [](Keeper& k) { (void)k.async_set("/zookeeper", "x"); }},
      {"get: relative", "absolute", [](Keeper& k) { (void)k.async_get("a"); }},
      {"exists: trailing /", "ends with '/'", [](Keeper& k) { (void)k.async_exists("/a/"); }},
      {"children: //", "empty segment", [](Keeper& k) { (void)k.async_children("/a//b"); }},
      {"sync: .", "relative segment", [](Keeper& k) { (void)k.async_sync("/a/./b"); }},
      {"multi: bad check path", "empty segment", multi_of({ok, op::Check{"/a//b"}})},
      {"multi: remove reserved", "reserved", multi_of({ok, op::Remove{"/zookeeper/q"}})},
      {"multi: set reserved", "reserved", multi_of({op::Set{"/zookeeper", "x"}})},
      {"multi: create empty ACL", "the ACL is empty",
       multi_of({op::Create{"/a", "", CreateMode::persistent, empty_acl}})},
      {"multi: TTL create", "cannot create TTL nodes in a multi",
       multi_of({op::Create{"/t", "", kTtlMode, ttl}})},
      {"multi: container create", "cannot create container nodes in a multi",
       multi_of({ok, op::Create{"/c", "", CreateMode::container}})},
  };
  for (BadCall& row : oversize_calls()) rows.push_back(std::move(row));
  return rows;
}

KeeperConfig config_for(std::string hosts, std::string chroot = {},
                        std::optional<DigestAuth> auth = {}) {
  KeeperConfig config;
  config.hosts = std::move(hosts);
  config.chroot = std::move(chroot);
  config.auth = std::move(auth);
  return config;
}

// The message of the std::invalid_argument the call throws, or why not.
std::string refusal(Keeper& keeper, const BadCall& row) {
  try {
    row.call(keeper);
  } catch (const std::invalid_argument& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("(not invalid_argument: ") + e.what() + ")";
  }
  return "(accepted)";
}

// Every row refused by keeper exactly as by the shared checks.
void expect_refuses_as_the_checks(Keeper& keeper) {
  ChecksOnlyKeeper checks;
  for (const BadCall& row : bad_calls()) {
    const std::string expected = refusal(checks, row);
    ASSERT_NE(expected.find(row.mention), std::string::npos) << row.name << ": " << expected;
    EXPECT_EQ(refusal(keeper, row), expected) << row.name;
  }
}

TEST(KeeperArgumentsTest, SharedChecksRefuseEveryRowNamingTheRule) {
  ChecksOnlyKeeper checks;
  for (const BadCall& row : bad_calls()) {
    const std::string message = refusal(checks, row);
    EXPECT_NE(message.find(row.mention), std::string::npos) << row.name << ": " << message;
  }
}

TEST(KeeperArgumentsTest, FakeKeeperRefusesEveryRowAsTheSharedChecksDo) {
  FakeEnsemble ensemble;
  auto keeper = ensemble.connect();
  const auto zxid = ensemble.last_zxid();
  expect_refuses_as_the_checks(*keeper);
  // Nothing reached the fake server.
  EXPECT_EQ(ensemble.last_zxid(), zxid);
  EXPECT_EQ(ensemble.node_count(), 0u);
}

TEST(KeeperArgumentsTest, CKeeperRefusesEveryRowAsTheSharedChecksDo) {
  // The C client logs every refused connection at ERROR; keep the test quiet.
  auto logger = detail::default_logger();
  const auto level = logger->level();
  logger->set_level(spdlog::level::off);
  {
    auto keeper = connect_keeper(config_for("127.0.0.1:1"), nullptr);
    expect_refuses_as_the_checks(*keeper);
  }
  logger->set_level(level);
}

// A FaultKeeper checks before it matches a rule: else a rule that fails every
// request would answer a bad call with its code instead of refusing it.
TEST(KeeperArgumentsTest, FaultKeeperRefusesEveryRowBeforeAnyRuleFires) {
  FakeEnsemble ensemble;
  test::FaultKeeper keeper(ensemble.connect());
  auto& rule = keeper.on(test::OpKind::any).fail(Errc::connection_loss).times(1000);
  expect_refuses_as_the_checks(keeper);
  EXPECT_EQ(rule.fired(), 0);
}

// The other side: what the checks let through, the fake lets through too
// (the server may still answer with an error, which is not the checks' business).
TEST(KeeperArgumentsTest, WhatTheChecksAcceptTheFakeAccepts) {
  const CreateOptions longest_ttl{.acl = std::nullopt,
                                  .ttl = std::chrono::milliseconds(detail::kMaxTtlMs)};
  const std::vector<Call> calls = {
      create_at("/p"),
      create_at("/p/", CreateMode::persistent_sequential),
      create_at("/c", CreateMode::container),
      create_at("/t", CreateMode::persistent_with_ttl, longest_ttl),
      [](Keeper& k) { (void)k.async_exists("/zookeeper"); },
      [](Keeper& k) { (void)k.async_get("/zookeeper/quota"); },
      [](Keeper& k) { (void)k.async_children("/"); },
      [](Keeper& k) { (void)k.async_sync("/zookeeper"); },
      [](Keeper& k) { (void)k.async_set("/p", "data"); },
      multi_of({op::Create{"/m"}, op::Create{"/m/s-", "", CreateMode::ephemeral_sequential},
                op::Set{"/m", "x"}, op::Check{"/m"}, op::Create{"/m/x"}, op::Remove{"/m/x"}}),
      [](Keeper& k) { (void)k.async_remove("/c"); },
  };
  ChecksOnlyKeeper checks;
  FakeEnsemble ensemble;
  auto fake = ensemble.connect();
  for (std::size_t i = 0; i < calls.size(); ++i) {
    EXPECT_NO_THROW(calls[i](checks)) << "call " << i;
    EXPECT_NO_THROW(calls[i](*fake)) << "call " << i;
  }
  EXPECT_TRUE(ensemble.wait_idle(5s));
  EXPECT_TRUE(ensemble.exists_now("/m"));
}

// ---- Session settings: the Client, CKeeper and the fake read them with the
// ---- same rules.

std::string refusal_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(KeeperArgumentsTest, ClientAndCKeeperShareTheHostGrammar) {
  FakeEnsemble ensemble;
  for (const char* hosts : {"", "127.0.0.1", "a:0", "a:02181", "[::1]", "a:1,b:2/app", "a_b:1"}) {
    const std::string expected = refusal_of([&] { validate_hosts(hosts); });
    ASSERT_NE(expected, "(accepted)") << hosts;
    EXPECT_EQ(refusal_of([&] { (void)connect_keeper(config_for(hosts), nullptr); }), expected);
    ClientOptions options;
    options.connect_string = hosts;
    options.keeper_factory = ensemble.factory();
    EXPECT_EQ(refusal_of([&] { Client client(options); }),
              "ClientOptions::connect_string: " + expected);
  }
}

TEST(KeeperArgumentsTest, ClientAndCKeeperShareTheAuthRule) {
  FakeEnsemble ensemble;
  for (const char* user : {"", "a:b", ":"}) {
    const DigestAuth auth{user, "pw"};
    const std::string expected = refusal_of([&] { detail::check_digest_auth(auth); });
    ASSERT_NE(expected, "(accepted)") << user;
    EXPECT_EQ(
        refusal_of([&] { (void)connect_keeper(config_for("127.0.0.1:1", "", auth), nullptr); }),
        expected);
    ClientOptions options;
    options.connect_string = "127.0.0.1:2181";
    options.auth = auth;
    options.keeper_factory = ensemble.factory();
    EXPECT_EQ(refusal_of([&] { Client client(options); }), "ClientOptions::auth: " + expected);
  }
  EXPECT_NO_THROW(detail::check_digest_auth({"user", "pass:word"}));
}

TEST(KeeperArgumentsTest, CKeeperAndTheFakeShareTheChrootRule) {
  FakeEnsemble ensemble;
  for (const char* chroot : {"app", "/app/", "/a//b", "/zookeeper"}) {
    const std::string expected = refusal_of([&] { detail::check_chroot(chroot); });
    ASSERT_NE(expected.find("invalid chroot: "), std::string::npos) << expected;
    EXPECT_EQ(refusal_of([&] { (void)connect_keeper(config_for("127.0.0.1:1", chroot), nullptr); }),
              expected);
    EXPECT_EQ(refusal_of([&] { (void)ensemble.connect(config_for("", chroot), {}); }), expected);
  }
}

}  // namespace
}  // namespace zkr
