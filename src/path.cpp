#include "zkr/path.hpp"

#include <stdexcept>
#include <string>

namespace zkr {
namespace {

[[noreturn]] void reject_path(std::string_view path, std::string_view rule) {
  std::string shown;
  for (const char c : path.substr(0, 80)) {
    // Show control characters so the message itself stays printable.
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      static constexpr char hex[] = "0123456789abcdef";
      shown += "\\x";
      shown += hex[(static_cast<unsigned char>(c) >> 4) & 0xf];
      shown += hex[static_cast<unsigned char>(c) & 0xf];
    } else {
      shown += c;
    }
  }
  if (path.size() > 80) shown += "...";
  throw std::invalid_argument("invalid znode path \"" + shown + "\": " + std::string(rule));
}

bool is_control(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }

// Checks everything but the last segment's emptiness, which sequential
// prefixes allow ("/locks/a/" + sequence).
void check_common(std::string_view path, bool allow_reserved) {
  if (path.empty()) reject_path(path, "it is empty");
  if (path.front() != '/') reject_path(path, "it must be absolute (start with '/')");
  if (path.size() > kMaxPathLength)
    reject_path(path, "it is longer than " + std::to_string(kMaxPathLength) + " characters");
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '\0') reject_path(path, "it contains a NUL character");
    if (is_control(path[i])) reject_path(path, "it contains a control character");
    // U+0080..U+009F in UTF-8: C1 controls, which the server refuses too.
    if (static_cast<unsigned char>(path[i]) == 0xc2 && i + 1 < path.size() &&
        static_cast<unsigned char>(path[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(path[i + 1]) <= 0x9f)
      reject_path(path, "it contains a control character");
  }
  if (path.size() == 1) return;  // "/"
  std::size_t start = 1;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    const std::string_view segment = path.substr(start, end - start);
    if (segment.empty() && end < path.size()) reject_path(path, "it has an empty segment (\"//\")");
    if (segment == "." || segment == "..")
      reject_path(path, "it has a relative segment (\".\" or \"..\")");
    start = end + 1;
  }
  if (!allow_reserved && (path == "/zookeeper" || path.starts_with("/zookeeper/")))
    reject_path(path, "the /zookeeper subtree is reserved for the server");
}

}  // namespace

void validate_path(std::string_view path, bool allow_reserved) {
  check_common(path, allow_reserved);
  if (path.size() > 1 && path.back() == '/') reject_path(path, "it ends with '/'");
}

void validate_sequential_prefix(std::string_view path) {
  check_common(path, false);
  if (path == "/") reject_path(path, "a sequential node needs a parent path");
}

void validate_node_name(std::string_view name) {
  if (name.empty()) throw std::invalid_argument("invalid znode name: it is empty");
  if (name.find('/') != std::string_view::npos)
    throw std::invalid_argument("invalid znode name \"" + std::string(name) +
                                "\": it contains '/'");
  validate_path("/" + std::string(name), true);
}

std::string join_path(std::string_view parent, std::string_view child) {
  std::string out(parent);
  if (out.empty() || out.back() != '/') out += '/';
  out += child;
  return out;
}

std::string_view parent_path(std::string_view path) {
  const auto slash = path.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return "/";
  return path.substr(0, slash);
}

std::string_view node_name(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace zkr
