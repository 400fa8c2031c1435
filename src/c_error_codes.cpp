// Our Errc values are the C client's ZOO_ERRORS codes, one to one: checked
// here at compile time against its header, so that a new code in a new C
// client, or a typo in ours, fails the build rather than a request.
#include <zookeeper/zookeeper.h>

#include <iterator>
#include <utility>

#include "zkr/error.hpp"

namespace zkr {
namespace {

constexpr std::pair<Errc, int> kCodes[] = {
    {Errc::ok, ZOK},
    {Errc::system_error, ZSYSTEMERROR},
    {Errc::runtime_inconsistency, ZRUNTIMEINCONSISTENCY},
    {Errc::data_inconsistency, ZDATAINCONSISTENCY},
    {Errc::connection_loss, ZCONNECTIONLOSS},
    {Errc::marshalling_error, ZMARSHALLINGERROR},
    {Errc::unimplemented, ZUNIMPLEMENTED},
    {Errc::operation_timeout, ZOPERATIONTIMEOUT},
    {Errc::bad_arguments, ZBADARGUMENTS},
    {Errc::invalid_state, ZINVALIDSTATE},
    {Errc::new_config_no_quorum, ZNEWCONFIGNOQUORUM},
    {Errc::reconfig_in_progress, ZRECONFIGINPROGRESS},
    {Errc::ssl_connection_error, ZSSLCONNECTIONERROR},
    {Errc::api_error, ZAPIERROR},
    {Errc::no_node, ZNONODE},
    {Errc::no_auth, ZNOAUTH},
    {Errc::bad_version, ZBADVERSION},
    {Errc::no_children_for_ephemerals, ZNOCHILDRENFOREPHEMERALS},
    {Errc::node_exists, ZNODEEXISTS},
    {Errc::not_empty, ZNOTEMPTY},
    {Errc::session_expired, ZSESSIONEXPIRED},
    {Errc::invalid_callback, ZINVALIDCALLBACK},
    {Errc::invalid_acl, ZINVALIDACL},
    {Errc::auth_failed, ZAUTHFAILED},
    {Errc::closing, ZCLOSING},
    {Errc::nothing, ZNOTHING},
    {Errc::session_moved, ZSESSIONMOVED},
    {Errc::not_read_only, ZNOTREADONLY},
    {Errc::ephemeral_on_local_session, ZEPHEMERALONLOCALSESSION},
    {Errc::no_watcher, ZNOWATCHER},
    {Errc::reconfig_disabled, ZRECONFIGDISABLED},
    {Errc::session_closed_requires_sasl_auth, ZSESSIONCLOSEDREQUIRESASLAUTH},
    {Errc::throttled_op, ZTHROTTLEDOP},
};

constexpr bool every_code_matches() {
  for (const auto& [ours, theirs] : kCodes)
    if (static_cast<int>(ours) != theirs) return false;
  return true;
}
constexpr bool every_errc_listed() {
  for (const Errc e : kAllErrc) {
    if (is_zkrecipes_code(e)) continue;  // ours: not a ZOO_ERRORS code
    bool found = false;
    for (const auto& [ours, theirs] : kCodes) found = found || ours == e;
    if (!found) return false;
  }
  return true;
}
static_assert(every_code_matches(), "an Errc value differs from its ZOO_ERRORS code");
constexpr std::size_t zookeeper_codes() {
  std::size_t n = 0;
  for (const Errc e : kAllErrc) n += is_zkrecipes_code(e) ? 0 : 1;
  return n;
}
static_assert(every_errc_listed() && std::size(kCodes) == zookeeper_codes(),
              "kCodes must pair every Errc with its ZOO_ERRORS code");

}  // namespace
}  // namespace zkr
