#include <gtest/gtest.h>

#include <set>
#include <string>

#include "zkr/error.hpp"

namespace zkr {
namespace {

TEST(Errc, EveryCodeHasItsOwnNameAndRoundTrips) {
  std::set<std::string_view> names;
  for (const Errc e : kAllErrc) {
    const auto name = errc_name(e);
    EXPECT_NE(name, "unknown") << static_cast<int>(e);
    EXPECT_TRUE(names.insert(name).second) << "duplicate name " << name;
    // Ours never come off the wire: a server sending one is sending nonsense.
    EXPECT_EQ(errc_from_int(static_cast<int>(e)), is_zkrecipes_code(e) ? Errc::api_error : e);
  }
  EXPECT_EQ(names.size(), std::size(kAllErrc));
}

TEST(Errc, OurOwnCodesAreFarFromZooKeepersAndNeverRetried) {
  EXPECT_TRUE(is_zkrecipes_code(Errc::foreign_lock_protocol));
  EXPECT_EQ(errc_name(Errc::foreign_lock_protocol), "foreign_lock_protocol");
  EXPECT_FALSE(is_retryable(Errc::foreign_lock_protocol));
  EXPECT_FALSE(is_connection_error(Errc::foreign_lock_protocol));
  for (const Errc e : kAllErrc) {
    if (is_zkrecipes_code(e)) continue;
    EXPECT_GT(static_cast<int>(e), -1000) << errc_name(e);
  }
}

TEST(Errc, UnknownRawCodesBecomeApiError) {
  EXPECT_EQ(errc_from_int(-9999), Errc::api_error);
  EXPECT_EQ(errc_from_int(42), Errc::api_error);
  EXPECT_EQ(errc_name(static_cast<Errc>(-9999)), "unknown");
}

TEST(Errc, ConvertsToStdErrorCode) {
  const std::error_code code = Errc::no_node;
  EXPECT_EQ(code.category().name(), std::string("zookeeper"));
  EXPECT_EQ(code.value(), -101);
  EXPECT_EQ(code.message(), "no_node (-101)");
  EXPECT_TRUE(code == Errc::no_node);
}

TEST(Errc, ConnectionErrorsAreExactlyTheLinkAndSessionOnes) {
  std::set<Errc> expected{Errc::connection_loss,     Errc::operation_timeout, Errc::session_expired,
                          Errc::session_moved,       Errc::invalid_state,     Errc::closing,
                          Errc::ssl_connection_error};
  for (const Errc e : kAllErrc)
    EXPECT_EQ(is_connection_error(e), expected.count(e) == 1) << errc_name(e);
}

TEST(Errc, OnlyTransientErrorsAreRetryable) {
  std::set<Errc> expected{Errc::connection_loss, Errc::operation_timeout, Errc::session_moved,
                          Errc::throttled_op};
  for (const Errc e : kAllErrc) EXPECT_EQ(is_retryable(e), expected.count(e) == 1) << errc_name(e);
  // The ones a retry must never paper over.
  EXPECT_FALSE(is_retryable(Errc::no_auth));
  EXPECT_FALSE(is_retryable(Errc::bad_arguments));
  EXPECT_FALSE(is_retryable(Errc::session_expired));
}

TEST(KeeperError, CarriesCodeAndPathInItsMessage) {
  const KeeperError error(Errc::bad_version, "/locks/a", "expected version 3");
  EXPECT_EQ(error.errc(), Errc::bad_version);
  EXPECT_EQ(error.path(), "/locks/a");
  EXPECT_EQ(std::string(error.what()), "bad_version at /locks/a: expected version 3");
  EXPECT_EQ(error.code(), Errc::bad_version);
}

}  // namespace
}  // namespace zkr
