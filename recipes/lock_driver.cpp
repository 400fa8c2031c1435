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

std::string_view queue_marker(QueueKind kind) {
  switch (kind) {
    case QueueKind::mutex: return kLockName;
    case QueueKind::read: return kCuratorReadName;
    case QueueKind::write: return kCuratorWriteName;
  }
  return kLockName;
}

std::string protected_prefix(std::string_view guid, QueueKind kind) {
  std::string prefix(kProtectedPrefix);
  prefix += guid;
  prefix += '-';
  prefix += queue_marker(kind);
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

bool is_lease_node(std::string_view name) { return sequence_after(name, kLeaseName).has_value(); }

std::optional<QueueKind> queue_kind(std::string_view name) {
  for (const auto kind : {QueueKind::mutex, QueueKind::read, QueueKind::write})
    if (sequence_after(name, queue_marker(kind))) return kind;
  return std::nullopt;
}

std::int64_t unwrapped_sequence(std::int64_t sequence) {
  // The counter runs 0 .. 2^31 - 1, then -2^31 .. -1: a negative number was
  // given after every non-negative one, 2^32 later than its value says.
  return sequence < 0 ? sequence + (std::int64_t{1} << 32) : sequence;
}

std::vector<std::string> sorted_queue_nodes(const std::vector<std::string>& children,
                                            QueueFamily family) {
  // By the counter's order of issue. For the zero-padded non-negative numbers
  // ZooKeeper writes until a parent's counter passes 2^31 - 1 this is
  // Curator's order (the text after the marker); past it Curator's order is
  // wrong, and a grant refuses to queue (wrapped_sequence_node) rather than
  // disagree with a Curator peer.
  std::vector<std::pair<std::int64_t, const std::string*>> keyed;
  keyed.reserve(children.size());
  for (const auto& child : children) {
    const auto kind = queue_kind(child);
    if (!kind || family_of(*kind) != family) continue;
    keyed.emplace_back(unwrapped_sequence(*sequence_after(child, queue_marker(*kind))), &child);
  }
  std::sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : *a.second < *b.second;
  });
  std::vector<std::string> sorted;
  sorted.reserve(keyed.size());
  for (const auto& [sequence, name] : keyed) sorted.push_back(*name);
  return sorted;
}

std::optional<std::string> wrapped_sequence_node(const std::vector<std::string>& children,
                                                 QueueFamily family) {
  std::optional<std::string> first;
  for (const auto& child : children) {
    const auto kind = queue_kind(child);
    if (!kind || family_of(*kind) != family) continue;
    if (*sequence_after(child, queue_marker(*kind)) < 0 && (!first || child < *first))
      first = child;
  }
  return first;
}

std::optional<std::string> find_protected_node(const std::vector<std::string>& children,
                                               std::string_view guid, QueueKind kind) {
  const std::string prefix = protected_prefix(guid, kind);
  for (const auto& child : children) {
    if (child.starts_with(prefix) && queue_kind(child) == kind) return child;
  }
  return std::nullopt;
}

QueuePosition queue_position(const std::vector<std::string>& sorted_nodes,
                             std::string_view our_node, QueueKind kind,
                             std::string_view exclusive) {
  QueuePosition position;
  const auto ours = std::find(sorted_nodes.begin(), sorted_nodes.end(), our_node);
  if (ours == sorted_nodes.end()) return position;
  position.found = true;
  if (kind != QueueKind::read) {
    position.lower.assign(sorted_nodes.begin(), ours);
  } else {
    bool exclusive_listed = false;
    for (auto it = sorted_nodes.begin(); it != ours; ++it) {
      if (!exclusive.empty() && *it == exclusive) exclusive_listed = true;
      else if (queue_kind(*it) == QueueKind::write) position.lower.push_back(*it);
    }
    if (exclusive_listed) {
      position.ahead_of_writers = !position.lower.empty();
      position.lower.clear();
    }
  }
  position.holds = position.lower.empty();
  return position;
}

std::string ForeignLockNodes::description() const {
  std::string text;
  const auto nodes_text = [&] {
    std::string t = "node " + nodes.front();
    if (nodes.size() > 1) t += " and " + std::to_string(nodes.size() - 1) + " more";
    return t;
  };
  switch (protocol) {
    case ForeignProtocol::curator_semaphore:
      text =
          "a semaphore, InterProcessSemaphoreV2/SemaphoreMutex of Curator or zkrecipes' Curator "
          "layout (children ";
      for (std::size_t i = 0; i < nodes.size(); ++i) text += (i ? ", " : "") + nodes[i] + "/";
      return text + ")";
    case ForeignProtocol::read_write_lock:
      return "a read/write lock, InterProcessReadWriteLock of Curator or zkrecipes (" +
             nodes_text() + ")";
    case ForeignProtocol::mutex:
      return "a mutex, InterProcessMutex of Curator or zkrecipes or zkrecipes' "
             "InterProcessSemaphoreMutex (" +
             nodes_text() + ")";
  }
  return "an unknown lock protocol";
}

std::optional<ForeignLockNodes> find_foreign_lock_nodes(const std::vector<std::string>& children,
                                                        QueueFamily asking) {
  // Either child alone is the semaphore's: "locks" appears first (its
  // internal mutex), and "leases" may outlive it.
  bool locks = false, leases = false;
  ForeignLockNodes mutex_queue{ForeignProtocol::mutex, {}};
  ForeignLockNodes read_write_queue{ForeignProtocol::read_write_lock, {}};
  for (const auto& child : children) {
    locks = locks || child == kCuratorSemaphoreLocks;
    leases = leases || child == kCuratorSemaphoreLeases;
    if (const auto kind = queue_kind(child)) {
      auto& queue = family_of(*kind) == QueueFamily::mutex ? mutex_queue : read_write_queue;
      if (family_of(*kind) != asking) queue.nodes.push_back(child);
    }
  }
  if ((locks || leases) && asking != QueueFamily::semaphore) {
    ForeignLockNodes semaphore{ForeignProtocol::curator_semaphore, {}};
    if (locks) semaphore.nodes.emplace_back(kCuratorSemaphoreLocks);
    if (leases) semaphore.nodes.emplace_back(kCuratorSemaphoreLeases);
    return semaphore;
  }
  for (auto* queue : {&mutex_queue, &read_write_queue}) {
    if (queue->nodes.empty()) continue;
    std::sort(queue->nodes.begin(), queue->nodes.end());
    return std::move(*queue);
  }
  return std::nullopt;
}

}  // namespace zkr::detail
