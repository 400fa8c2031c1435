// The pure logic of the lock queue: names, order, and "do we hold it, and if
// not, whom do we wait for" as a function of the directory's children. No I/O,
// so every rule here is tested without a server.
//
// Names follow Apache Curator's protected lock nodes, `_c_<guid>-lock-<seq>`
// (and its read/write lock's `_c_<guid>-__READ__<seq>`, `..__WRIT__<seq>`),
// and order by the sequence after the last marker, as Curator's drivers do,
// so both libraries agree on who is first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zkr::detail {

inline constexpr std::string_view kLockName = "lock-";
inline constexpr std::string_view kProtectedPrefix = "_c_";
inline constexpr std::string_view kCuratorReadName = "__READ__";
inline constexpr std::string_view kCuratorWriteName = "__WRIT__";
// Curator's LeaderLatch: `_c_<guid>-latch-<seq>`, ordered as the mutex queue.
inline constexpr std::string_view kLatchName = "latch-";

// The kind of node a contender queues with. Three queues exist: the mutex
// queue ("lock-" nodes: our mutexes, Curator's InterProcessMutex), Curator's
// read/write queue (readers and writers in one order) and the leader latch's
// ("latch-" nodes: ours and Curator's LeaderLatch). A directory holds one.
enum class QueueKind { mutex, read, write, latch };
// semaphore: no queue of its own under the lock path (its nodes are in
// "locks" and "leases"); it asks only which protocols are foreign to it.
enum class QueueFamily { mutex, read_write, semaphore, latch };
constexpr QueueFamily family_of(QueueKind kind) {
  switch (kind) {
    case QueueKind::mutex: return QueueFamily::mutex;
    case QueueKind::latch: return QueueFamily::latch;
    default: return QueueFamily::read_write;
  }
}
// "lock-", "__READ__", "__WRIT__" or "latch-": what the server appends the sequence to.
std::string_view queue_marker(QueueKind kind);

// A fresh random GUID, "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx".
std::string new_guid();
inline constexpr std::size_t kGuidLength = 36;

// "_c_<guid>-<marker>": the name our create sends; the server appends the sequence.
std::string protected_prefix(std::string_view guid, QueueKind kind);
inline std::string protected_lock_prefix(std::string_view guid) {
  return protected_prefix(guid, QueueKind::mutex);
}

// The sequence of a lock node name: the 10 digits after the last "lock-"
// (ZooKeeper prints a negative number once a parent's counter overflows).
// nullopt for anything else: those children are not lock nodes and are ignored.
std::optional<std::int64_t> lock_sequence(std::string_view name);

// The kind of a queue node of any queue, by its name ("..lock-<seq>",
// "..__READ__<seq>", "..__WRIT__<seq>", "..latch-<seq>"); nullopt for any
// other name.
std::optional<QueueKind> queue_kind(std::string_view name);
// A node of a queue of either family: what lock scans and guarded_write treat
// as a lock node.
inline bool is_queue_node(std::string_view name) { return queue_kind(name).has_value(); }

// A semaphore's lease node ("..lease-<seq>", in its leases/ directory).
inline constexpr std::string_view kLeaseName = "lease-";
bool is_lease_node(std::string_view name);
// What lock scans show and guarded_write will not create: a queue node or a lease.
inline bool is_lock_node(std::string_view name) {
  return is_queue_node(name) || is_lease_node(name);
}

// ---- kazoo (Python) on our paths.
//
// kazoo 2.8's Lock and WriteLock name their nodes `<uuid4 hex>__lock__<seq>`,
// its ReadLock `<uuid4 hex>__rlock__<seq>`; each sees as contenders only the
// names its patterns match (`(?:patterns)(-?\d{10})$`: "__lock__" for Lock
// and ReadLock, "__lock__" and "__rlock__" for WriteLock, plus the
// extra_lock_patterns it was made with), sorted by the matched sequence text.
// Its Semaphore at a path P keeps one `<uuid4 hex>` child per lease (no
// sequence) under P, and its internal Lock at the sibling "P-__lock__".
inline constexpr std::string_view kKazooLockName = "__lock__";
inline constexpr std::string_view kKazooReadName = "__rlock__";
enum class KazooKind { lock, read };
// kazoo's kind of a lock node, by the sequence after its last marker.
std::optional<KazooKind> kazoo_kind(std::string_view name);
// A kazoo Semaphore's lease node: exactly 32 lowercase hex digits.
bool is_kazoo_lease_node(std::string_view name);

// Whose nodes other than ours and Curator's join our queue: set only when
// the other side is known to wait for ours (kazoo made with
// extra_lock_patterns), which cannot be told from its nodes.
struct QueuePeers {
  bool kazoo = false;
};

// The kind a node of the shared queue stands as: ours and Curator's by their
// marker; with peers.kazoo, kazoo's "__lock__" as a writer and "__rlock__" as
// a reader of a read/write lock, and both as contenders of a mutex.
std::optional<QueueKind> contender_kind(std::string_view name, QueueFamily family,
                                        QueuePeers peers = {});

// The nodes of one queue family among children, in the order their
// sequences were issued (other children are dropped: unlike Curator, which
// sorts them in by their whole name and can be blocked by one whose name
// sorts first). Until a parent's counter passes 2^31 - 1 that is Curator's
// and kazoo's order, the text after the last marker. Past it ZooKeeper
// writes negative numbers ("-2147483648" follows "2147483647"): text order
// then puts newer nodes before older ones, even among the negatives; this
// order stays right until the counter comes back to 0, 2^32 numbers later.
// With peers.kazoo, kazoo's nodes are sorted in by their sequence too.
std::vector<std::string> sorted_queue_nodes(const std::vector<std::string>& children,
                                            QueueFamily family, QueuePeers peers = {});
// A sequence as a position in the order of issue: a negative one (given
// after the counter passed 2^31 - 1) plus 2^32.
std::int64_t unwrapped_sequence(std::int64_t sequence);
// The first (by name) contender of the family among children whose sequence
// is negative: the directory's counter has wrapped, and a Curator or kazoo
// peer on the path orders its queue differently from the truth. nullopt if none.
std::optional<std::string> wrapped_sequence_node(const std::vector<std::string>& children,
                                                 QueueFamily family, QueuePeers peers = {});
inline std::vector<std::string> sorted_lock_nodes(const std::vector<std::string>& children) {
  return sorted_queue_nodes(children, QueueFamily::mutex);
}

// The child created by the attempt with this guid and kind, if any.
std::optional<std::string> find_protected_node(const std::vector<std::string>& children,
                                               std::string_view guid,
                                               QueueKind kind = QueueKind::mutex);

// Where our node stands in the sorted queue, and which nodes keep us waiting:
//   mutex, write  every node before ours (we hold once none is left);
//   read          every writer before ours: readers share (Curator's rule).
// A reader whose thread holds the write lock passes that write node as
// `exclusive`: while it is listed, nobody else holds or can be granted
// anything, so the read is granted at once (a downgrade).
struct QueuePosition {
  bool found = false;              // our node is among the children
  bool holds = false;              // nothing keeps us waiting: we hold the lock
  std::vector<std::string> lower;  // the nodes before ours that keep us waiting, in queue order
  // A read granted through `exclusive` while other writers queue between it
  // and ours: they wait for `exclusive`, and would be granted beside our read
  // once it went. So it must stay until the read is released.
  bool ahead_of_writers = false;
};
QueuePosition queue_position(const std::vector<std::string>& sorted_nodes,
                             std::string_view our_node, QueueKind kind = QueueKind::mutex,
                             std::string_view exclusive = {});

// ---- No silent mix: other lock protocols' nodes on our path.
//
// Our queue sees only lock nodes, and Curator's other lock recipes keep their
// nodes where it does not look; each side would grant as if the other were
// not there. What they leave directly under the lock path (read from the
// Curator 5.4.0 jar with javap, checked live by CuratorMixTest in
// tests/integration/curator_interop_test.cpp):
//   InterProcessSemaphoreV2, and InterProcessSemaphoreMutex (a V2 of one
//     lease): the children "locks" (its internal InterProcessMutex) and
//     "leases" (lease nodes `_c_<guid>-lease-<seq>`, counted for the grant);
//   InterProcessReadWriteLock: `_c_<guid>-__READ__<seq>` and
//     `_c_<guid>-__WRIT__<seq>` nodes (its sort puts ours after all of them);
//   LeaderLatch: `_c_<guid>-latch-<seq>` nodes (a latch sorts a lock's nodes
//     by the text after "latch-", which they lack, and a lock ignores its).
// Names that say nothing about a protocol (an operator's note, our probe and
// layout record, "lock-" without a sequence) are not foreign locks: they stay
// ignored, as before.
// Cannot be told from ours: Curator's deprecated InterProcessSemaphore (v1)
// uses our very names and queue (and grants the first N).
// Which protocols are foreign depends on the queue asking: a read/write lock
// finds the mutex queue's "lock-" nodes foreign (Curator's InterProcessMutex
// and ours alike), and a mutex the read/write nodes.
// kazoo's locks are foreign unless peers.kazoo says they wait for ours; its
// semaphore always is. Any other child whose name ends in a sequence number
// (one the server appended: ten digits, or a minus sign and digits) is a
// contender of a protocol we do not know, and refused alike; our own
// children that may end in digits (the removal probe) are not.
enum class ForeignProtocol {
  curator_semaphore,
  read_write_lock,
  mutex,
  kazoo_lock,
  kazoo_semaphore,
  unknown_sequential,
  leader_latch
};

inline constexpr std::string_view kCuratorSemaphoreLocks = "locks";
inline constexpr std::string_view kCuratorSemaphoreLeases = "leases";

struct ForeignLockNodes {
  ForeignProtocol protocol;
  std::vector<std::string> nodes;  // the children that give it away ("locks" first; by name)
  // E.g. "Curator InterProcessReadWriteLock (node _c_...-__WRIT__0000000003)".
  std::string description() const;
  // How to share the path safely, for the protocols where one can; else empty.
  std::string advice(QueueFamily asking) const;
};

// "; " and the advice, or nothing: what a refusal's message ends with.
inline std::string with_advice(const ForeignLockNodes& found, QueueFamily asking) {
  const auto advice = found.advice(asking);
  return advice.empty() ? advice : "; " + advice;
}

// True for a name that ends in a sequence number the server appended.
bool has_sequence_suffix(std::string_view name);

// The first protocol foreign to `asking` found among a lock directory's
// children, if any.
std::optional<ForeignLockNodes> find_foreign_lock_nodes(const std::vector<std::string>& children,
                                                        QueueFamily asking = QueueFamily::mutex,
                                                        QueuePeers peers = {});

}  // namespace zkr::detail
