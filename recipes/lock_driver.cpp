#include "lock_driver.hpp"

#include <algorithm>
#include <charconv>
#include <random>

#include <boost/uuid/random_generator.hpp>
#include <boost/uuid/uuid_io.hpp>

namespace zkr::detail {

std::string new_guid() {
  // One generator per thread: boost's generator is not thread-safe, and seeding
  // one per call would cost more than the create it names.
  thread_local boost::uuids::random_generator generator;
  return boost::uuids::to_string(generator());
}

std::string protected_lock_prefix(std::string_view guid) {
  std::string prefix(kProtectedPrefix);
  prefix += guid;
  prefix += '-';
  prefix += kLockName;
  return prefix;
}

std::optional<std::int64_t> lock_sequence(std::string_view name) {
  const auto at = name.rfind(kLockName);
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view digits = name.substr(at + kLockName.size());
  if (digits.size() < 10 || digits.size() > 11) return std::nullopt;
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

std::vector<std::string> sorted_lock_nodes(const std::vector<std::string>& children) {
  // Curator compares the text after the last "lock-", not its number. They
  // agree for the zero-padded positive numbers ZooKeeper writes until a
  // parent's counter overflows; comparing text keeps us agreeing with Curator
  // even then, which is what matters when both contend on one path.
  std::vector<std::pair<std::string_view, const std::string*>> keyed;
  keyed.reserve(children.size());
  for (const auto& child : children) {
    if (!lock_sequence(child)) continue;
    keyed.emplace_back(std::string_view(child).substr(child.rfind(kLockName) + kLockName.size()),
                       &child);
  }
  std::sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : *a.second < *b.second;
  });
  std::vector<std::string> sorted;
  sorted.reserve(keyed.size());
  for (const auto& [suffix, name] : keyed) sorted.push_back(*name);
  return sorted;
}

std::optional<std::string> find_protected_node(const std::vector<std::string>& children,
                                               std::string_view guid) {
  const std::string prefix = protected_lock_prefix(guid);
  for (const auto& child : children) {
    if (child.starts_with(prefix) && lock_sequence(child)) return child;
  }
  return std::nullopt;
}

QueuePosition queue_position(const std::vector<std::string>& sorted_nodes,
                             std::string_view our_node) {
  QueuePosition position;
  const auto ours = std::find(sorted_nodes.begin(), sorted_nodes.end(), our_node);
  if (ours == sorted_nodes.end()) return position;
  position.found = true;
  position.holds = ours == sorted_nodes.begin();
  position.lower.assign(sorted_nodes.begin(), ours);
  return position;
}

}  // namespace zkr::detail
