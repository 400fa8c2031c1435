// The semaphore's lease rule, without a server: Curator counts every child
// of the leases directory, whatever its name, and grants once the count is
// within the limit; a SharedCount is 4 big-endian bytes.
#include "lease_rule.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace zkr::detail {
namespace {

const std::string kOurs = "_c_0b6b4c1e-1111-4222-8333-444455556666-lease-0000000007";

TEST(LeaseRule, HoldsWhileTheChildrenAreWithinTheLimit) {
  const std::vector<std::string> children{"_c_a-lease-0000000003", kOurs};
  const auto two = lease_position(children, kOurs, 2);
  EXPECT_TRUE(two.found);
  EXPECT_TRUE(two.holds);
  EXPECT_TRUE(two.lower.empty());
  const auto one = lease_position(children, kOurs, 1);
  EXPECT_TRUE(one.found);
  EXPECT_FALSE(one.holds);
  EXPECT_EQ(one.lower, std::vector<std::string>{"_c_a-lease-0000000003"});
}

TEST(LeaseRule, OrderPlaysNoPartAndEveryChildCounts) {
  // A younger lease listed first, and a child that is no lease at all:
  // Curator counts both, so the limit of 2 is passed.
  const std::vector<std::string> children{kOurs, "_c_b-lease-0000000009", "note"};
  const auto where = lease_position(children, kOurs, 2);
  EXPECT_FALSE(where.holds);
  EXPECT_EQ(where.lower.size(), 2u);
  EXPECT_TRUE(lease_position(children, kOurs, 3).holds);
}

TEST(LeaseRule, OurNodeMissingIsNotFound) {
  const auto where = lease_position({"_c_a-lease-0000000003"}, kOurs, 5);
  EXPECT_FALSE(where.found);
  EXPECT_FALSE(where.holds);
  EXPECT_FALSE(lease_position({kOurs}, kOurs, 0).holds) << "no lease under a limit of 0";
}

TEST(LeaseRule, OurCreateIsFoundByItsGuid) {
  const std::string guid = "0b6b4c1e-1111-4222-8333-444455556666";
  EXPECT_EQ(protected_lease_prefix(guid), "_c_" + guid + "-lease-");
  EXPECT_EQ(find_protected_lease({"_c_a-lease-0000000001", kOurs}, guid), kOurs);
  // The same guid on a lock node, or without a sequence, is not our lease.
  EXPECT_FALSE(find_protected_lease({"_c_" + guid + "-lock-0000000001"}, guid));
  EXPECT_FALSE(find_protected_lease({"_c_" + guid + "-lease-"}, guid));
}

TEST(LeaseRule, ASharedCountIsFourBigEndianBytes) {
  EXPECT_EQ(decode_shared_count(std::string("\x00\x00\x01\x02", 4)), 258);
  EXPECT_EQ(decode_shared_count(std::string("\xff\xff\xff\xfe", 4)), -2);
  EXPECT_EQ(decode_shared_count(std::string("\x7f\xff\xff\xff", 4)), 2147483647);
  EXPECT_FALSE(decode_shared_count(std::string("\x00\x00\x01", 3)));
  EXPECT_FALSE(decode_shared_count(""));
}

}  // namespace
}  // namespace zkr::detail
