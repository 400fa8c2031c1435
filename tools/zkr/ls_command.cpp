// `zkr ls ROOT`: the locks under a root, one line each: holder, waiters, age;
// or, for ROOT a leader latch, its participants in order.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "args.hpp"
#include "connection.hpp"
#include "errors.hpp"
#include "exit_codes.hpp"
#include "root_walk.hpp"
#include "session_text.hpp"
#include "verbs.hpp"
#include "zkr/cleanup.hpp"
#include "zkr/path.hpp"

#include <nlohmann/json.hpp>

namespace zkr::cli {
namespace {

std::vector<OptionSpec> ls_specs() {
  return root_walk_specs(
      {{"json", 0, false, "", "one JSON object per lock and line, with the whole queue"}},
      ScanOptions{}.max_children);
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string holder_text(const LockNodeInfo& node) {
  std::string text = node.holder_id.empty() ? "-" : node.holder_id;
  // Nobody's session: nothing will ever delete it (zkr cleanup will).
  if (node.ephemeral_owner == 0) text = "(orphan) " + text;
  return text;
}

// One line of JSON per lock. Holder texts are anyone's bytes: invalid UTF-8
// is written as U+FFFD, so that every line parses.
std::string lock_json_line(const LockInfo& lock, std::int64_t now) {
  nlohmann::ordered_json line;
  line["path"] = lock.path;
  if (lock.key) line["key"] = *lock.key;
  const auto& holder = lock.queue.front();
  line["holder"] = holder.holder_id;
  line["node"] = join_path(lock.path, holder.name);
  line["fencing_token"] = holder.czxid;
  line["age_ms"] = std::max<std::int64_t>(0, now - holder.ctime_ms);
  line["kind"] = std::string(to_string(holder.kind));
  line["holders"] = lock.holders();
  line["waiters"] = lock.waiters();
  if (holder.kind == LockNodeKind::latch) {
    // A latch's participants as its own participants() reads them: in
    // queue order, the first leads; the epoch is the czxid its term has (a
    // participant standing by: will have).
    auto& participants = line["participants"] = nlohmann::ordered_json::array();
    for (const auto& n : lock.queue)
      if (n.kind == LockNodeKind::latch)
        participants.push_back(
            {{"id", n.holder_id}, {"leader", participants.empty()}, {"epoch", n.czxid}});
  }
  auto& queue = line["queue"] = nlohmann::ordered_json::array();
  for (const auto& n : lock.queue)
    queue.push_back({{"name", n.name},
                     {"kind", std::string(to_string(n.kind))},
                     {"holder", n.holder_id},
                     {"czxid", n.czxid},
                     {"ctime_ms", n.ctime_ms},
                     {"session", session_hex(n.ephemeral_owner)}});
  return line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

void print_rows(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(rows.front().size(), 0);
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    line += '\n';
    std::fputs(line.c_str(), stdout);
  }
}

// `zkr ls` of a latch itself: its participants in queue order, the leader
// first and marked, with each one's epoch and how long it has taken part.
void print_participants(const LockInfo& latch, std::int64_t now) {
  std::vector<std::vector<std::string>> rows{{"", "PARTICIPANT", "EPOCH", "AGE"}};
  for (const auto& n : latch.queue) {
    if (n.kind != LockNodeKind::latch) continue;
    rows.push_back({rows.size() == 1 ? "*" : "", holder_text(n), std::to_string(n.czxid),
                    format_duration(std::chrono::milliseconds(now - n.ctime_ms))});
  }
  print_rows(rows);
}

void print_table(const std::vector<LockInfo>& locks, std::int64_t now) {
  std::vector<std::vector<std::string>> rows{{"LOCK", "HOLDER", "WAITERS", "AGE"}};
  for (const auto& lock : locks) {
    const auto& holder = lock.queue.front();
    // A read/write lock says which side holds: "write: <holder>", or
    // "read: <first reader> (+N readers)" when readers share it.
    std::string holder_column = holder_text(holder);
    if (holder.kind == LockNodeKind::latch) holder_column = "leader: " + holder_column;
    else if (holder.kind != LockNodeKind::mutex)
      holder_column = std::string(to_string(holder.kind)) + ": " + holder_column;
    if (lock.holders() > 1)
      holder_column += " (+" + std::to_string(lock.holders() - 1) +
                       (holder.kind == LockNodeKind::lease ? " leases)" : " readers)");
    rows.push_back({lock.path, holder_column, std::to_string(lock.waiters()),
                    format_duration(std::chrono::milliseconds(now - holder.ctime_ms))});
  }
  print_rows(rows);
}

}  // namespace

std::string ls_help() {
  return "Usage: zkr ls ROOT [options]\n"
         "\n"
         "Lists the locks under ROOT (ROOT itself included, down to --max-depth\n"
         "levels): for each lock directory with a holder, its holder (what the\n"
         "holder wrote in its node: host, pid, thread, or --holder of zkr lock), the\n"
         "number of waiters queued behind it, and how long it has been held (from\n"
         "the holder node's creation time, on the server's clock). A node marked\n"
         "(orphan) belongs to no session and blocks its lock until `zkr cleanup`.\n"
         "A read/write lock's holder reads \"read: ...\" or \"write: ...\"; readers\n"
         "sharing it are counted as \"(+N readers)\", not as waiters. A semaphore shows\n"
         "as its leases/ directory, \"lease: ... (+N leases)\", and its internal\n"
         "mutex (held by the contender waiting for a lease) as a lock at PATH/locks.\n"
         "A leader latch (zkr elect, LeaderLatch) reads \"leader: ...\", with the\n"
         "participants standing by as waiters; `zkr ls` of the latch itself lists\n"
         "its participants in order, the leader first and marked \"*\", with each\n"
         "one's epoch (ZKR_LEADER_EPOCH of its term) and age; --json gives a latch a\n"
         "\"participants\" array: id, leader, epoch.\n"
         "\n"
         "Before listing a directory zkr reads its child count, and refuses one with\n"
         "more than --max-children rather than pull a reply of unbounded size.\n"
         "\n"
         "Options:\n" +
         format_options(ls_specs()) + "\n" + connection_help_footer() +
         "\n"
         "Exit status: 0 listed (even if nothing), 64 bad usage, 65 a directory has\n"
         "more children than --max-children, 66 ROOT does not exist, 69 ZooKeeper\n"
         "unreachable, 76 ZooKeeper refused (e.g. no permission).\n"
         "\n"
         "Example:\n"
         "  zkr ls /app/locks\n"
         "  zkr ls /app/locks --json | jq 'select(.waiters > 10)'\n";
}

int ls_main(const std::vector<std::string>& args) {
  return run_reporting_errors("ls", [&]() -> int {
    const auto walk_args = parse_root_walk_args("ls", args, ls_specs(), ls_help);
    if (!walk_args) return exit_code::ok;
    const auto& [parsed, root] = *walk_args;
    ScanOptions options;
    read_walk_limits(parsed, options);
    RootWalk walk(parsed);
    std::vector<LockInfo> locks;
    if (!walk.run(root, options.on_progress, [&] {
          // Directories named like lock nodes (a key such as
          // "job-lock-0000000042") are told apart by the library.
          scan_locks(walk.client(), root, options,
                     [&](const LockInfo& lock) { locks.push_back(lock); });
        }))
      return exit_code::no_such_root;
    std::sort(locks.begin(), locks.end(),
              [](const LockInfo& a, const LockInfo& b) { return a.path < b.path; });
    const auto now = now_ms();
    if (parsed.has("json")) {
      for (const auto& lock : locks) std::fputs(lock_json_line(lock, now).c_str(), stdout);
    } else if (locks.empty()) {
      print_error("no locks under " + root);
    } else if (locks.size() == 1 && locks.front().path == root &&
               locks.front().queue.front().kind == LockNodeKind::latch) {
      print_participants(locks.front(), now);
    } else {
      print_table(locks, now);
    }
    return exit_code::ok;
  });
}

}  // namespace zkr::cli
