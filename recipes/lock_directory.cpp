#include "lock_directory.hpp"

#include <future>
#include <optional>

#include "lock_driver.hpp"
#include "zkr/error.hpp"
#include "zkr/path.hpp"

namespace zkr::detail {
namespace {

template <class T>
T reply_or_throw(std::future<T>& reply, const Keeper& keeper, const std::string& path) {
  if (reply.wait_for(keeper.default_timeout()) != std::future_status::ready)
    throw KeeperError(Errc::operation_timeout, path, "removing a lock directory");
  return reply.get();
}

void throw_unless(Errc error, std::initializer_list<Errc> expected, const std::string& path) {
  if (error == Errc::ok) return;
  for (const auto e : expected)
    if (error == e) return;
  throw KeeperError(error, path, "removing a lock directory");
}

bool reserved(const std::string& path) {
  return path == "/" || path == "/zookeeper" || path.starts_with("/zookeeper/");
}

}  // namespace

std::vector<DirectoryRemoval> remove_lock_directories(Keeper& keeper,
                                                      const std::vector<std::string>& paths) {
  const auto n = paths.size();
  std::vector<DirectoryRemoval> outcome(n, DirectoryRemoval::not_ours);
  std::vector<bool> candidate(n, false);

  // 1. Read: only an empty node with our mark is worth a probe, so that no
  //    other application's node ever sees a child of ours appear.
  std::vector<std::optional<std::future<Result<NodeData>>>> reads(n);
  for (std::size_t i = 0; i < n; ++i)
    if (!reserved(paths[i])) reads[i] = keeper.async_get(paths[i]);
  for (std::size_t i = 0; i < n; ++i) {
    if (!reads[i]) continue;
    const auto read = reply_or_throw(*reads[i], keeper, paths[i]);
    // no_auth: someone else's, guarded against us; not ours, whatever it is.
    throw_unless(read.error(), {Errc::no_node, Errc::no_auth}, paths[i]);
    if (read.error() == Errc::no_auth) outcome[i] = DirectoryRemoval::not_ours;
    else if (!read.ok()) outcome[i] = DirectoryRemoval::gone;
    else if (!is_marked(read.value()) || read.value().stat.is_ephemeral())
      outcome[i] = DirectoryRemoval::not_ours;
    else if (read.value().stat.num_children > 0) outcome[i] = DirectoryRemoval::in_use;
    else candidate[i] = true;
  }

  // 2. Pin each candidate with a probe child, then read it again: the node
  //    read now is the one the probe is in, and stays so while it is there.
  std::vector<std::string> probes(n);
  std::vector<std::optional<std::future<Result<Created>>>> pinned(n);
  std::vector<std::optional<std::future<Result<NodeData>>>> rereads(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (!candidate[i]) continue;
    probes[i] = join_path(paths[i], std::string(kProbePrefix) + new_guid());
    pinned[i] = keeper.async_create(probes[i], {}, CreateMode::ephemeral);
    rereads[i] = keeper.async_get(paths[i]);
  }
  std::vector<std::optional<DirectoryProof>> proofs(n);
  std::vector<bool> has_probe(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    if (!candidate[i]) continue;
    const auto created = reply_or_throw(*pinned[i], keeper, probes[i]);
    const auto reread = reply_or_throw(*rereads[i], keeper, paths[i]);
    throw_unless(created.error(), {Errc::no_node}, probes[i]);
    throw_unless(reread.error(), {Errc::no_node}, paths[i]);
    has_probe[i] = created.ok();
    if (!created.ok()) outcome[i] = DirectoryRemoval::gone;
    else if (!reread.ok() || !is_marked(reread.value())) outcome[i] = DirectoryRemoval::not_ours;
    else if (reread.value().stat.num_children != 1) outcome[i] = DirectoryRemoval::in_use;
    else proofs[i] = DirectoryProof{reread.value().stat.czxid, reread.value().stat.version};
  }

  // 3. Probe and directory go together, or neither does.
  std::vector<std::optional<std::future<MultiResult>>> multis(n);
  std::vector<std::optional<std::future<Result<Empty>>>> unpins(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (proofs[i])
      multis[i] = keeper.async_multi(
          {op::Remove{probes[i], kAnyVersion}, op::Remove{paths[i], proofs[i]->version}});
    else if (has_probe[i]) unpins[i] = keeper.async_remove(probes[i]);
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (unpins[i])
      throw_unless(reply_or_throw(*unpins[i], keeper, probes[i]).error(), {Errc::no_node},
                   probes[i]);
    if (!multis[i]) continue;
    const auto result = reply_or_throw(*multis[i], keeper, paths[i]);
    if (result.ok()) {
      outcome[i] = DirectoryRemoval::removed;
      continue;
    }
    // Someone queued in it, or wrote to it, since the proof.
    throw_unless(result.error, {Errc::not_empty, Errc::bad_version, Errc::no_node}, paths[i]);
    outcome[i] = DirectoryRemoval::in_use;
    auto unpin = keeper.async_remove(probes[i]);
    throw_unless(reply_or_throw(unpin, keeper, probes[i]).error(), {Errc::no_node}, probes[i]);
  }
  return outcome;
}

std::vector<bool> marked_lock_directories(Keeper& keeper, const std::vector<std::string>& paths) {
  std::vector<std::optional<std::future<Result<NodeData>>>> reads(paths.size());
  for (std::size_t i = 0; i < paths.size(); ++i)
    if (!reserved(paths[i])) reads[i] = keeper.async_get(paths[i]);
  std::vector<bool> marked(paths.size(), false);
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (!reads[i]) continue;
    const auto read = reply_or_throw(*reads[i], keeper, paths[i]);
    throw_unless(read.error(), {Errc::no_node, Errc::no_auth}, paths[i]);
    marked[i] = read.ok() && is_marked(read.value()) && !read.value().stat.is_ephemeral();
  }
  return marked;
}

}  // namespace zkr::detail
