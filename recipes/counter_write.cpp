// The counters' encodings and their conditional write.
#include "counter_write.hpp"

#include <exception>

#include <spdlog/spdlog.h>

#include "client_internals.hpp"
#include "zkr/cleanup.hpp"
#include "zkr/shared_count.hpp"

namespace zkr {

std::string_view to_string(CounterOutcome outcome) noexcept {
  switch (outcome) {
    case CounterOutcome::succeeded: return "succeeded";
    case CounterOutcome::conflict: return "conflict";
    case CounterOutcome::indeterminate: return "indeterminate";
  }
  return "unknown";
}

CounterDataError::CounterDataError(const std::string& path, std::size_t size, std::size_t expected)
    : std::runtime_error("counter node " + path + " holds " + std::to_string(size) +
                         " bytes of data, not the " + std::to_string(expected) +
                         " of its encoding: not a counter of this kind"),
      path_(path),
      size_(size) {}

namespace detail {

namespace {

template <class Unsigned>
std::string big_endian(Unsigned bits) {
  std::string out(sizeof bits, '\0');
  for (std::size_t i = 0; i < sizeof bits; ++i)
    out[sizeof bits - 1 - i] = static_cast<char>((bits >> (8 * i)) & 0xff);
  return out;
}

template <class Unsigned>
Unsigned from_big_endian(const std::string& data) {
  Unsigned bits = 0;
  for (const char c : data)
    bits = static_cast<Unsigned>((bits << 8) | static_cast<unsigned char>(c));
  return bits;
}

}  // namespace

std::string encode_int32(std::int32_t value) {
  return big_endian(static_cast<std::uint32_t>(value));
}

std::string encode_int64(std::int64_t value) {
  return big_endian(static_cast<std::uint64_t>(value));
}

std::int32_t decode_int32(const std::string& path, const std::string& data) {
  if (data.size() != 4) throw CounterDataError(path, data.size(), 4);
  return static_cast<std::int32_t>(from_big_endian<std::uint32_t>(data));
}

std::int64_t decode_int64(const std::string& path, const std::string& data) {
  if (data.empty()) return 0;
  if (data.size() != 8) throw CounterDataError(path, data.size(), 8);
  return static_cast<std::int64_t>(from_big_endian<std::uint64_t>(data));
}

namespace {

// After a lost reply to a set: did it apply? The sync first brings the server
// we read from up to the leader, and a request from our session still in
// flight on the old link is either in the log before it or refused for good:
// the server that takes the session back orders it before our new requests,
// and a move to another server makes the old one's requests fail with
// session_moved. So an unchanged czxid and mzxid after the sync means the
// node has not been written since our basis, by us or anyone.
WriteFate settle_lost_set(Client& client, const std::string& path, const Stat& basis) {
  try {
    const auto keeper = client.keeper_when_connected();
    keeper->sync(path);
    const auto now = keeper->try_get(path);
    if (now.ok() && now.value().stat.czxid == basis.czxid && now.value().stat.mzxid == basis.mzxid)
      return WriteFate::refused;
  } catch (const std::exception& e) {
    ClientInternals::log(client)->debug("counter {}: the re-read after a lost reply failed: {}",
                                        path, e.what());
  }
  return WriteFate::unknown;
}

}  // namespace

WriteAnswer conditional_write(Client& client, const std::string& path, const WriteBasis& basis,
                              const std::string& data, const std::optional<AclList>& acl) {
  const auto keeper = client.keeper_when_connected();  // throws before anything is sent
  if (basis.stat) {
    const auto set = keeper->try_set(path, data, basis.stat->version);
    if (set.ok()) return {WriteFate::applied, set.value()};
    if (set.error() == Errc::bad_version || set.error() == Errc::no_node)
      return {WriteFate::refused, {}};
    if (!is_connection_error(set.error())) throw KeeperError(set.error(), path);
    ClientInternals::log(client)->debug("counter {}: reply to a write lost ({})", path,
                                        errc_name(set.error()));
    return {settle_lost_set(client, path, *basis.stat), {}};
  }
  CreateOptions options;
  options.acl = acl;
  for (int attempt = 0; attempt < 2; ++attempt) {
    const auto created = keeper->try_create(path, data, CreateMode::persistent, options);
    if (created.ok()) return {WriteFate::applied, created.value().stat};
    if (created.error() == Errc::node_exists) return {WriteFate::refused, {}};
    if (is_connection_error(created.error())) {
      ClientInternals::log(client)->debug("counter {}: reply to its create lost ({})", path,
                                          errc_name(created.error()));
      return {WriteFate::unknown, {}};
    }
    if (created.error() != Errc::no_node) throw KeeperError(created.error(), path);
    // Parents missing: nothing was made. Making them is safe to repeat.
    client.with_retry([&](Keeper& k) {
      create_marked_parents(k, path);
      return 0;
    });
  }
  return {WriteFate::refused, {}};
}

}  // namespace detail
}  // namespace zkr
