#include "zkr/lock_factory.hpp"

#include <bit>
#include <cstdio>
#include <future>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include <boost/uuid/detail/sha1.hpp>

#include "client_internals.hpp"
#include "layout_gate.hpp"
#include "zkr/path.hpp"

namespace zkr {
namespace {

bool is_plain(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;  // encode_key writes upper case only
}

std::string sha1_hex(std::string_view data) {
  boost::uuids::detail::sha1 sha;
  sha.process_bytes(data.data(), data.size());
  unsigned int digest[5];
  sha.get_digest(digest);
  char hex[41];
  for (int i = 0; i < 5; ++i) std::snprintf(hex + 8 * i, 9, "%08x", digest[i]);
  return std::string(hex, 40);
}

// FNV-1a: stable across processes, platforms and releases, which std::hash
// is not; the bucket of a key must never change.
std::uint64_t stable_hash(std::string_view key) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const unsigned char c : key) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

// A recorded layout as a message may show it: what another process wrote
// there may be anything.
std::string printable(std::string_view text) {
  std::string out;
  for (const char c : text.substr(0, 100)) out += (c >= ' ' && c <= '~') ? c : '?';
  return text.size() > 100 ? out + "..." : out;
}

std::string mismatch_message(const std::string& root, const std::string& recorded,
                             const std::string& ours) {
  return "LockFactory at " + root + ": the layout recorded there (" + std::string(kLayoutNodeName) +
         ") is \"" + printable(recorded) + "\", ours is \"" + ours +
         "\": with different layouts one key has two lock paths and the locks exclude nothing. "
         "Give every process the same layout for a root, or use a new root.";
}

}  // namespace

std::string layout_record(const LockLayout& layout) {
  if (layout.kind == LockLayout::Kind::flat) return "zkr-lock-layout v1 flat";
  return "zkr-lock-layout v1 hashed " + std::to_string(layout.buckets);
}

LayoutMismatch::LayoutMismatch(std::string root, std::string recorded, std::string ours)
    : std::logic_error(mismatch_message(root, recorded, ours)),
      root_(std::move(root)),
      recorded_(std::move(recorded)),
      ours_(std::move(ours)) {}

LayoutMismatch::LayoutMismatch(std::string root, std::string recorded, std::string ours,
                               const std::string& message)
    : std::logic_error(message),
      root_(std::move(root)),
      recorded_(std::move(recorded)),
      ours_(std::move(ours)) {}

LayoutRecordChanged::LayoutRecordChanged(std::string root, std::string found, std::string ours)
    : LayoutMismatch(root, found, ours,
                     "LockFactory at " + root + ": the lock layout record (" +
                         std::string(kLayoutNodeName) +
                         ") changed after this factory read it: " + found +
                         ". No LockFactory writes it after making it, so someone else did; "
                         "locks that follow a changed layout exclude nothing: refusing. Restore "
                         "the record (\"" +
                         ours + "\") and restart, or use a new root.") {}

LockLayout LockLayout::hashed(std::uint32_t buckets) {
  if (buckets == 0) throw std::invalid_argument("a hashed lock layout needs at least one bucket");
  return LockLayout{Kind::hashed, buckets};
}

LockLayout LockLayout::hashed_for(std::uint64_t expected_keys, std::uint32_t max_children) {
  if (max_children < 4) throw std::invalid_argument("max_children must be at least 4");
  const std::uint64_t per_bucket = max_children / 4;
  const std::uint64_t needed =
      std::max<std::uint64_t>(1, (expected_keys + per_bucket - 1) / per_bucket);
  if (needed > (1u << 24)) throw std::invalid_argument("too many keys for one lock root");
  return hashed(static_cast<std::uint32_t>(std::bit_ceil(needed)));
}

std::string encode_key(std::string_view key) {
  if (key.empty()) throw std::invalid_argument("a lock key cannot be empty");
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string name;
  name.reserve(key.size());
  for (const unsigned char c : key) {
    if (is_plain(c)) {
      name += static_cast<char>(c);
    } else {
      name += '%';
      name += hex[c >> 4];
      name += hex[c & 0xf];
    }
  }
  if (name.size() <= kMaxEncodedKey) return name;
  // Keep a readable prefix (not cutting a %XX in half) and make it unique.
  std::size_t keep = kMaxEncodedKey - 41;
  while (keep > 0 && name[keep - 1] == '%') --keep;
  if (keep > 1 && name[keep - 2] == '%') keep -= 2;
  return name.substr(0, keep) + "~" + sha1_hex(key);
}

std::optional<std::string> decode_key(std::string_view name) {
  std::string key;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (is_plain(c)) {
      key += static_cast<char>(c);
    } else if (c == '%' && i + 2 < name.size() && hex_value(name[i + 1]) >= 0 &&
               hex_value(name[i + 2]) >= 0) {
      key += static_cast<char>(hex_value(name[i + 1]) * 16 + hex_value(name[i + 2]));
      i += 2;
    } else {
      return std::nullopt;  // "~" of a hashed long key, or not ours
    }
  }
  if (key.empty()) return std::nullopt;
  return key;
}

LockFactory::LockFactory(Client& client, std::string root, LockLayout layout, LockOptions options)
    : client_(client), root_(std::move(root)), layout_(layout), options_(std::move(options)) {
  try {
    validate_path(root_);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("LockFactory root: ") + e.what());
  }
  if (root_ == "/")
    throw std::invalid_argument("a lock root cannot be \"/\": give locks a directory");
  if (layout_.kind == LockLayout::Kind::hashed && layout_.buckets == 0)
    throw std::invalid_argument("a hashed lock layout needs at least one bucket");
  // Every key must make a valid lock path, the longest one included: refuse
  // a root too long for that now, rather than some keys later.
  const std::size_t bucket =
      layout_.kind == LockLayout::Kind::flat ? 0 : node_name(bucket_for("")).size() + 1;
  const std::size_t longest = root_.size() + bucket + 1 + kMaxEncodedKey;
  if (longest > kMaxLockPathLength)
    throw std::invalid_argument(
        "LockFactory root \"" + root_.substr(0, 80) + (root_.size() > 80 ? "..." : "") + "\" is " +
        std::to_string(root_.size()) + " characters long: with its layout, the lock " +
        "path of a long key would have " + std::to_string(longest) + ", more than the " +
        std::to_string(kMaxLockPathLength) + " a lock path may have");
  const CreateOptions create{.acl = options_.acl.value_or(open_acl_unsafe()), .ttl = {}};
  options_.layout_gate = std::make_shared<detail::LayoutGate>(root_, layout_, create);
}

std::string LockFactory::bucket_for(std::string_view key) const {
  if (layout_.kind == LockLayout::Kind::flat) return {};
  const auto bucket = stable_hash(key) % layout_.buckets;
  // Fixed width (as many hex digits as the largest bucket needs), so bucket
  // names sort and read alike.
  static constexpr char hex[] = "0123456789abcdef";
  std::string name;
  for (std::uint64_t b = layout_.buckets - 1, v = bucket; b > 0 || name.empty(); b /= 16, v /= 16)
    name.insert(name.begin(), hex[v % 16]);
  return join_path(root_, name);
}

std::string LockFactory::path_for(std::string_view key) const {
  const std::string parent = layout_.kind == LockLayout::Kind::flat ? root_ : bucket_for(key);
  return join_path(parent, encode_key(key));
}

void LockFactory::check_layout() const {
  auto& gate = *options_.layout_gate;
  (void)gate.proven(0);  // a refusal already found, without waiting for a connection
  client_.with_retry([&](Keeper&) {
    // The keeper and its epoch together: the watch belongs to that session.
    const auto session = client_.session_when_connected(std::chrono::steady_clock::now() +
                                                        client_.options().connection_timeout);
    gate.verify_now(session.keeper, session.epoch, *detail::ClientInternals::timers(client_),
                    client_.options().connection_timeout);
    return 0;
  });
}

void LockFactory::check_layout_if_unchecked() const {
  auto& gate = *options_.layout_gate;
  // Making a lock never waits for a connection nor fails for want of one
  // (try_acquire promises a single attempt): without one, its acquire checks.
  std::optional<Client::Session> session;
  try {
    session = detail::ClientInternals::session_now(client_, nullptr);
  } catch (const std::exception&) {  // closing, auth_failed: the acquire says so
  }
  if (!session || gate.proven(session->epoch)) return;
  try {
    gate.verify_now(session->keeper, session->epoch, *detail::ClientInternals::timers(client_),
                    client_.options().connection_timeout);
  } catch (const LayoutMismatch&) {
    throw;
  } catch (const std::exception& e) {
    // no_auth, a lost link...: the lock's own acquire meets it and says so.
    detail::ClientInternals::log(client_)->debug("could not check the lock layout of {} yet: {}",
                                                 root_, e.what());
  }
}

std::unique_ptr<InterProcessMutex> LockFactory::mutex(std::string_view key) const {
  check_layout_if_unchecked();
  return std::make_unique<InterProcessMutex>(client_, path_for(key), options_);
}

std::unique_ptr<NonReentrantMutex> LockFactory::non_reentrant_mutex(std::string_view key) const {
  check_layout_if_unchecked();
  return std::make_unique<NonReentrantMutex>(client_, path_for(key), options_);
}

std::unique_ptr<MultiLock> LockFactory::multi_lock(const std::vector<std::string>& keys) const {
  check_layout_if_unchecked();
  std::vector<std::string> paths;
  paths.reserve(keys.size());
  for (const auto& key : keys) paths.push_back(path_for(key));
  return std::make_unique<MultiLock>(client_, std::move(paths), options_);
}

}  // namespace zkr
