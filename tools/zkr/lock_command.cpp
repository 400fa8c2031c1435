// `zkr lock PATH [options] [--] CMD ARGS...`: flock(1) across machines.
//
// Four steps (grant_run.hpp has the first three, shared with `zkr elect`):
// queue for the lock with signals watched; run the command in a process
// group of its own, terminated if the lock is lost; check with the server
// that the lock is still ours, so that the command's own code is returned
// only if the lock was held throughout; release the lock (delete our node)
// whatever happened, including when the command could not be started.
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "args.hpp"
#include "connection.hpp"
#include "errors.hpp"
#include "exit_codes.hpp"
#include "grant_verb.hpp"
#include "status_file.hpp"
#include "verbs.hpp"
#include "zkr/lock.hpp"
#include "zkr/path.hpp"
#include "zkr/read_write_lock.hpp"
#include "zkr/semaphore.hpp"

namespace zkr::cli {
namespace {

std::vector<OptionSpec> lock_specs() {
  auto specs = connection_option_specs();
  const std::vector<OptionSpec> own{
      {"timeout", 't', true, "D",
       "give up if the lock is not ours within D of connecting (0: one try)"},
      {"kill-after", 'k', true, "D",
       "if the lock is lost: SIGKILL the command D after SIGTERM (default 10s)"},
      {"holder", 0, true, "TEXT",
       "who holds the lock, for `zkr ls` (default host=..;pid=..;thread=..)"},
      {"read", 0, false, "", "take PATH as a read/write lock, reading: shared with other readers"},
      {"write", 0, false, "", "take PATH as a read/write lock, writing: alone"},
      {"semaphore", 0, true, "N",
       "take one of N leases of a counting semaphore on PATH (Curator's layout)"},
      {"with-kazoo", 0, false, "",
       "queue with kazoo's (Python) locks on PATH, made to wait for ours (README)"},
      {"ignore-suspended", 0, false, "",
       "count the lock lost only when the session is, not when the link drops"},
      {"status-file", 0, true, "PATH",
       "write zkr's own outcome to PATH as one JSON line (see Exit status)"},
  };
  specs.insert(specs.begin(), own.begin(), own.end());
  return specs;
}

struct LockSettings {
  // The plain lock (a mutex), or one side of a read/write lock.
  enum class Kind { mutex, read, write, semaphore };
  Kind kind = Kind::mutex;
  std::int32_t leases = 0;  // Kind::semaphore: how many the semaphore has
  std::string path;
  CommandSettings run;
  LockOptions lock_options;
};

LockSettings lock_settings(const ParsedArgs& parsed) {
  LockSettings s;
  const auto& operands = parsed.operands();
  if (operands.empty()) throw UsageError("missing lock PATH and command");
  if (operands.size() < 2) throw UsageError("missing the command to run under the lock");
  s.path = operands[0];
  // The library checks the path too, but only once connected: a typo should
  // fail at once, even with no ensemble around.
  validate_path(s.path);
  if (s.path == "/") throw UsageError("a lock path cannot be the root \"/\"");
  s.run = command_settings(parsed);
  if (auto v = parsed.value("holder")) {
    check_label(*v, "--holder", "TEXT");
    s.lock_options.holder_id = *v;
  }
  if (parsed.has("ignore-suspended")) s.lock_options.suspended_policy = SuspendedPolicy::ignore;
  if (parsed.has("read") + parsed.has("write") + parsed.has("semaphore") > 1)
    throw UsageError(
        "--read, --write and --semaphore exclude each other: they are three kinds of lock");
  if (parsed.has("read")) s.kind = LockSettings::Kind::read;
  if (parsed.has("write")) s.kind = LockSettings::Kind::write;
  if (auto v = parsed.value("semaphore")) {
    s.kind = LockSettings::Kind::semaphore;
    s.leases = static_cast<std::int32_t>(parse_count(*v, "--semaphore", 1, 1'000'000));
  }
  if (parsed.has("with-kazoo")) {
    if (s.kind == LockSettings::Kind::semaphore)
      throw UsageError(
          "--with-kazoo and --semaphore exclude each other: kazoo's semaphore has "
          "another layout");
    s.lock_options.share_with_kazoo = true;
  }
  return s;
}

// The lock zkr holds for the command: a semaphore mutex (any thread may
// release it), one side of a read/write lock (only the thread that acquired
// it may), or a lease of a semaphore. Acquired and released on zkr's main
// thread.
class CommandLock final : public CommandGrant {
 public:
  CommandLock(Client& client, const LockSettings& settings)
      : path_(settings.path), timeout_(settings.run.timeout) {
    if (settings.kind == LockSettings::Kind::mutex) {
      mutex_.emplace(client, settings.path, settings.lock_options);
    } else if (settings.kind == LockSettings::Kind::semaphore) {
      semaphore_.emplace(client, settings.path, SemaphoreLimit::fixed(settings.leases),
                         settings.lock_options);
    } else {
      read_write_.emplace(client, settings.path, settings.lock_options);
      side_ = settings.kind == LockSettings::Kind::read ? &read_write_->read_lock()
                                                        : &read_write_->write_lock();
    }
  }
  // With no timeout: wait as long as it takes; 0: one try.
  bool acquire(std::stop_token stop) override {
    if (semaphore_) {
      auto leases =
          timeout_ ? semaphore_->try_acquire_for(1, *timeout_, stop) : semaphore_->acquire(1, stop);
      if (leases.empty()) return false;
      lease_.emplace(std::move(leases.front()));
      return true;
    }
    if (!timeout_) return side_ ? side_->acquire(stop) : mutex_->acquire(stop);
    return side_ ? side_->try_acquire_for(*timeout_, stop)
                 : mutex_->try_acquire_for(*timeout_, stop);
  }
  std::optional<Grant> grant() override {
    if (lease_) return lease_->grant();
    return side_ ? side_->grant() : mutex_->grant();
  }
  std::vector<std::string> granted(const Grant& grant, spdlog::logger& log, StatusFile*) override {
    log.info("holding {} as {} (fencing token {})", path_, grant.node_path(),
             grant.fencing_token());
    return {"ZKR_LOCK_PATH=" + path_, "ZKR_LOCK_NODE=" + grant.node_path(),
            "ZKR_FENCING_TOKEN=" + std::to_string(grant.fencing_token())};
  }
  void release() override {
    if (semaphore_) (void)(lease_ && lease_->release());
    else (void)(side_ ? side_->release() : mutex_->release());
  }

 private:
  const std::string path_;
  const std::optional<std::chrono::milliseconds> timeout_;
  std::optional<InterProcessSemaphoreV2> semaphore_;
  std::optional<SemaphoreLease> lease_;
  std::optional<NonReentrantMutex> mutex_;
  std::optional<InterProcessReadWriteLock> read_write_;
  InterProcessReadWriteLock::Side* side_ = nullptr;
};

}  // namespace

std::string lock_help() {
  return "Usage: zkr lock PATH [options] [--] CMD [ARGS...]\n"
         "\n"
         "Runs CMD while holding the ZooKeeper lock PATH, like flock(1) across machines.\n"
         "Waiters queue first come, first served, in one queue with every zkrecipes\n"
         "lock and Apache Curator InterProcessMutex on the same PATH. With --read or\n"
         "--write, PATH is a read/write lock instead (zkrecipes' and Curator's\n"
         "InterProcessReadWriteLock): readers share it, a writer holds it alone, one\n"
         "queue for both, first come, first served. With --semaphore N, PATH is a\n"
         "counting semaphore of N leases (zkrecipes' and Curator's\n"
         "InterProcessSemaphoreV2): up to N commands run at once. Options after\n"
         "CMD belong to CMD. CMD gets ZKR_LOCK_PATH, ZKR_LOCK_NODE and\n"
         "ZKR_FENCING_TOKEN (the lock node's czxid: larger for every later holder) in\n"
         "its environment, and no open file of zkr's but stdin, stdout and stderr.\n"
         "\n"
         "CMD runs in a process group of its own, and the lock is held until every\n"
         "process of that group has exited, background jobs included; then it is\n"
         "released (its node deleted), however CMD ended. If zkr dies, even of\n"
         "SIGKILL, the whole group is killed. A process that leaves the group (a\n"
         "daemon calling setsid) is on its own: neither waited for nor signalled.\n"
         "Outside the terminal's foreground group, CMD cannot read from the terminal\n"
         "(give it input from a file or pipe; if it tries, it stops, and zkr says\n"
         "so).\n"
         "\n"
         "CMD runs only while zkr can prove that it holds the lock: zkr reads its lock\n"
         "node every sixth of the session timeout, and a guard process stops CMD's\n"
         "group (SIGSTOP) once zkr has proved nothing for half of it (zkr stopped by\n"
         "SIGSTOP, or starved), before the session can expire and the lock pass on;\n"
         "the group goes on when zkr proves the lock again, and is killed if zkr stays\n"
         "silent for twice the session timeout. ^Z stops zkr and CMD's group; after\n"
         "fg or bg, CMD goes on once the lock is proved (if it was lost meanwhile: as\n"
         "below). A guard stopped along with zkr (SIGSTOP to both) stops nothing.\n"
         "\n"
         "If the lock is lost while the group runs (the session expired, the node was\n"
         "deleted, or the link to ZooKeeper dropped, unless --ignore-suspended), the\n"
         "group gets SIGTERM, then SIGKILL after --kill-after; SIGKILL at once if zkr\n"
         "was stopped past the point where its session may have expired. SIGINT,\n"
         "SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to zkr, by a process or\n"
         "the terminal, are passed on to the group.\n"
         "\n"
         "Options:\n" +
         format_options(lock_specs()) + "\n" + connection_help_footer() +
         "\n"
         "Exit status:\n"
         "  CMD's own      CMD ran, and the server confirmed after it ended that the\n"
         "                 lock was held throughout (128+S: CMD killed by signal S)\n"
         "  64             bad usage: options, PATH, durations, --holder\n"
         "  69             ZooKeeper unreachable within --connect-timeout, or the link failed\n"
         "  75             the lock was not acquired within --timeout\n"
         "  76             ZooKeeper refused an operation (e.g. no permission on PATH)\n"
         "  78             PATH is used by another lock protocol (Curator's\n"
         "                 NonReentrantMutex/SemaphoreV2, a read/write lock\n"
         "                 without --read/--write, a mutex with them; a\n"
         "                 semaphore's nodes with any but --semaphore; kazoo's\n"
         "                 locks without --with-kazoo; an unknown protocol),\n"
         "                 which would not exclude us: not queued, CMD not run\n"
         "  79             the lock was lost (or could not be confirmed) while CMD ran;\n"
         "                 its group was terminated\n"
         "  126, 127       CMD could not be run, or was not found\n"
         "  128+S          zkr got signal S while waiting for the lock\n"
         "A CMD that itself exits 64..79 or 126..255 cannot be told from zkr by the\n"
         "code alone. --status-file PATH tells them apart: zkr empties PATH when it\n"
         "starts and writes one JSON line as it ends, e.g.\n"
         "  {\"outcome\":\"held_throughout\",\"exit\":79,\"command_status\":79}\n"
         "outcome: held_throughout, lock_lost, timeout, command_not_run, interrupted\n"
         "or error; command_status (CMD's code, as a shell reports it) only if CMD ran\n"
         "and ended. An empty file means zkr itself was killed.\n"
         "\n"
         "Example:\n"
         "  zkr lock /app/locks/nightly --timeout 10s -- ./nightly-job.sh --full\n"
         "  zkr lock /app/locks/catalog --read -- ./export-catalog.sh\n"
         "  zkr lock /app/pools/gpu --semaphore 4 -- ./train.sh\n";
}

int lock_main(const std::vector<std::string>& args) {
  const auto plan = [](const ParsedArgs& parsed) {
    const auto settings = lock_settings(parsed);
    return plan_of<CommandLock>(settings.path, "lock " + settings.path, settings);
  };
  return run_grant_verb({.name = "lock", .specs = lock_specs(), .help = lock_help, .plan = plan},
                        args);
}

}  // namespace zkr::cli
