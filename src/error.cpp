#include "zkr/error.hpp"

#include <string>

namespace zkr {
namespace {

class KeeperCategory : public std::error_category {
 public:
  const char* name() const noexcept override { return "zookeeper"; }
  std::string message(int value) const override {
    const auto name = errc_name(static_cast<Errc>(value));
    return std::string(name) + " (" + std::to_string(value) + ")";
  }
};

}  // namespace

const std::error_category& keeper_category() noexcept {
  static const KeeperCategory category;
  return category;
}

std::error_code make_error_code(Errc e) noexcept {
  return {static_cast<int>(e), keeper_category()};
}

std::string_view errc_name(Errc e) noexcept {
  switch (e) {
    case Errc::ok: return "ok";
    case Errc::system_error: return "system_error";
    case Errc::runtime_inconsistency: return "runtime_inconsistency";
    case Errc::data_inconsistency: return "data_inconsistency";
    case Errc::connection_loss: return "connection_loss";
    case Errc::marshalling_error: return "marshalling_error";
    case Errc::unimplemented: return "unimplemented";
    case Errc::operation_timeout: return "operation_timeout";
    case Errc::bad_arguments: return "bad_arguments";
    case Errc::invalid_state: return "invalid_state";
    case Errc::new_config_no_quorum: return "new_config_no_quorum";
    case Errc::reconfig_in_progress: return "reconfig_in_progress";
    case Errc::ssl_connection_error: return "ssl_connection_error";
    case Errc::api_error: return "api_error";
    case Errc::no_node: return "no_node";
    case Errc::no_auth: return "no_auth";
    case Errc::bad_version: return "bad_version";
    case Errc::no_children_for_ephemerals: return "no_children_for_ephemerals";
    case Errc::node_exists: return "node_exists";
    case Errc::not_empty: return "not_empty";
    case Errc::session_expired: return "session_expired";
    case Errc::invalid_callback: return "invalid_callback";
    case Errc::invalid_acl: return "invalid_acl";
    case Errc::auth_failed: return "auth_failed";
    case Errc::closing: return "closing";
    case Errc::nothing: return "nothing";
    case Errc::session_moved: return "session_moved";
    case Errc::not_read_only: return "not_read_only";
    case Errc::ephemeral_on_local_session: return "ephemeral_on_local_session";
    case Errc::no_watcher: return "no_watcher";
    case Errc::reconfig_disabled: return "reconfig_disabled";
    case Errc::session_closed_requires_sasl_auth: return "session_closed_requires_sasl_auth";
    case Errc::throttled_op: return "throttled_op";
    case Errc::foreign_lock_protocol: return "foreign_lock_protocol";
    case Errc::sequence_wrapped: return "sequence_wrapped";
  }
  return "unknown";
}

Errc errc_from_int(int raw) noexcept {
  for (const Errc e : kAllErrc) {
    if (static_cast<int>(e) == raw && !is_zkrecipes_code(e)) return e;
  }
  return Errc::api_error;
}

bool is_connection_error(Errc e) noexcept {
  switch (e) {
    case Errc::connection_loss:
    case Errc::operation_timeout:
    case Errc::session_expired:
    case Errc::session_moved:
    case Errc::invalid_state:
    case Errc::closing:
    case Errc::ssl_connection_error: return true;
    default: return false;
  }
}

bool is_retryable(Errc e) noexcept {
  switch (e) {
    case Errc::connection_loss:
    case Errc::operation_timeout:
    case Errc::session_moved:
    case Errc::throttled_op: return true;
    default: return false;
  }
}

namespace {
std::string describe(Errc code, const std::string& path, std::string_view what_arg) {
  std::string text(errc_name(code));
  if (!path.empty()) text += " at " + path;
  if (!what_arg.empty()) text += ": " + std::string(what_arg);
  return text;
}
}  // namespace

KeeperError::KeeperError(Errc code, std::string path, std::string_view what_arg)
    : std::system_error(make_error_code(code)),
      path_(std::move(path)),
      text_(describe(code, path_, what_arg)) {}

}  // namespace zkr
