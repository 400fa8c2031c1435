#include "lock_tree.hpp"

#include <algorithm>
#include <future>
#include <variant>

#include "lock_driver.hpp"
#include "zkr/path.hpp"

namespace zkr::detail {
namespace {

// Nothing here belongs to a session: a new one after an expiry will do.
constexpr RetryOptions kAnySession{.retry_session_expired = true};

// Every wait has a deadline: a reply that does not come within the session
// timeout counts as a lost link, which the retry loop handles.
template <class T>
Result<T> reply_in_time(std::future<Result<T>>& reply, const Keeper& keeper,
                        const std::string& path) {
  return await_reply(std::move(reply), keeper.default_timeout(), path);
}

// A directory this library made: persistent (no session owns it) and holding
// the mark. Lock nodes are ephemeral, whatever data a holder writes into them.
bool is_our_directory(const ChildEntry& entry) {
  return !entry.stat.is_ephemeral() && entry.data == kLockDirectoryMark;
}

}  // namespace

LockTree::LockTree(Client& client, WalkLimits limits,
                   std::function<void(const WalkProgress&)> on_progress)
    : client_(client), limits_(limits), on_progress_(std::move(on_progress)) {
  if (limits_.page_size == 0) throw std::invalid_argument("page_size must be at least 1");
}

void LockTree::for_each_page(const std::string& dir,
                             const std::function<void(std::vector<ChildEntry>&)>& on_page) {
  auto names = client_.with_retry(
      [&](Keeper& keeper) { return list_children(keeper, dir, limits_.max_children).names; },
      kAnySession);
  std::sort(names.begin(), names.end());  // a stable order for people and for tests
  ++progress_.directories;
  for (std::size_t begin = 0; begin < names.size(); begin += limits_.page_size) {
    const auto end = std::min(names.size(), begin + limits_.page_size);
    const std::vector<std::string> page_names(names.begin() + static_cast<std::ptrdiff_t>(begin),
                                              names.begin() + static_cast<std::ptrdiff_t>(end));
    auto page = look_at(dir, page_names);
    progress_.nodes += page_names.size();
    on_page(page);
    if (on_progress_) on_progress_(progress_);
  }
}

std::vector<ChildEntry> LockTree::look_at(const std::string& dir,
                                          const std::vector<std::string>& names) {
  // Reads are safe to repeat, so a page that meets a lost connection is simply
  // asked again, whole.
  return client_.with_retry(
      [&](Keeper& keeper) {
        using Reply = std::variant<std::future<Result<NodeData>>, std::future<Result<Stat>>>;
        std::vector<Reply> replies;
        replies.reserve(names.size());
        for (const auto& name : names) {
          const auto path = join_path(dir, name);
          if (is_lock_node(name)) replies.emplace_back(keeper.async_get(path));
          else replies.emplace_back(keeper.async_exists(path));
        }
        std::vector<ChildEntry> page;
        page.reserve(names.size());
        for (std::size_t i = 0; i < names.size(); ++i) {
          const auto path = join_path(dir, names[i]);
          ChildEntry entry;
          entry.name = names[i];
          Errc error = Errc::ok;
          if (auto* get = std::get_if<0>(&replies[i])) {
            auto reply = reply_in_time(*get, keeper, path);
            error = reply.error();
            if (reply.ok()) {
              entry.stat = reply.value().stat;
              entry.data = std::move(reply).value().data;
              // Named like one, but a directory: a key such as
              // "job-lock-0000000042" (which encode_key leaves as it is) names
              // one. A lock node never has children, and no lock's node is
              // persistent with our mark: every directory we make is.
              entry.lock_node = entry.stat.num_children == 0 && !is_our_directory(entry);
            }
          } else {
            auto reply = reply_in_time(std::get<1>(replies[i]), keeper, path);
            error = reply.error();
            if (reply.ok()) entry.stat = reply.value();
          }
          if (error == Errc::no_node) continue;  // gone since the listing
          if (error == Errc::no_auth) {
            // Another identity's, and guarded: kept as it is, never looked into.
            entry.readable = false;
            page.push_back(std::move(entry));
            continue;
          }
          if (error != Errc::ok) throw KeeperError(error, path, "looking at a child");
          page.push_back(std::move(entry));
        }
        return page;
      },
      kAnySession);
}

std::vector<DirectoryRemoval> LockTree::remove_directories(const std::vector<std::string>& paths) {
  // Each try reads everything again, so a try cut short by a lost link is
  // simply made again.
  return client_.with_retry([&](Keeper& keeper) { return remove_lock_directories(keeper, paths); },
                            kAnySession);
}

std::vector<bool> LockTree::marked(const std::vector<std::string>& paths) {
  return client_.with_retry([&](Keeper& keeper) { return marked_lock_directories(keeper, paths); },
                            kAnySession);
}

}  // namespace zkr::detail
