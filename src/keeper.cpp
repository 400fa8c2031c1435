// The blocking forms of Keeper, written once over the asynchronous core.
#include "zkr/keeper.hpp"

#include <memory>
#include <string>
#include <utility>

#include "zkr/path.hpp"

namespace zkr {
namespace {

using std::chrono::milliseconds;

MultiResult await_multi(std::future<MultiResult> future, milliseconds timeout) {
  if (future.wait_until(zkr::deadline_after(timeout)) != std::future_status::ready) {
    MultiResult timed_out;
    timed_out.error = Errc::operation_timeout;
    return timed_out;
  }
  return future.get();
}

const std::string& op_path(const Op& op) {
  return std::visit([](const auto& o) -> const std::string& { return o.path; }, op);
}

milliseconds resolve(const Keeper& keeper, OptionalTimeout timeout) {
  return timeout ? *timeout : keeper.default_timeout();
}

// A handler that fulfils a promise, and the promise's future.
template <class T>
std::pair<ReplyHandler<T>, std::future<T>> promised() {
  auto promise = std::make_shared<std::promise<T>>();
  auto future = promise->get_future();
  return {[promise = std::move(promise)](T reply) { promise->set_value(std::move(reply)); },
          std::move(future)};
}

}  // namespace

std::future<Result<Created>> Keeper::async_create(std::string path, std::string data,
                                                  CreateMode mode, CreateOptions options) {
  auto [handler, future] = promised<Result<Created>>();
  send_create(std::move(path), std::move(data), mode, std::move(options), std::move(handler));
  return std::move(future);
}

std::future<Result<Empty>> Keeper::async_remove(std::string path, Version version) {
  auto [handler, future] = promised<Result<Empty>>();
  send_remove(std::move(path), version, std::move(handler));
  return std::move(future);
}

std::future<Result<Stat>> Keeper::async_exists(std::string path, Watcher watcher) {
  auto [handler, future] = promised<Result<Stat>>();
  send_exists(std::move(path), std::move(watcher), std::move(handler));
  return std::move(future);
}

std::future<Result<NodeData>> Keeper::async_get(std::string path, Watcher watcher) {
  auto [handler, future] = promised<Result<NodeData>>();
  send_get(std::move(path), std::move(watcher), std::move(handler));
  return std::move(future);
}

std::future<Result<Stat>> Keeper::async_set(std::string path, std::string data, Version version) {
  auto [handler, future] = promised<Result<Stat>>();
  send_set(std::move(path), std::move(data), version, std::move(handler));
  return std::move(future);
}

std::future<Result<Children>> Keeper::async_children(std::string path, Watcher watcher) {
  auto [handler, future] = promised<Result<Children>>();
  send_children(std::move(path), std::move(watcher), std::move(handler));
  return std::move(future);
}

std::future<MultiResult> Keeper::async_multi(std::vector<Op> ops) {
  auto [handler, future] = promised<MultiResult>();
  send_multi(std::move(ops), std::move(handler));
  return std::move(future);
}

std::future<Result<Empty>> Keeper::async_sync(std::string path) {
  auto [handler, future] = promised<Result<Empty>>();
  send_sync(std::move(path), std::move(handler));
  return std::move(future);
}

Created Keeper::create(const std::string& path, std::string data, CreateMode mode,
                       CreateOptions options, OptionalTimeout timeout) {
  return try_create(path, std::move(data), mode, std::move(options), timeout).value();
}

Result<Created> Keeper::try_create(const std::string& path, std::string data, CreateMode mode,
                                   CreateOptions options, OptionalTimeout timeout) {
  return await_reply(async_create(path, std::move(data), mode, std::move(options)),
                     resolve(*this, timeout), path);
}

void Keeper::remove(const std::string& path, Version version, OptionalTimeout timeout) {
  (void)try_remove(path, version, timeout).value();
}

Result<Empty> Keeper::try_remove(const std::string& path, Version version,
                                 OptionalTimeout timeout) {
  return await_reply(async_remove(path, version), resolve(*this, timeout), path);
}

std::optional<Stat> Keeper::exists(const std::string& path, Watcher watcher,
                                   OptionalTimeout timeout) {
  auto result = await_reply(async_exists(path, std::move(watcher)), resolve(*this, timeout), path);
  if (result.error() == Errc::no_node) return std::nullopt;
  return std::move(result).value();
}

NodeData Keeper::get(const std::string& path, Watcher watcher, OptionalTimeout timeout) {
  return try_get(path, std::move(watcher), timeout).value();
}

Result<NodeData> Keeper::try_get(const std::string& path, Watcher watcher,
                                 OptionalTimeout timeout) {
  return await_reply(async_get(path, std::move(watcher)), resolve(*this, timeout), path);
}

Stat Keeper::set(const std::string& path, std::string data, Version version,
                 OptionalTimeout timeout) {
  return try_set(path, std::move(data), version, timeout).value();
}

Result<Stat> Keeper::try_set(const std::string& path, std::string data, Version version,
                             OptionalTimeout timeout) {
  return await_reply(async_set(path, std::move(data), version), resolve(*this, timeout), path);
}

Children Keeper::children(const std::string& path, Watcher watcher, OptionalTimeout timeout) {
  return try_children(path, std::move(watcher), timeout).value();
}

Result<Children> Keeper::try_children(const std::string& path, Watcher watcher,
                                      OptionalTimeout timeout) {
  return await_reply(async_children(path, std::move(watcher)), resolve(*this, timeout), path);
}

MultiResult Keeper::multi(std::vector<Op> ops, OptionalTimeout timeout) {
  std::vector<std::string> paths;
  paths.reserve(ops.size());
  for (const auto& op : ops) paths.push_back(op_path(op));
  MultiResult result = try_multi(std::move(ops), timeout);
  if (result.ok()) return result;
  const auto failed = result.failed_index();
  throw KeeperError(result.error, failed < paths.size() ? paths[failed] : std::string(),
                    "multi of " + std::to_string(paths.size()) + " operations failed" +
                        (failed < paths.size() ? " at operation " + std::to_string(failed) : ""));
}

MultiResult Keeper::try_multi(std::vector<Op> ops, OptionalTimeout timeout) {
  return await_multi(async_multi(std::move(ops)), resolve(*this, timeout));
}

void Keeper::sync(const std::string& path, OptionalTimeout timeout) {
  (void)await_reply(async_sync(path), resolve(*this, timeout), path).value();
}

void Keeper::create_parents(const std::string& path, CreateMode mode, OptionalTimeout timeout,
                            std::string_view data) {
  validate_path(path);
  // Send every ancestor's create back to back: one round trip however deep,
  // since the session answers them in order, parents first.
  std::vector<std::pair<std::string, std::future<Result<Created>>>> pending;
  for (std::size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    std::string ancestor = path.substr(0, slash);
    auto future = async_create(ancestor, std::string(data), mode);
    pending.emplace_back(std::move(ancestor), std::move(future));
  }
  for (auto& [ancestor, future] : pending) {
    auto result = await_reply(std::move(future), resolve(*this, timeout), ancestor);
    if (!result.ok() && result.error() != Errc::node_exists)
      throw KeeperError(result.error(), ancestor, "while creating the parents of " + path);
  }
}

}  // namespace zkr
