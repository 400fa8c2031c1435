// src/background_remover.hpp (internal): deletes that must happen eventually.
//
// A lock released while the link is down, or a create whose reply was lost,
// leaves a node behind that still blocks everyone queued after it. Its owner
// cannot wait (unlock() and destructors return at once and never throw), so it
// hands the delete to this class, which keeps trying on its own thread: at
// once, after each reconnection, and after a pause when a request timed out
// on a live link. Each try deletes the node only if a read shows it ours
// (owned by the session, created by our create when its czxid is known:
// owned_delete.hpp); a node of that name that is not ours is left and
// logged. It stops trying when the node is gone or not ours, when the error says
// trying again is pointless (logged), or when the session the node belonged to
// has ended: the node was ephemeral, and the server deletes it with its session.
//
//   BackgroundRemover remover(current_session, 5s, logger);
//   remover.add("/locks/a/lock-0000000007", epoch, /*by_name_prefix=*/false, czxid);
//   remover.on_connected();  // from the Client, on connected and reconnected
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "zkr/keeper.hpp"
#include "zkr/path.hpp"

namespace zkr::detail {

class BackgroundRemover {
 public:
  // What the Client has now: its keeper, the epoch of that session, and
  // whether requests can be served.
  struct Session {
    std::shared_ptr<Keeper> keeper;
    std::uint64_t epoch = 0;
    bool connected = false;
  };
  using SessionSource = std::function<Session()>;

  // op_timeout bounds each request, and so how long stop() may wait.
  BackgroundRemover(SessionSource session, std::chrono::milliseconds op_timeout,
                    std::shared_ptr<spdlog::logger> log,
                    std::chrono::milliseconds retry_pause = std::chrono::seconds(1));
  ~BackgroundRemover();
  BackgroundRemover(const BackgroundRemover&) = delete;
  BackgroundRemover& operator=(const BackgroundRemover&) = delete;

  // Deletes `path`, or with by_name_prefix the child of parent_path(path)
  // whose name starts with node_name(path), as long as the session of
  // `epoch` lasts, and only while it is that session's node (and created at
  // `czxid`, unless 0: not known).
  void add(std::string path, std::uint64_t epoch, bool by_name_prefix,
           std::int64_t czxid = 0) noexcept;
  // The link is back: try everything pending now.
  void on_connected() noexcept;
  // Joins the thread; what is still pending is dropped (the session is about
  // to close, which deletes its ephemeral nodes). Idempotent.
  void stop() noexcept;

  // For tests: how many deletes are pending or in progress, and a wait for
  // none (true) or the timeout (false).
  std::size_t pending() const;
  bool wait_until_empty(std::chrono::milliseconds timeout) const;

 private:
  struct Item {
    std::string path;
    std::uint64_t epoch;
    bool by_name_prefix;
    std::int64_t czxid;
  };
  enum class Outcome { done, retry_later, give_up };

  void run();
  Outcome attempt(const std::shared_ptr<Keeper>& keeper, const Item& item) const;
  Outcome judge(Errc error, const Item& item) const;

  const SessionSource session_;
  const std::chrono::milliseconds op_timeout_;
  const std::shared_ptr<spdlog::logger> log_;
  const std::chrono::milliseconds retry_pause_;

  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;  // wakes run(), and wait_until_empty()
  std::vector<Item> items_;             // guarded by mutex_
  std::size_t in_flight_ = 0;           // guarded by mutex_: taken by run(), not yet settled
  bool wake_ = false;                   // guarded by mutex_: something new to try
  std::optional<std::chrono::steady_clock::time_point> retry_at_;  // guarded by mutex_
  bool stopping_ = false;                                          // guarded by mutex_
  std::thread thread_;  // last: starts once the rest exists
};

}  // namespace zkr::detail
