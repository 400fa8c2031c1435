#include "lease_rule.hpp"

#include <algorithm>

namespace zkr::detail {

std::string protected_lease_prefix(std::string_view guid) {
  std::string prefix(kProtectedPrefix);
  prefix += guid;
  prefix += '-';
  prefix += kLeaseName;
  return prefix;
}

std::optional<std::string> find_protected_lease(const std::vector<std::string>& children,
                                                std::string_view guid) {
  const std::string prefix = protected_lease_prefix(guid);
  for (const auto& child : children)
    if (child.starts_with(prefix) && is_lease_node(child)) return child;
  return std::nullopt;
}

QueuePosition lease_position(const std::vector<std::string>& children, std::string_view our_node,
                             std::int32_t max_leases) {
  QueuePosition where;
  where.found = std::find(children.begin(), children.end(), our_node) != children.end();
  if (!where.found) return where;
  where.holds = max_leases > 0 && children.size() <= static_cast<std::size_t>(max_leases);
  if (!where.holds)
    for (const auto& child : children)
      if (child != our_node) where.lower.push_back(child);
  return where;
}

std::optional<std::int32_t> decode_shared_count(std::string_view data) {
  if (data.size() != 4) return std::nullopt;
  std::uint32_t value = 0;
  for (const char byte : data) value = (value << 8) | static_cast<unsigned char>(byte);
  return static_cast<std::int32_t>(value);
}

}  // namespace zkr::detail
