#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "zkr/path.hpp"

namespace zkr {
namespace {

// The message must say what was wrong, not just that something was.
void expect_rejected(const std::string& path, const std::string& reason) {
  try {
    validate_path(path);
    ADD_FAILURE() << "accepted \"" << path << "\"";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(reason), std::string::npos)
        << "message \"" << e.what() << "\" lacks \"" << reason << "\"";
  }
}

TEST(ValidatePath, AcceptsOrdinaryPaths) {
  for (const char* path : {"/", "/a", "/a/b", "/locks/_c_1234-lock-0000000001", "/a.b/c-d_e",
                           "/zookeeperish", "/über/ünïcode"})
    EXPECT_NO_THROW(validate_path(path)) << path;
}

TEST(ValidatePath, RejectsEachRuleWithItsReason) {
  expect_rejected("", "empty");
  expect_rejected("a/b", "absolute");
  expect_rejected("/a/", "ends with '/'");
  expect_rejected("/a//b", "empty segment");
  expect_rejected("//", "empty segment");
  expect_rejected("/a/./b", "relative segment");
  expect_rejected("/a/..", "relative segment");
  expect_rejected(
      "/a\x01"
      "b",
      "control character");
  expect_rejected("/a\tb", "control character");
  expect_rejected("/a\xc2\x85", "control character");
  expect_rejected(std::string("/a\0b", 4), "NUL");
  expect_rejected("/" + std::string(kMaxPathLength, 'x'), "longer than");
  expect_rejected("/zookeeper", "reserved");
  expect_rejected("/zookeeper/quota", "reserved");
}

TEST(ValidatePath, ShowsControlCharactersEscaped) {
  try {
    validate_path("/a\x01");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("/a\\x01"), std::string::npos) << e.what();
  }
}

TEST(ValidatePath, ReservedSubtreeCanBeAllowedExplicitly) {
  EXPECT_NO_THROW(validate_path("/zookeeper/config", /*allow_reserved=*/true));
}

TEST(ValidateSequentialPrefix, AllowsTrailingSlashButNotTheRoot) {
  EXPECT_NO_THROW(validate_sequential_prefix("/locks/a/"));
  EXPECT_NO_THROW(validate_sequential_prefix("/locks/a/lock-"));
  EXPECT_THROW(validate_sequential_prefix("/"), std::invalid_argument);
  EXPECT_THROW(validate_sequential_prefix("/a//lock-"), std::invalid_argument);
  EXPECT_THROW(validate_sequential_prefix("locks/"), std::invalid_argument);
}

TEST(ValidateNodeName, RejectsSlashesAndEmptiness) {
  EXPECT_NO_THROW(validate_node_name("lock-0001"));
  EXPECT_THROW(validate_node_name(""), std::invalid_argument);
  EXPECT_THROW(validate_node_name("a/b"), std::invalid_argument);
  EXPECT_THROW(validate_node_name(".."), std::invalid_argument);
}

TEST(PathHelpers, JoinParentAndName) {
  EXPECT_EQ(join_path("/", "a"), "/a");
  EXPECT_EQ(join_path("/a", "b"), "/a/b");
  EXPECT_EQ(parent_path("/a/b"), "/a");
  EXPECT_EQ(parent_path("/a"), "/");
  EXPECT_EQ(node_name("/a/b"), "b");
  EXPECT_EQ(node_name("/a"), "a");
}

}  // namespace
}  // namespace zkr
