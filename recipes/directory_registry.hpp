// What one Client knows about its lock directories, shared by every lock of
// that Client: which exist (so that they are not created again), which are in
// use, and which to remove once idle. Also watches the replies of releases,
// which nobody waits for.
//
// Why: a create of a directory that exists, and a delete refused with
// not_empty, are writes too (the server logs an error transaction through the
// quorum). Creating the directory with every acquire and removing it with
// every release made an uncontended cycle four writes; knowing it exists
// makes it two (our node's create and delete).
//
// Knowledge comes only from replies: our create of a node in the directory
// succeeded, or our create of the directory did. A directory someone else
// removes meanwhile is found out by the next create in it (no_node), which is
// then sent again with the directory's create before it.
//
// Removal is lazy and batched: a directory goes once no acquire of this
// Client has used it for LockOptions::directory_grace, at once when the last
// lock object on it is destroyed, and at once when the Client closes. It is
// removed only with remove_lock_directories' proof (lock_directory.hpp): read
// it, pin it with a probe child, read again, delete probe and directory in
// one multi; so only an empty directory carrying our mark ever goes, and a
// directory someone queued in meanwhile stays.
//
// Threads: every public call may come from any thread. One thread of its own
// removes directories and looks at release replies; close() joins it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "client_service.hpp"
#include "zkr/client.hpp"
#include "zkr/keeper.hpp"

namespace spdlog {
class logger;
}

namespace zkr::detail {

class DirectoryRegistry : public ClientService,
                          public std::enable_shared_from_this<DirectoryRegistry> {
 public:
  // The Client's registry, shared by all its locks: made on first use,
  // closed when ~Client begins; it may outlive the Client.
  static std::shared_ptr<DirectoryRegistry> of(Client& client);

  using Clock = std::chrono::steady_clock;
  // What the Client has now (as BackgroundRemover::Session).
  struct Session {
    std::shared_ptr<Keeper> keeper;
    std::uint64_t epoch = 0;
    bool connected = false;
  };
  using SessionSource = std::function<Session()>;
  // Client::remove_in_background (czxid: of the node, 0 if not known).
  using BackgroundRemove =
      std::function<void(std::string path, std::uint64_t epoch, std::int64_t czxid)>;

  DirectoryRegistry(SessionSource session, BackgroundRemove remove_in_background,
                    std::shared_ptr<spdlog::logger> log);
  ~DirectoryRegistry();
  DirectoryRegistry(const DirectoryRegistry&) = delete;
  DirectoryRegistry& operator=(const DirectoryRegistry&) = delete;

  // One acquire's use of a directory, from before its first create to its
  // release or abandonment: a directory is never removed on our account
  // while one lasts. Destroying it ends the use (then the grace runs).
  class Use {
   public:
    Use(std::shared_ptr<DirectoryRegistry> registry, std::string dir, bool removable,
        std::chrono::milliseconds grace);
    ~Use();
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;

   private:
    const std::shared_ptr<DirectoryRegistry> registry_;
    const std::string dir_;
    const bool removable_;
    const std::chrono::milliseconds grace_;
  };

  // A lock object on `dir` exists: the directory is not removed "at once"
  // while one does (only after its grace). detach: the last one went, so an
  // unused directory goes now.
  void attach(const std::string& dir);
  void detach(const std::string& dir, bool removable);

  // True if a reply proved the directory exists and nothing since says it
  // may not (a removal of ours under way counts as "may not").
  bool known(const std::string& dir);
  // A reply proved it exists (our create of it, or of a node in it, succeeded).
  void proven(const std::string& dir);
  // A reply said it does not exist (our create in it got no_node).
  void missing(const std::string& dir);

  // A release sent this delete and did not wait: if its reply says the link
  // failed (or none comes within the session timeout), or that the node was
  // rewritten since its version was read (bad_version), the delete is handed
  // to the background remover, which reads the owner again. Never throws.
  void watch_release(std::string path, std::uint64_t epoch, std::int64_t czxid,
                     std::future<Result<Empty>> reply) noexcept;

  // The Client is closing, its session still serves: removes every unused
  // directory now (bounded by the session timeout per round trip), and stops.
  // Later calls change nothing. Idempotent.
  void close() noexcept override;

  // For tests: true once no removal is due by now or under way and no
  // release reply is awaited, false at the timeout.
  bool wait_idle(std::chrono::milliseconds timeout);
  // For tests: how many directories it remembers, and how many removals it
  // has scheduled: bounded by the lock objects alive and the directories
  // idle, never by the keys locked so far.
  std::size_t remembered();
  std::size_t scheduled();

 private:
  // Scheduled removals in time order, each naming its directory.
  using Timetable = std::multimap<Clock::time_point, std::string>;
  struct Entry {
    int objects = 0;        // lock objects on it
    int uses = 0;           // acquires in it (Use)
    bool known = false;     // a reply proved it exists
    bool removing = false;  // a removal of ours is under way
    bool removable = true;  // LockOptions::remove_directory_on_release, and not found foreign
    std::uint64_t generation = 0;            // +1 on each proof; a removal forgets only what it saw
    int in_use_retries = 0;                  // removals that found it in use since its last use
    std::optional<Timetable::iterator> due;  // its removal, in timetable_
  };
  struct PendingRelease {
    std::string path;
    std::uint64_t epoch;
    std::int64_t czxid;
    std::future<Result<Empty>> reply;
    Clock::time_point give_up_at;
  };

  void leave(const std::string& dir, bool removable, std::chrono::milliseconds grace);
  void schedule(const std::string& dir, Entry& entry, Clock::time_point at);  // under mutex_
  void unschedule(Entry& entry);                                              // under mutex_
  void forget_if_idle(const std::string& dir);                                // under mutex_
  void run();
  void settle(PendingRelease& pending, bool ready);
  std::vector<std::string> take_due(Clock::time_point now, std::size_t max);  // under mutex_
  void remove(const std::vector<std::string>& dirs);
  std::optional<Clock::time_point> next_due();  // under mutex_

  const SessionSource session_;
  const BackgroundRemove remove_in_background_;
  const std::shared_ptr<spdlog::logger> log_;

  std::mutex mutex_;
  std::condition_variable wake_;                    // new work, or close
  std::condition_variable idle_;                    // for wait_idle
  std::unordered_map<std::string, Entry> entries_;  // guarded by mutex_
  Timetable timetable_;                             // guarded by mutex_: one element per Entry::due

  std::deque<PendingRelease> releases_;  // guarded by mutex_
  bool busy_ = false;                    // guarded by mutex_: the thread works
  bool closed_ = false;                  // guarded by mutex_
  std::thread thread_;                   // last: starts once the rest exists
};

}  // namespace zkr::detail
