// zkr/types.hpp: value types shared by the Keeper seam, the Client and recipes.
//
//   zkr::Result<zkr::Stat> r = keeper.async_exists("/a").get();
//   if (r.ok()) std::cout << r.value().czxid;
//   else if (r.error() == zkr::Errc::no_node) ...
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "zkr/error.hpp"

namespace zkr {

using Version = std::int32_t;
inline constexpr Version kAnyVersion = -1;

// A znode's metadata, as the server reports it.
struct Stat {
  std::int64_t czxid = 0;            // zxid of the create: unique, ever-increasing (fencing)
  std::int64_t mzxid = 0;            // zxid of the last data change
  std::int64_t pzxid = 0;            // zxid of the last child change
  std::int64_t ctime = 0;            // ms since epoch
  std::int64_t mtime = 0;            // ms since epoch
  Version version = 0;               // data version
  Version cversion = 0;              // children version
  Version aversion = 0;              // ACL version
  std::int64_t ephemeral_owner = 0;  // session id of the owner, 0 if not ephemeral
  std::int32_t data_length = 0;
  std::int32_t num_children = 0;
  friend bool operator==(const Stat&, const Stat&) = default;

  // Owned by a session. (Containers and TTL nodes look persistent here: the
  // server hides how it marks them.)
  bool is_ephemeral() const noexcept { return ephemeral_owner != 0; }
};

enum class CreateMode {
  persistent,
  persistent_sequential,
  ephemeral,
  ephemeral_sequential,
  container,            // removed by the server once it had children and has none
  persistent_with_ttl,  // removed by the server ttl after its last change, once empty
  persistent_sequential_with_ttl,
};
bool is_sequential(CreateMode m) noexcept;
bool is_ephemeral(CreateMode m) noexcept;
bool has_ttl(CreateMode m) noexcept;

// One ACL entry. perms is a bit set of the Perm values.
struct Acl {
  enum Perm : std::int32_t { read = 1, write = 2, create = 4, remove = 8, admin = 16, all = 31 };
  std::int32_t perms = all;
  std::string scheme;  // "world", "auth", "digest", "ip"
  std::string id;      // "anyone", "", "user:base64(sha1(user:password))", ...
  friend bool operator==(const Acl&, const Acl&) = default;
};
using AclList = std::vector<Acl>;
AclList open_acl_unsafe();  // world:anyone, all permissions
AclList creator_all_acl();  // auth:, all permissions for the authenticated creator
AclList read_acl_unsafe();  // world:anyone, read only

struct CreateOptions {
  std::optional<AclList> acl;        // unset: the Keeper's default ACL
  std::chrono::milliseconds ttl{0};  // required (> 0) for the *_with_ttl modes
};

// Result of an operation: an error code, or a value. value() throws KeeperError.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit on purpose
  Result(Errc error, std::string path) : error_(error), path_(std::move(path)) {}
  bool ok() const noexcept { return error_ == Errc::ok; }
  Errc error() const noexcept { return error_; }
  const std::string& path() const noexcept { return path_; }
  const T& value() const& {
    if (!ok()) throw KeeperError(error_, path_);
    return value_;
  }
  T&& value() && {
    if (!ok()) throw KeeperError(error_, path_);
    return std::move(value_);
  }

 private:
  Errc error_ = Errc::ok;
  std::string path_;
  T value_{};
};

struct Empty {};
struct Created {
  std::string path;  // the real path: with the sequence suffix, without the namespace
  Stat stat;
};
struct NodeData {
  std::string data;
  Stat stat;
};
struct Children {
  std::vector<std::string> names;  // unsorted, as the server sends them
  Stat stat;                       // of the parent
};

// Watches. A watch fires at most once. The event says why:
// a change to the node, or that the session ended (expired, auth failed, closed)
// and the watch will never fire for a change.
enum class EventType { created, deleted, changed, child, session_ended };
struct WatchEvent {
  EventType type;
  std::string path;
};
// Runs on the keeper's event thread: it must not block nor call the Keeper's
// blocking forms. Signal a condition variable or post work elsewhere instead.
using Watcher = std::function<void(const WatchEvent&)>;

// Session-level state of one handle, as the Keeper reports it (see Client for the
// connection states recipes use).
enum class SessionState {
  connecting,
  connected,
  connected_read_only,
  expired,
  auth_failed,
  closed
};
std::string_view to_string(SessionState s) noexcept;
using SessionCallback = std::function<void(SessionState)>;

// Operations of an atomic multi.
namespace op {
struct Create {
  std::string path{};
  std::string data{};
  CreateMode mode = CreateMode::persistent;
  CreateOptions options{};
};
struct Remove {
  std::string path{};
  Version version = kAnyVersion;
};
struct Set {
  std::string path{};
  std::string data{};
  Version version = kAnyVersion;
};
struct Check {
  std::string path{};
  Version version = kAnyVersion;
};
}  // namespace op
using Op = std::variant<op::Create, op::Remove, op::Set, op::Check>;

// One result per operation of a multi, in order. On failure of the multi every
// entry carries an error: the one that failed its own code, the others
// runtime_inconsistency (rolled back) as the server reports them.
struct OpResult {
  Errc error = Errc::ok;
  std::string path;  // for Create: the created path
  Stat stat;         // for Set (and Create where the server sends it)
};
// The outcome of a multi. `error` is ok, the code of the first operation that
// failed (then `results` says which), or a connection-level error (then
// `results` is empty and the outcome is unknown).
struct MultiResult {
  Errc error = Errc::ok;
  std::vector<OpResult> results;
  bool ok() const noexcept { return error == Errc::ok; }
  // Index of the first failed operation, or results.size().
  std::size_t failed_index() const noexcept;
};

}  // namespace zkr
