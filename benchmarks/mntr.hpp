// The servers' own view, from the `mntr` four-letter word over TCP. Only to
// servers on 127.0.0.1 (or localhost): the benchmarks touch no other host.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace zkr::bench {

// Ports of the servers of `connect` on 127.0.0.1 or localhost.
std::vector<std::uint16_t> local_ports(const std::string& connect);

// The reply to a four-letter word (mntr, srvr...), whole; nullopt if the
// server did not answer within timeout_ms.
std::optional<std::string> four_letter_word(std::uint16_t port, const std::string& word,
                                            int timeout_ms = 2000);

// The "key<TAB>value" lines of a reply to mntr; empty for a refusal ("mntr is
// not executed because it is not in the whitelist.", or "This ZooKeeper
// instance is not currently serving requests" during an election).
std::map<std::string, std::string> mntr_values(const std::string& reply);

// mntr's "key value" lines of one server; nullopt if it did not answer within
// timeout_ms (down, frozen, or mntr not whitelisted).
std::optional<std::map<std::string, std::string>> mntr(std::uint16_t port, int timeout_ms = 2000);

// zk_znode_count of the leader (or of a standalone server) of the ensemble in
// `connect`; nullopt if no local server answered. The leader, because a
// follower may apply the last changes a moment later.
std::optional<std::int64_t> leader_znode_count(const std::string& connect);

}  // namespace zkr::bench
