// The pure rule of a semaphore's leases, on Curator's InterProcessSemaphoreV2
// layout: who holds a lease as a function of the leases directory's
// children, the names our creates send, and the SharedCount a limit may be
// kept in. No I/O, so every rule here is tested without a server.
//
// Curator grants a lease once the leases directory holds at most the limit's
// number of children, its own node among them, and counts every child
// whatever its name: so must we, or the two would disagree on who is in.
// The order of the nodes plays no part (the semaphore's internal mutex, at
// <path>/locks, lets one contender at a time count).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lock_driver.hpp"

namespace zkr::detail {

// "_c_<guid>-lease-": the name our lease create sends; the server appends the sequence.
std::string protected_lease_prefix(std::string_view guid);

// The lease node created by the attempt with this guid, if listed.
std::optional<std::string> find_protected_lease(const std::vector<std::string>& children,
                                                std::string_view guid);

// Where our lease node stands among the leases directory's children, under
// a limit of max_leases: found if listed; holds if the children number at
// most max_leases; else `lower` is every other child (any of them going may
// let us in).
QueuePosition lease_position(const std::vector<std::string>& children, std::string_view our_node,
                             std::int32_t max_leases);

// A Curator SharedCount's value: a 4-byte big-endian two's-complement
// integer. nullopt for data of any other size.
std::optional<std::int32_t> decode_shared_count(std::string_view data);

}  // namespace zkr::detail
