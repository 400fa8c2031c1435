// What every Keeper refuses before it sends anything: see keeper_arguments.hpp.
// Also validate_hosts() of zkr/keeper.hpp, the host-list grammar, which the
// Client applies to its connect string and CKeeper to its hosts.
#include "keeper_arguments.hpp"

#include <climits>
#include <stdexcept>
#include <variant>

#include "zkr/path.hpp"

namespace zkr {
namespace detail {

static_assert(kMaxDataLength == static_cast<std::size_t>(INT_MAX));

// ---- Requests.

void check_write_path(std::string_view path) { validate_path(path); }

void check_read_path(std::string_view path) { validate_path(path, /*allow_reserved=*/true); }

void check_data(const std::string& path, std::string_view data) {
  if (data.size() > kMaxDataLength)
    throw std::invalid_argument("data for " + path + " is larger than 2 GiB");
}

void check_create(const std::string& path, std::string_view data, CreateMode mode,
                  const CreateOptions& options) {
  if (is_sequential(mode)) {
    validate_sequential_prefix(path);
  } else {
    check_write_path(path);
  }
  check_data(path, data);
  const auto ttl = options.ttl.count();
  if (has_ttl(mode) && (ttl <= 0 || ttl > kMaxTtlMs))
    throw std::invalid_argument(
        "create " + path + ": a *_with_ttl mode needs 0 < ttl <= " + std::to_string(kMaxTtlMs) +
        " ms, got " + std::to_string(ttl) + " ms");
  if (!has_ttl(mode) && ttl != 0)
    throw std::invalid_argument("create " + path + ": ttl is only for the *_with_ttl modes, got " +
                                std::to_string(ttl) + " ms");
  if (options.acl && options.acl->empty())
    throw std::invalid_argument("create " + path + ": the ACL is empty");
}

void check_set(const std::string& path, std::string_view data) {
  check_write_path(path);
  check_data(path, data);
}

void check_multi(const std::vector<Op>& ops) {
  for (const Op& op : ops) {
    if (const auto* create = std::get_if<op::Create>(&op)) {
      check_create(create->path, create->data, create->mode, create->options);
      // zoo_create_op_init has no TTL: the C client would send a TTL create
      // as a plain create, which the server refuses.
      if (has_ttl(create->mode))
        throw std::invalid_argument("multi: " + create->path +
                                    ": the C client cannot create TTL nodes in a multi");
      // The server answers a container create in a multi with a path and a
      // stat, but the C client (3.8) reads only a path: the rest of the reply
      // is misread and the C client aborts the process on an assert.
      if (create->mode == CreateMode::container)
        throw std::invalid_argument("multi: " + create->path +
                                    ": the C client cannot create container nodes in a multi");
    } else if (const auto* set = std::get_if<op::Set>(&op)) {
      check_set(set->path, set->data);
    } else {
      check_write_path(std::visit([](const auto& o) -> const std::string& { return o.path; }, op));
    }
  }
}

// ---- Session settings.

void check_chroot(std::string_view chroot) {
  if (chroot.empty() || chroot == "/") return;
  try {
    validate_path(chroot);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("invalid chroot: ") + e.what());
  }
}

void check_digest_auth(const DigestAuth& auth) {
  if (auth.user.empty() || auth.user.find(':') != std::string::npos)
    throw std::invalid_argument("digest auth user must be non-empty and have no ':'");
}

void check_keeper_config(const KeeperConfig& config) {
  validate_hosts(config.hosts);
  check_chroot(config.chroot);
  const auto timeout = config.session_timeout.count();
  if (timeout <= 0 || timeout > INT_MAX)  // the C client takes it as an int
    throw std::invalid_argument("session_timeout must be positive, got " + std::to_string(timeout) +
                                " ms");
  if (config.default_acl.empty()) throw std::invalid_argument("default_acl is empty");
  if (config.auth) check_digest_auth(*config.auth);
  if (config.session_id == 0 && !config.session_password.empty())
    throw std::invalid_argument("session_password given without session_id");
}

std::string printable(std::string_view text) {
  std::string out;
  for (const char c : text.substr(0, 80)) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      static constexpr char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 0xf];
    } else {
      out += c;
    }
  }
  if (text.size() > 80) out += "...";
  return out;
}

}  // namespace detail

// ---- The host list: "host:port[,host:port...]", as the C client can read it.

namespace {

[[noreturn]] void bad_hosts(std::string_view hosts, std::string_view piece, std::string_view why) {
  throw std::invalid_argument("invalid host list \"" + detail::printable(hosts) + "\": \"" +
                              detail::printable(piece) + "\" " + std::string(why) +
                              " (expected host:port[,host:port...])");
}

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-';
}
bool is_v6_char(char c) {
  return (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || (c >= '0' && c <= '9') || c == ':' ||
         c == '.';
}

void check_port(std::string_view hosts, std::string_view entry, std::string_view port) {
  if (port.empty()) bad_hosts(hosts, entry, "has no port");
  for (const char c : port)
    if (c < '0' || c > '9') bad_hosts(hosts, entry, "has a port that is not a decimal number");
  // The C client reads ports with strtol(base 0): "02181" would be octal 1153.
  if (port.size() > 1 && port.front() == '0')
    bad_hosts(hosts, entry, "has a port with a leading 0");
  if (port.size() > 5 || std::stoi(std::string(port)) > 65535 || port == "0")
    bad_hosts(hosts, entry, "has a port outside 1..65535");
}

void check_entry(std::string_view hosts, std::string_view entry) {
  if (entry.empty()) bad_hosts(hosts, entry, "is an empty entry (a stray ',')");
  for (const char c : entry) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) bad_hosts(hosts, entry, "contains a space or control character");
  }
  if (entry.find('/') != std::string_view::npos)
    bad_hosts(hosts, entry, "has a chroot suffix: pass the chroot separately");
  if (entry.front() == '[') {
    const auto close = entry.find(']');
    if (close == std::string_view::npos) bad_hosts(hosts, entry, "has an unclosed '['");
    const auto address = entry.substr(1, close - 1);
    if (address.empty() || address.find(':') == std::string_view::npos)
      bad_hosts(hosts, entry, "has no IPv6 address inside [ ]");
    for (const char c : address)
      if (!is_v6_char(c)) bad_hosts(hosts, entry, "has a bad character in its IPv6 address");
    const auto rest = entry.substr(close + 1);
    if (rest.empty() || rest.front() != ':') bad_hosts(hosts, entry, "has no port");
    check_port(hosts, entry, rest.substr(1));
    return;
  }
  // The C client splits at the last ':', hence IPv6 only in brackets.
  const auto colon = entry.rfind(':');
  if (colon == std::string_view::npos) bad_hosts(hosts, entry, "has no port");
  const auto host = entry.substr(0, colon);
  if (host.empty()) bad_hosts(hosts, entry, "has no host");
  if (host.find(':') != std::string_view::npos)
    bad_hosts(hosts, entry, "looks like an IPv6 address: write it as [address]:port");
  for (const char c : host)
    if (!is_name_char(c))
      bad_hosts(hosts, entry, "has a host with a character outside [A-Za-z0-9.-]");
  if (host.size() > 253) bad_hosts(hosts, entry, "has a host name longer than 253 characters");
  check_port(hosts, entry, entry.substr(colon + 1));
}

}  // namespace

void validate_hosts(std::string_view hosts) {
  if (hosts.empty())
    throw std::invalid_argument(
        "invalid host list: it is empty (expected host:port[,host:port...])");
  std::size_t start = 0;
  while (true) {
    const auto comma = hosts.find(',', start);
    check_entry(hosts,
                hosts.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (comma == std::string_view::npos) return;
    start = comma + 1;
  }
}

}  // namespace zkr
