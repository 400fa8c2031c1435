// Helpers the nemesis's two halves share: nemesis.cpp (faults of servers,
// links, sessions and processes) and nemesis_moves.cpp (another client's
// moves on the lock directories). Internal to the nemesis.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>

#include "zkr/keeper.hpp"

namespace zkr::chaos::nemesis_detail {

// A session id as the logs write it (lowercase hex).
std::string hex(std::int64_t id);
// Opens a session with `config` and waits (up to 10 s) until it is connected
// or refused. Returns the keeper and the state it reached (nullopt: none).
std::pair<std::shared_ptr<Keeper>, std::optional<SessionState>> connect_and_wait(
    const KeeperConfig& config);
// A GUID like Curator's protected names carry.
std::string random_guid(std::mt19937_64& rng);

}  // namespace zkr::chaos::nemesis_detail
