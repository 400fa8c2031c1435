// src/keeper_arguments.hpp (internal): what every Keeper refuses before it
// sends anything, written once so that the Keepers cannot drift apart.
//
// CKeeper (over the C client) and the in-memory FakeKeeper of the tests call
// these same functions first thing in each request, so a test on the fake
// refuses exactly what production refuses: a fake that accepted an argument
// the C client would refuse (a container create in a multi, data over 2 GiB)
// would let a recipe pass its unit tests and fail against a real ensemble.
// The Client checks its options with the same host grammar and auth rule.
//
//   check_create(path, data, mode, options);   // throws std::invalid_argument
//   check_multi(ops);                          // the same, per operation, and
//                                              // what a multi cannot carry
//
// Every check throws std::invalid_argument with a message naming the path (or
// setting) and the rule it breaks; nothing here talks to a server. What only
// the server can judge (a missing parent, a bad version, removing "/") is
// left to it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "zkr/keeper.hpp"
#include "zkr/types.hpp"

namespace zkr::detail {

// The C client passes data lengths as int.
inline constexpr std::size_t kMaxDataLength = 0x7FFFFFFF;  // INT_MAX
// ZOO_MAX_TTL in the C client: the server keeps a TTL in 40 bits of milliseconds.
inline constexpr std::int64_t kMaxTtlMs = 0xFFFFFFFFFF;

// ---- Requests.

// A write's path: validate_path, the reserved /zookeeper subtree refused.
void check_write_path(std::string_view path);
// A read's path (exists, get, children, sync): the reserved subtree allowed,
// as a tool listing the tree reads it.
void check_read_path(std::string_view path);
// Node data: at most kMaxDataLength bytes.
void check_data(const std::string& path, std::string_view data);
// The path (a sequential prefix for a sequential mode), the data, the TTL
// (given exactly for the *_with_ttl modes, in 0 < ttl <= kMaxTtlMs) and the
// ACL (not an empty list).
void check_create(const std::string& path, std::string_view data, CreateMode mode,
                  const CreateOptions& options);
void check_set(const std::string& path, std::string_view data);
// Each operation as its own request would be checked, and no TTL or
// container create, which the C client cannot put in a multi.
void check_multi(const std::vector<Op>& ops);

// ---- Session settings.

// "" or "/" (none), else a path outside the reserved subtree.
void check_chroot(std::string_view chroot);
// The server splits "user:password" at the first ':', so the user must be
// non-empty and have none.
void check_digest_auth(const DigestAuth& auth);
// validate_hosts, check_chroot, check_digest_auth, a session timeout in
// 1..INT_MAX ms, a non-empty default ACL, no session password without a
// session id. What joining a session needs beyond that is the C client's
// business (CKeeper checks the password's length).
void check_keeper_config(const KeeperConfig& config);

// text for an error message: control characters as \xNN, cut after 80
// characters.
std::string printable(std::string_view text);

}  // namespace zkr::detail
