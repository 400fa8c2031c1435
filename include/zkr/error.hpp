// zkr/error.hpp: the one error model of zkrecipes.
//
// Every ZooKeeper result code has exactly one `Errc` value with the same number,
// so nothing is lost in translation; the few codes of zkrecipes' own are
// numbered from -1000 down, far from ZooKeeper's, and never come off the wire. Errors travel as `std::error_code` inside
// results and as `KeeperError` (a `std::system_error` that also names the path)
// when thrown. Bad arguments are caught before anything is sent and thrown as
// `std::invalid_argument` naming what was wrong.
//
//   try {
//     keeper.remove("/locks/a");
//   } catch (const zkr::KeeperError& e) {
//     if (e.errc() == zkr::Errc::no_node) { /* already gone */ }
//     if (zkr::is_connection_error(e.errc())) { /* outcome unknown */ }
//   }
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace zkr {

// Values equal the C client's ZOO_ERRORS codes (checked at compile time in src/).
enum class Errc : int {
  ok = 0,
  system_error = -1,
  runtime_inconsistency = -2,
  data_inconsistency = -3,
  connection_loss = -4,
  marshalling_error = -5,
  unimplemented = -6,
  operation_timeout = -7,
  bad_arguments = -8,
  invalid_state = -9,
  new_config_no_quorum = -13,
  reconfig_in_progress = -14,
  ssl_connection_error = -15,
  api_error = -100,
  no_node = -101,
  no_auth = -102,
  bad_version = -103,
  no_children_for_ephemerals = -108,
  node_exists = -110,
  not_empty = -111,
  session_expired = -112,
  invalid_callback = -113,
  invalid_acl = -114,
  auth_failed = -115,
  closing = -116,
  nothing = -117,
  session_moved = -118,
  not_read_only = -119,
  ephemeral_on_local_session = -120,
  no_watcher = -121,
  reconfig_disabled = -123,
  session_closed_requires_sasl_auth = -124,
  throttled_op = -127,

  // zkrecipes' own (is_zkrecipes_code). A lock found another lock protocol's
  // nodes on its path (Curator's semaphore or read/write lock, which do not
  // see our nodes, nor we theirs) and refused before it could be granted, its
  // own node deleted. Never retried: only the other service's owner can mend
  // it. See "No silent mix" in zkr/lock.hpp.
  foreign_lock_protocol = -1001,
  // A lock directory's sequence counter has passed 2^31 - 1, so ZooKeeper
  // names new lock nodes with negative numbers, which Curator (and so a
  // Curator peer on the path) orders wrongly: the lock refused to queue, its
  // own node deleted. Never retried. The counter starts again at 0 when the
  // directory is removed, which happens once it is empty.
  sequence_wrapped = -1002,
};

// Every Errc value, for exhaustive tests and tools.
inline constexpr Errc kAllErrc[] = {
    Errc::ok,
    Errc::system_error,
    Errc::runtime_inconsistency,
    Errc::data_inconsistency,
    Errc::connection_loss,
    Errc::marshalling_error,
    Errc::unimplemented,
    Errc::operation_timeout,
    Errc::bad_arguments,
    Errc::invalid_state,
    Errc::new_config_no_quorum,
    Errc::reconfig_in_progress,
    Errc::ssl_connection_error,
    Errc::api_error,
    Errc::no_node,
    Errc::no_auth,
    Errc::bad_version,
    Errc::no_children_for_ephemerals,
    Errc::node_exists,
    Errc::not_empty,
    Errc::session_expired,
    Errc::invalid_callback,
    Errc::invalid_acl,
    Errc::auth_failed,
    Errc::closing,
    Errc::nothing,
    Errc::session_moved,
    Errc::not_read_only,
    Errc::ephemeral_on_local_session,
    Errc::no_watcher,
    Errc::reconfig_disabled,
    Errc::session_closed_requires_sasl_auth,
    Errc::throttled_op,
    Errc::foreign_lock_protocol,
    Errc::sequence_wrapped,
};

// A code of zkrecipes' own, not ZooKeeper's.
constexpr bool is_zkrecipes_code(Errc e) noexcept { return static_cast<int>(e) <= -1000; }

const std::error_category& keeper_category() noexcept;
std::error_code make_error_code(Errc e) noexcept;

// The name of the code, e.g. "no_node". Unknown values give "unknown".
std::string_view errc_name(Errc e) noexcept;

// Maps a raw integer from the wire or the C client; unknown values (and
// zkrecipes' own codes, which no server sends) become api_error.
Errc errc_from_int(int raw) noexcept;

// The link to the ensemble failed or the session is gone: the outcome of a write
// in flight is unknown. (connection_loss, operation_timeout, session_expired,
// session_moved, invalid_state, closing, ssl_connection_error.)
bool is_connection_error(Errc e) noexcept;

// Repeating the same request later may succeed, and the error itself says nothing
// about the request being wrong (connection_loss, operation_timeout, session_moved,
// throttled_op). session_expired is not in this set: what a retry means after
// expiry depends on whether the operation belonged to the old session.
bool is_retryable(Errc e) noexcept;

// A failed ZooKeeper operation: the code, and the path it was about.
class KeeperError : public std::system_error {
 public:
  KeeperError(Errc code, std::string path, std::string_view what_arg = {});
  Errc errc() const noexcept { return static_cast<Errc>(code().value()); }
  const std::string& path() const noexcept { return path_; }
  // "no_node at /locks/a: what_arg"
  const char* what() const noexcept override { return text_.c_str(); }

 private:
  std::string path_;
  std::string text_;
};

}  // namespace zkr

namespace std {
template <>
struct is_error_code_enum<zkr::Errc> : true_type {};
}  // namespace std
