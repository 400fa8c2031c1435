#include "lock_driver.hpp"

#include <algorithm>
#include <charconv>
#include <random>

#include <boost/uuid/random_generator.hpp>
#include <boost/uuid/uuid_io.hpp>

#include "lock_directory.hpp"

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
    case QueueKind::latch: return kLatchName;
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

std::string_view kazoo_marker(KazooKind kind) {
  return kind == KazooKind::lock ? kKazooLockName : kKazooReadName;
}

// The sequence after the last marker of a contender of this family (ours,
// Curator's, or with peers.kazoo kazoo's), or nullopt for a name that is not one.
std::optional<std::int64_t> contender_sequence(std::string_view name, QueueFamily family,
                                               QueuePeers peers) {
  if (!contender_kind(name, family, peers)) return std::nullopt;
  const auto kind = queue_kind(name);
  return sequence_after(name, kind ? queue_marker(*kind) : kazoo_marker(*kazoo_kind(name)));
}

}  // namespace

std::optional<std::int64_t> lock_sequence(std::string_view name) {
  return sequence_after(name, kLockName);
}

bool is_lease_node(std::string_view name) { return sequence_after(name, kLeaseName).has_value(); }

std::optional<QueueKind> queue_kind(std::string_view name) {
  for (const auto kind : {QueueKind::mutex, QueueKind::read, QueueKind::write, QueueKind::latch})
    if (sequence_after(name, queue_marker(kind))) return kind;
  return std::nullopt;
}

std::optional<KazooKind> kazoo_kind(std::string_view name) {
  if (queue_kind(name)) return std::nullopt;  // ours or Curator's, whatever came before
  for (const auto kind : {KazooKind::lock, KazooKind::read})
    if (sequence_after(name, kazoo_marker(kind))) return kind;
  return std::nullopt;
}

bool is_kazoo_lease_node(std::string_view name) {
  return name.size() == 32 && std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::optional<QueueKind> contender_kind(std::string_view name, QueueFamily family,
                                        QueuePeers peers) {
  if (const auto kind = queue_kind(name)) return family_of(*kind) == family ? kind : std::nullopt;
  if (!peers.kazoo || family == QueueFamily::semaphore || family == QueueFamily::latch)
    return std::nullopt;
  const auto kazoo = kazoo_kind(name);
  if (!kazoo) return std::nullopt;
  if (family == QueueFamily::mutex) return QueueKind::mutex;
  return *kazoo == KazooKind::lock ? QueueKind::write : QueueKind::read;
}

bool has_sequence_suffix(std::string_view name) {
  // ZooKeeper appends the parent's counter as printf's "%010d": ten digits,
  // or a minus sign and nine or ten once the counter has overflowed.
  std::size_t digits = 0;
  while (digits < name.size() && name[name.size() - 1 - digits] >= '0' &&
         name[name.size() - 1 - digits] <= '9')
    ++digits;
  if (digits == 10) return true;
  return digits == 9 && name.size() > 9 && name[name.size() - 10] == '-';
}

std::int64_t unwrapped_sequence(std::int64_t sequence) {
  // The counter runs 0 .. 2^31 - 1, then -2^31 .. -1: a negative number was
  // given after every non-negative one, 2^32 later than its value says.
  return sequence < 0 ? sequence + (std::int64_t{1} << 32) : sequence;
}

std::vector<std::string> sorted_queue_nodes(const std::vector<std::string>& children,
                                            QueueFamily family, QueuePeers peers) {
  // By the counter's order of issue. For the zero-padded non-negative numbers
  // ZooKeeper writes until a parent's counter passes 2^31 - 1 this is
  // Curator's and kazoo's order (the text after the marker); past it theirs
  // is wrong, and a grant refuses to queue (wrapped_sequence_node) rather
  // than disagree with a peer.
  std::vector<std::pair<std::int64_t, const std::string*>> keyed;
  keyed.reserve(children.size());
  for (const auto& child : children)
    if (const auto sequence = contender_sequence(child, family, peers))
      keyed.emplace_back(unwrapped_sequence(*sequence), &child);
  std::sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : *a.second < *b.second;
  });
  std::vector<std::string> sorted;
  sorted.reserve(keyed.size());
  for (const auto& [sequence, name] : keyed) sorted.push_back(*name);
  return sorted;
}

std::optional<std::string> wrapped_sequence_node(const std::vector<std::string>& children,
                                                 QueueFamily family, QueuePeers peers) {
  std::optional<std::string> first;
  for (const auto& child : children) {
    const auto sequence = contender_sequence(child, family, peers);
    if (sequence && *sequence < 0 && (!first || child < *first)) first = child;
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

namespace {
// A writer of the read/write queue: ours, Curator's, or (only listed when
// shared) kazoo's "__lock__".
bool is_writer(std::string_view name) {
  return queue_kind(name) == QueueKind::write || kazoo_kind(name) == KazooKind::lock;
}
}  // namespace

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
      else if (is_writer(*it)) position.lower.push_back(*it);
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
             "NonReentrantMutex (" +
             nodes_text() + ")";
    case ForeignProtocol::kazoo_lock:
      return "a lock of kazoo (Python): Lock, WriteLock or ReadLock, or a kazoo Semaphore's "
             "internal Lock (" +
             nodes_text() + ")";
    case ForeignProtocol::kazoo_semaphore:
      return "a Semaphore of kazoo (Python) (lease " + nodes_text() + ")";
    case ForeignProtocol::leader_latch:
      return "a leader latch, LeaderLatch of Curator or zkrecipes (" + nodes_text() + ")";
    case ForeignProtocol::unknown_sequential:
      return "an unknown lock protocol, whose contenders' names end in a sequence number (" +
             nodes_text() + ")";
  }
  return "an unknown lock protocol";
}

std::string ForeignLockNodes::advice(QueueFamily asking) const {
  switch (protocol) {
    case ForeignProtocol::kazoo_lock:
      if (asking == QueueFamily::mutex)
        return "to share it, make every kazoo lock on it Lock(client, path, "
               "extra_lock_patterns=[\"-lock-\"]) and set LockOptions::share_with_kazoo "
               "(zkr lock --with-kazoo)";
      if (asking == QueueFamily::read_write)
        return "to share it, make kazoo's side WriteLock(client, path, "
               "extra_lock_patterns=[\"__READ__\", \"__WRIT__\"]) and ReadLock(client, path, "
               "extra_lock_patterns=[\"__WRIT__\"]), and set LockOptions::share_with_kazoo "
               "(zkr lock --read/--write --with-kazoo)";
      return "a semaphore cannot share its path with kazoo: use another path";
    case ForeignProtocol::kazoo_semaphore:
      return "kazoo's Semaphore cannot share a path with our locks: use another path";
    case ForeignProtocol::unknown_sequential:
      return "if that node is no lock's, give it a name that does not end in a sequence number, "
             "or use another lock path";
    default: return {};
  }
}

std::optional<ForeignLockNodes> find_foreign_lock_nodes(const std::vector<std::string>& children,
                                                        QueueFamily asking, QueuePeers peers) {
  // Either child alone is the semaphore's: "locks" appears first (its
  // internal mutex), and "leases" may outlive it.
  bool locks = false, leases = false;
  ForeignLockNodes mutex_queue{ForeignProtocol::mutex, {}};
  ForeignLockNodes read_write_queue{ForeignProtocol::read_write_lock, {}};
  ForeignLockNodes latch_queue{ForeignProtocol::leader_latch, {}};
  ForeignLockNodes kazoo_locks{ForeignProtocol::kazoo_lock, {}};
  ForeignLockNodes kazoo_leases{ForeignProtocol::kazoo_semaphore, {}};
  ForeignLockNodes unknown{ForeignProtocol::unknown_sequential, {}};
  for (const auto& child : children) {
    locks = locks || child == kCuratorSemaphoreLocks;
    leases = leases || child == kCuratorSemaphoreLeases;
    if (const auto kind = queue_kind(child)) {
      const auto family = family_of(*kind);
      auto& queue = family == QueueFamily::mutex   ? mutex_queue
                    : family == QueueFamily::latch ? latch_queue
                                                   : read_write_queue;
      if (family_of(*kind) != asking) queue.nodes.push_back(child);
    } else if (kazoo_kind(child)) {
      if (!contender_kind(child, asking, peers)) kazoo_locks.nodes.push_back(child);
    } else if (is_kazoo_lease_node(child)) {
      kazoo_leases.nodes.push_back(child);
    } else if (has_sequence_suffix(child) && !child.starts_with(kProbePrefix)) {
      unknown.nodes.push_back(child);
    }
  }
  if ((locks || leases) && asking != QueueFamily::semaphore) {
    ForeignLockNodes semaphore{ForeignProtocol::curator_semaphore, {}};
    if (locks) semaphore.nodes.emplace_back(kCuratorSemaphoreLocks);
    if (leases) semaphore.nodes.emplace_back(kCuratorSemaphoreLeases);
    return semaphore;
  }
  for (auto* queue :
       {&mutex_queue, &read_write_queue, &latch_queue, &kazoo_locks, &kazoo_leases, &unknown}) {
    if (queue->nodes.empty()) continue;
    std::sort(queue->nodes.begin(), queue->nodes.end());
    return std::move(*queue);
  }
  return std::nullopt;
}

}  // namespace zkr::detail
