#include "owned_delete.hpp"

#include <future>

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

namespace zkr::detail {
namespace {

// A node rewritten between each read and delete this often is being fought
// over: give the link-level retry (the caller's) the next word.
constexpr int kMaxRereads = 3;

struct Chain : std::enable_shared_from_this<Chain> {
  std::weak_ptr<Keeper> keeper;
  std::string path;
  Ownership owner;
  std::shared_ptr<spdlog::logger> log;
  std::function<void(Result<Removal>)> on_done;
  int reads = 0;

  void finish(Result<Removal> outcome) noexcept {
    try {
      if (auto done = std::exchange(on_done, {})) done(std::move(outcome));
    } catch (...) {  // a handler must not throw; nothing could catch it on the event thread
    }
  }

  void read() {
    const auto k = keeper.lock();
    if (!k) return finish(Result<Removal>(Errc::closing, path));
    ++reads;
    k->async_exists(path, {}, [self = shared_from_this()](Result<Stat> stat) {
      self->on_stat(std::move(stat));
    });
  }

  void on_stat(Result<Stat> stat) {
    if (!stat.ok())
      return finish(stat.error() == Errc::no_node ? Result<Removal>(Removal::gone)
                                                  : Result<Removal>(stat.error(), path));
    if (const auto why = not_ours(stat.value(), owner)) {
      if (log) log->warn("{} is not ours ({}): left alone, not deleted", path, *why);
      return finish(Removal::not_ours);
    }
    const auto k = keeper.lock();
    if (!k) return finish(Result<Removal>(Errc::closing, path));
    k->async_remove(path, stat.value().version, [self = shared_from_this()](Result<Empty> r) {
      self->on_removed(std::move(r));
    });
  }

  void on_removed(Result<Empty> removed) {
    if (removed.ok()) return finish(Removal::deleted);
    if (removed.error() == Errc::no_node) return finish(Removal::gone);
    if (removed.error() == Errc::bad_version && reads < kMaxRereads) return read();
    finish(Result<Removal>(removed.error(), path));
  }
};

}  // namespace

std::optional<std::string> not_ours(const Stat& stat, const Ownership& owner) {
  if (owner.session_id == 0 && owner.czxid == 0)
    return std::string("a persistent node whose create we cannot prove ours");
  if (stat.ephemeral_owner != owner.session_id) {
    if (stat.ephemeral_owner == 0) return std::string("persistent, not a node of a session");
    if (owner.session_id == 0)
      return fmt::format("owned by session 0x{:x}, ours is persistent", stat.ephemeral_owner);
    return fmt::format("owned by session 0x{:x}, ours is 0x{:x}", stat.ephemeral_owner,
                       owner.session_id);
  }
  if (owner.czxid != 0 && stat.czxid != owner.czxid)
    return fmt::format("created at zxid 0x{:x}, ours at 0x{:x}", stat.czxid, owner.czxid);
  return std::nullopt;
}

void remove_if_ours(const std::shared_ptr<Keeper>& keeper, std::string path, Ownership owner,
                    std::shared_ptr<spdlog::logger> log,
                    std::function<void(Result<Removal>)> on_done) noexcept {
  std::shared_ptr<Chain> chain;
  try {
    chain = std::make_shared<Chain>();
    chain->keeper = keeper;
    chain->path = std::move(path);
    chain->owner = owner;
    chain->log = std::move(log);
    chain->on_done = std::move(on_done);
    chain->read();
  } catch (const std::exception& e) {  // allocation, a refused send
    if (chain) chain->finish(Result<Removal>(Errc::system_error, chain->path));
  }
}

Result<Removal> remove_if_ours_now(const std::shared_ptr<Keeper>& keeper, const std::string& path,
                                   Ownership owner, std::shared_ptr<spdlog::logger> log,
                                   std::chrono::milliseconds timeout) {
  const auto done = std::make_shared<std::promise<Result<Removal>>>();
  auto outcome = done->get_future();
  remove_if_ours(keeper, path, owner, std::move(log),
                 [done](Result<Removal> r) { done->set_value(std::move(r)); });
  return await_reply(std::move(outcome), timeout, path);
}

Result<Empty> as_delete_reply(const Result<Removal>& removal, const std::string& path) {
  if (!removal.ok()) return Result<Empty>(removal.error(), path);
  if (removal.value() == Removal::deleted) return Empty{};
  return Result<Empty>(Errc::no_node, path);
}

}  // namespace zkr::detail
