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

namespace {

// The sequence after the last `marker` in name, as the server writes it
// (see lock_sequence); nullopt if the name does not end so.
std::optional<std::int64_t> sequence_after(std::string_view name, std::string_view marker) {
  const auto at = name.rfind(marker);
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view digits = name.substr(at + marker.size());
  if (digits.size() < 10 || digits.size() > 11) return std::nullopt;
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<std::int64_t> lock_sequence(std::string_view name) {
  return sequence_after(name, kLockName);
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

std::string ForeignLockNodes::description() const {
  std::string text;
  switch (protocol) {
    case ForeignProtocol::curator_semaphore:
      text = "Curator InterProcessSemaphoreV2/SemaphoreMutex (children ";
      for (std::size_t i = 0; i < nodes.size(); ++i) text += (i ? ", " : "") + nodes[i] + "/";
      return text + ")";
    case ForeignProtocol::curator_read_write_lock:
      text = "Curator InterProcessReadWriteLock (node " + nodes.front();
      if (nodes.size() > 1) text += " and " + std::to_string(nodes.size() - 1) + " more";
      return text + ")";
  }
  return "an unknown lock protocol";
}

std::optional<ForeignLockNodes> find_foreign_lock_nodes(const std::vector<std::string>& children) {
  // Either child alone is the semaphore's: "locks" appears first (its
  // internal mutex), and "leases" may outlive it.
  bool locks = false, leases = false;
  ForeignLockNodes read_write{ForeignProtocol::curator_read_write_lock, {}};
  for (const auto& child : children) {
    locks = locks || child == kCuratorSemaphoreLocks;
    leases = leases || child == kCuratorSemaphoreLeases;
    if (sequence_after(child, kCuratorReadName) || sequence_after(child, kCuratorWriteName))
      read_write.nodes.push_back(child);
  }
  if (locks || leases) {
    ForeignLockNodes semaphore{ForeignProtocol::curator_semaphore, {}};
    if (locks) semaphore.nodes.emplace_back(kCuratorSemaphoreLocks);
    if (leases) semaphore.nodes.emplace_back(kCuratorSemaphoreLeases);
    return semaphore;
  }
  if (read_write.nodes.empty()) return std::nullopt;
  std::sort(read_write.nodes.begin(), read_write.nodes.end());
  return read_write;
}

}  // namespace zkr::detail
