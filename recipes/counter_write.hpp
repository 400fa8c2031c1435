// The counters' shared pieces: their encodings, and the one conditional write
// they all make, with its answer to a lost reply.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "zkr/client.hpp"
#include "zkr/types.hpp"

namespace zkr::detail {

// Curator's encodings: ByteBuffer.putInt / putLong, big-endian.
std::string encode_int32(std::int32_t value);
std::string encode_int64(std::int64_t value);
// CounterDataError (naming path and size) unless the data has 4 bytes.
std::int32_t decode_int32(const std::string& path, const std::string& data);
// A missing value and an empty node read as 0 (Curator's bytesToValue);
// CounterDataError unless the data has 0 or 8 bytes.
std::int64_t decode_int64(const std::string& path, const std::string& data);

// What a conditional write was based on: the node as read, or its absence.
struct WriteBasis {
  std::optional<Stat> stat;  // nullopt: the node was missing, the write creates it
};

enum class WriteFate {
  applied,  // the server applied it (stat is the node's after it)
  refused,  // provably not applied: a version conflict, the node made or gone
            // meanwhile, or a lost reply that a re-read showed unapplied
  unknown,  // the reply was lost and nothing proves either way
};

struct WriteAnswer {
  WriteFate fate = WriteFate::refused;
  Stat stat;  // when applied
};

// Sets `data` at `path` if the node is still the one `basis` read (same
// version), or creates it (parents as containers) if the basis found none.
// Never repeats a write whose reply was lost: it re-reads after a sync, and
// answers `refused` only if the node's czxid and mzxid are those of the
// basis (nothing was written to it since), else `unknown`. A lost create is
// always `unknown`: a node made and deleted since would look the same as one
// never made. Other errors (no_auth, ...) throw KeeperError.
WriteAnswer conditional_write(Client& client, const std::string& path, const WriteBasis& basis,
                              const std::string& data, const std::optional<AclList>& acl);

}  // namespace zkr::detail
