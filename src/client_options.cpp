#include "client_options.hpp"

#include <stdexcept>
#include <string>

#include "keeper_arguments.hpp"
#include "log.hpp"
#include "zkr/path.hpp"

namespace zkr::detail {
namespace {

using std::chrono::milliseconds;

// Rethrows an invalid_argument from a validator with the option's name first.
template <class F>
void check_option(const char* name, F&& validate) {
  try {
    validate();
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("ClientOptions::") + name + ": " + e.what());
  }
}

}  // namespace

ClientOptions validated_options(ClientOptions o) {
  check_option("connect_string", [&] { validate_hosts(o.connect_string); });
  if (o.session_timeout <= milliseconds::zero())
    throw std::invalid_argument("ClientOptions::session_timeout must be > 0 ms");
  if (o.connection_timeout <= milliseconds::zero())
    throw std::invalid_argument("ClientOptions::connection_timeout must be > 0 ms");
  // "app/locks" as documented; "/app/locks" is accepted as meaning the same.
  if (!o.namespace_path.empty() && o.namespace_path.front() == '/') o.namespace_path.erase(0, 1);
  if (!o.namespace_path.empty())
    check_option("namespace_path", [&] { validate_path("/" + o.namespace_path); });
  if (o.auth) check_option("auth", [&] { check_digest_auth(*o.auth); });

  if (!o.default_acl) o.default_acl = o.auth ? creator_all_acl() : open_acl_unsafe();
  if (!o.namespace_acl) o.namespace_acl = open_acl_unsafe();
  if (o.namespace_acl->empty())
    throw std::invalid_argument("ClientOptions::namespace_acl: an ACL needs at least one entry");
  if (!o.retry_policy)
    o.retry_policy =
        std::make_shared<ExponentialBackoffRetry>(milliseconds(100), 5, milliseconds(2000));
  if (!o.sleeper) o.sleeper = std::make_shared<RealSleeper>();
  if (!o.keeper_factory) {
    o.keeper_factory = [](const KeeperConfig& config, SessionCallback on_state) {
      return connect_keeper(config, std::move(on_state));
    };
  }
  return o;
}

}  // namespace zkr::detail
