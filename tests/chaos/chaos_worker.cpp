// zkr-chaos-worker: one client process of the chaos run (see README.md).
//
//   zkr-chaos-worker --connect HOSTS --root /chaos --keys k0,k1,k2 --slot 2 --gen 0
//                    --threads 2 --seed 7 --seconds 300 --session-timeout-ms 4000
//                    --log FILE --sessions FILE [--broken nolock|unguarded]
//                    [--rw-key rw0] [--semaphore-key sem0 --semaphore-limit 2]
//
// One Client (one session at a time) shared by THREADS threads. Each thread
// loops: pick a lock (InterProcessMutex or NonReentrantMutex on one
// key, made for this one acquire; or one of the worker's InterProcessMutex
// and NonReentrantMutex objects, one of each per key, which every
// thread of the process uses; or a MultiLock on two keys), acquire it with a
// random deadline, and in
// the critical section do one to three guarded writes: read each key's
// counter (a plain get), then in one guarded_write set counter+1 and the
// key's "token" node to the grant's fencing token. Everything is recorded in
// LOG (tests/chaos/event_log.hpp): the checker, not this program, judges it.
//
// With --rw-key, some acquires take the read or the write side of an
// InterProcessReadWriteLock on that key: a writer writes as a mutex holder
// does; a reader, who shares, writes nothing: it makes a guarded check of
// the counter (a guarded_write of a check alone), which must fail once its
// node is gone. With --semaphore-key, some take one lease of an
// InterProcessSemaphoreV2 with --semaphore-limit leases on that key: up to
// that many hold at once, so they write no counter, and make the guarded
// check only. Each kind has a key of its own: the library refuses to mix
// protocols on one path.
//
// A holder stops writing when its grant says lost, as a correct client does;
// but once per hold that ended in doubt (a loss, a refusal, an unknown
// outcome) it waits, bounded, until the hold is surely void (a new session,
// or the node deleted) and then makes one more "late" write on purpose:
// fencing must reject it. After a refused write (its lock node is gone) it
// waits, bounded, for its grant to say lost. Each grant's record names its
// lock nodes, which the checker finds in the servers' record.
//
// Holder texts (LockOptions::holder_id) are random: valid ones, adversarial
// content included ("held", "__REVOKE__", 1024 printable bytes), and, before
// one in four of the locks made per acquire, an invalid one (a newline or
// another control byte, or longer than 1024 bytes, up to 1 MiB): the lock's
// constructor must throw std::invalid_argument, and the worker records what
// it did ("holder" records), then makes the lock with a valid text.
//
// --broken makes the worker a deliberately broken lock user, for the test of
// the checker: `nolock` makes a lock node like any contender's and goes on
// without waiting for those before it; `unguarded` locks but writes without
// the grant check (and on after a loss).
//
// SIGTERM: each thread ends its current hold and stops. The process dies with
// its parent (PR_SET_PDEATHSIG), and stops itself after SECONDS in any case.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "checker.hpp"
#include "counter_participant.hpp"
#include "event_log.hpp"
#include "latch_participant.hpp"
#include "member_participant.hpp"
#include "zkr/client.hpp"
#include "zkr/lock.hpp"
#include "zkr/lock_factory.hpp"
#include "zkr/multi_lock.hpp"
#include "zkr/read_write_lock.hpp"
#include "zkr/semaphore.hpp"

namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using zkr::chaos::EventLog;
using zkr::chaos::monotonic_ns;

std::atomic<bool> stop_requested{false};
extern "C" void on_sigterm(int) { stop_requested.store(true); }

struct Config {
  std::string connect;
  std::string root = "/chaos";
  std::vector<std::string> keys;
  int slot = 0;
  int gen = 0;
  int threads = 2;
  std::uint64_t seed = 1;
  int seconds = 300;
  milliseconds session_timeout{4000};
  std::string log_path;
  std::string sessions_path;
  std::string broken = "none";
  std::string stderr_path;
  std::string rw_key;         // "" for no read/write lock
  std::string semaphore_key;  // "" for no semaphore
  int semaphore_limit = 2;
};

std::int64_t integer(const std::string& text, const std::string& name) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size())
    throw std::invalid_argument(name + " needs an integer, got '" + text + "'");
  return value;
}

Config parse(int argc, char** argv) {
  Config c;
  CLI::App app;
  app.set_help_flag();  // started by zkr-chaos only
  std::string keys, slot, gen, threads, seed, seconds, session_timeout, semaphore_limit;
  app.add_option("--connect", c.connect);
  app.add_option("--root", c.root);
  app.add_option("--keys", keys);
  app.add_option("--slot", slot);
  app.add_option("--gen", gen);
  app.add_option("--threads", threads);
  app.add_option("--seed", seed);
  app.add_option("--seconds", seconds);
  app.add_option("--session-timeout-ms", session_timeout);
  app.add_option("--log", c.log_path);
  app.add_option("--sessions", c.sessions_path);
  app.add_option("--broken", c.broken);
  app.add_option("--stderr", c.stderr_path);
  app.add_option("--rw-key", c.rw_key);
  app.add_option("--semaphore-key", c.semaphore_key);
  app.add_option("--semaphore-limit", semaphore_limit);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    throw std::invalid_argument(e.what());
  }
  for (std::size_t at = 0; at <= keys.size() && !keys.empty();) {
    const auto end = std::min(keys.find(',', at), keys.size());
    if (end > at) c.keys.push_back(keys.substr(at, end - at));
    at = end + 1;
  }
  const auto number = [&](const char* name, const std::string& text, int& into) {
    if (app.count(name) != 0) into = static_cast<int>(integer(text, name));
  };
  number("--slot", slot, c.slot);
  number("--gen", gen, c.gen);
  number("--threads", threads, c.threads);
  number("--seconds", seconds, c.seconds);
  number("--semaphore-limit", semaphore_limit, c.semaphore_limit);
  if (app.count("--seed") != 0) c.seed = static_cast<std::uint64_t>(integer(seed, "--seed"));
  if (app.count("--session-timeout-ms") != 0)
    c.session_timeout = milliseconds(integer(session_timeout, "--session-timeout-ms"));
  if (c.connect.empty() || c.keys.size() < 2 || c.log_path.empty() || c.sessions_path.empty() ||
      c.threads < 1)
    throw std::invalid_argument("--connect, --keys (two or more), --log, --sessions are required");
  if (c.broken != "none" && c.broken != "nolock" && c.broken != "unguarded")
    throw std::invalid_argument("--broken must be nolock or unguarded");
  if (c.semaphore_limit < 1) throw std::invalid_argument("--semaphore-limit must be 1 or more");
  return c;
}

std::string counter_path(const Config& c, const std::string& key) {
  return c.root + "/data/" + key + "/counter";
}
std::string token_path(const Config& c, const std::string& key) {
  return c.root + "/data/" + key + "/token";
}

// One hold, whatever the lock: its grants (none for nolock) and release. The
// lock is made for this hold (own_*) or is one of the worker's shared ones.
struct Hold {
  std::unique_ptr<zkr::InterProcessMutex> own_mutex;
  std::unique_ptr<zkr::NonReentrantMutex> own_semaphore;
  std::unique_ptr<zkr::MultiLock> multi;
  std::unique_ptr<zkr::InterProcessReadWriteLock> rw;
  std::unique_ptr<zkr::InterProcessSemaphoreV2> pool;
  zkr::InterProcessMutex* mutex = nullptr;
  zkr::NonReentrantMutex* semaphore = nullptr;
  zkr::InterProcessReadWriteLock::Side* side = nullptr;  // rw's read or write side
  std::vector<zkr::SemaphoreLease> pool_leases;          // pool's one lease, once granted

  bool acquire(milliseconds timeout) {
    if (mutex) return mutex->try_acquire_for(timeout);
    if (semaphore) return semaphore->try_acquire_for(timeout);
    if (multi) return multi->try_acquire_for(timeout);
    if (side) return side->try_acquire_for(timeout);
    if (pool) {
      pool_leases = pool->try_acquire_for(1, timeout);
      return !pool_leases.empty();
    }
    return true;  // nolock: "granted" at once
  }
  // Called right after the acquire returned: a copy of the calling thread's
  // grant, which stays this hold's even if the object is granted again to
  // another thread. (Written so that it compiles whether grant() returns a
  // reference or, as it has since grants became one per grant, a Grant by
  // value.)
  std::vector<zkr::Grant> grants() const {
    if (mutex) {
      const zkr::Grant grant = mutex->grant();
      return {grant};
    }
    if (semaphore) {
      const zkr::Grant grant = semaphore->grant();
      return {grant};
    }
    if (multi) return multi->grants();
    if (side) {
      const zkr::Grant grant = side->grant();
      return {grant};
    }
    if (!pool_leases.empty()) return {pool_leases.front().grant()};
    return {};
  }
  // nullopt for nolock (nothing to release).
  std::optional<bool> release() {
    if (mutex) return mutex->release();
    if (semaphore) return semaphore->release();
    if (multi) return multi->release();
    if (side) return side->release();
    if (!pool_leases.empty()) return pool_leases.front().release();
    return std::nullopt;
  }
};

// A holder text for LockOptions::holder_id, and a name for it in the log (the
// text itself may be a megabyte of anything).
struct HolderText {
  std::string label;
  std::string text;
  bool valid = true;
};

std::string printable(std::mt19937_64& rng, std::size_t n) {
  std::string text(n, ' ');
  for (auto& c : text) c = static_cast<char>(0x20 + rng() % 95);
  return text;
}

// Printable, at most kMaxHolderText bytes, yet as awkward as allowed: the
// words of the library's former hand-off mark, Curator's revocation data.
HolderText valid_holder(std::mt19937_64& rng) {
  switch (rng() % 8) {
    case 0: return {"default", ""};
    case 1: return {"held", "held"};
    case 2: return {"x_held", "x held"};
    case 3: return {"revoke", "__REVOKE__"};
    case 4: return {"printable1000", printable(rng, 1000)};
    case 5: return {"printable1024", printable(rng, zkr::chaos::kMaxHolderText)};
    case 6: return {"pid", "pid=" + std::to_string(::getpid())};
    default: return {"short", printable(rng, 1 + rng() % 40)};
  }
}

// A byte < 0x20 or 0x7f, or too long: the lock's constructor must refuse it.
HolderText invalid_holder(std::mt19937_64& rng) {
  switch (rng() % 7) {
    case 0: return {"newline_held", "x\nheld", false};  // would forge the former hand-off mark
    case 1:
      return {"ctl01",
              "a\x01"
              "b",
              false};
    case 2: return {"del7f", "a\x7f", false};
    case 3: return {"tab", "a\tb", false};
    case 4: return {"nul", std::string("a\0b", 3), false};
    case 5: return {"len1025", printable(rng, zkr::chaos::kMaxHolderText + 1), false};
    default: return {"len1MiB", printable(rng, std::size_t{1} << 20), false};
  }
}

// Set once a grant of the hold says lost; the worker waits on it, bounded.
struct LostFlag {
  std::mutex mutex;
  std::condition_variable cv;
  bool lost = false;  // guarded by mutex
};

// Rung by the Client's state listener and by every lost notice: a thread
// waiting for its hold's session to be surely gone waits on it, bounded.
struct StateSignal {
  std::mutex mutex;
  std::condition_variable cv;
  void ring() {
    std::lock_guard lock(mutex);
    cv.notify_all();
  }
};

std::string hex_id(std::int64_t id) {
  char text[32];
  std::snprintf(text, sizeof text, "%llx", static_cast<unsigned long long>(id));
  return text;
}

// A guarded write's outcome as the checker reads it: "rejected" is a check on
// a lock node that failed (so the node was gone by the reply); a session the
// server had ended is "unknown", as a reply that never came: the checker
// learns of the session's end from the sessions record, not from this.
std::string write_record(const zkr::GuardedWriteResult& result) {
  using Outcome = zkr::GuardedWriteResult::Outcome;
  switch (result.outcome) {
    case Outcome::applied: return "ok";
    case Outcome::lock_lost:
      return result.error == zkr::Errc::session_expired ? "unknown" : "rejected";
    case Outcome::conflict: return "conflict";  // no op here names a version: never expected
    case Outcome::unknown: return "unknown";
  }
  return "unknown";
}

class Worker {
 public:
  Worker(const Config& config, zkr::Client& client, EventLog& log, StateSignal& signal)
      : config_(config), client_(client), log_(log), signal_(signal) {
    options_.suspended_policy = zkr::SuspendedPolicy::lost;
    factory_ = std::make_unique<zkr::LockFactory>(client, config.root + "/locks",
                                                  zkr::LockLayout::flat(), options_);
    // The objects every thread shares: one InterProcessMutex and one
    // NonReentrantMutex per key, each with a holder text of its own.
    std::mt19937_64 rng(config.seed * 7919 + static_cast<std::uint64_t>(config.slot) * 31 +
                        static_cast<std::uint64_t>(config.gen));
    for (const auto& key : config.keys) {
      const std::string op =
          std::to_string(config.slot) + "." + std::to_string(config.gen) + ".shared." + key;
      shared_mutex_[key] =
          make_shared_lock<zkr::InterProcessMutex>(key, valid_holder(rng), op + ".m");
      shared_semaphore_[key] =
          make_shared_lock<zkr::NonReentrantMutex>(key, valid_holder(rng), op + ".s");
    }
  }

  void run_thread(int thread, std::chrono::steady_clock::time_point end) {
    std::mt19937_64 rng(config_.seed * 1'000'003 + static_cast<std::uint64_t>(config_.slot) * 1009 +
                        static_cast<std::uint64_t>(config_.gen) * 101 +
                        static_cast<std::uint64_t>(thread));
    for (std::int64_t n = 0; !stop_requested && std::chrono::steady_clock::now() < end; ++n) {
      const std::string op = std::to_string(config_.slot) + "." + std::to_string(config_.gen) +
                             "." + std::to_string(thread) + "." + std::to_string(n);
      one_op(op, rng);
    }
  }

 private:
  // A shared lock with a valid holder text. A constructor that refuses it is
  // on record ("holder ... outcome=refused"), and the library's default text
  // is used then, so that the run goes on.
  template <class Lock>
  std::unique_ptr<Lock> make_shared_lock(const std::string& key, const HolderText& holder,
                                         const std::string& op) {
    zkr::LockOptions options = options_;
    options.holder_id = holder.text;
    try {
      return std::make_unique<Lock>(client_, factory_->path_for(key), options);
    } catch (const std::exception& e) {
      log_.write("holder", {{"op", op},
                            {"label", holder.label},
                            {"valid", "1"},
                            {"bytes", std::to_string(holder.text.size())},
                            {"outcome", "refused"},
                            {"msg", std::string(e.what()).substr(0, 200)}});
    }
    options.holder_id.clear();
    return std::make_unique<Lock>(client_, factory_->path_for(key), options);
  }

  // Makes the lock of `kind` on `keys` with `options` into hold.
  void make(Hold& hold, const std::string& kind, const std::vector<std::string>& keys,
            const zkr::LockOptions& options) {
    if (kind == "mutex") {
      hold.own_mutex =
          std::make_unique<zkr::InterProcessMutex>(client_, factory_->path_for(keys[0]), options);
      hold.mutex = hold.own_mutex.get();
    } else if (kind == "semaphore") {
      hold.own_semaphore =
          std::make_unique<zkr::NonReentrantMutex>(client_, factory_->path_for(keys[0]), options);
      hold.semaphore = hold.own_semaphore.get();
    } else if (kind == "read" || kind == "write") {
      hold.rw = std::make_unique<zkr::InterProcessReadWriteLock>(
          client_, factory_->path_for(keys[0]), options);
      hold.side = kind == "read" ? &hold.rw->read_lock() : &hold.rw->write_lock();
    } else if (kind == "lease") {
      hold.pool = std::make_unique<zkr::InterProcessSemaphoreV2>(
          client_, factory_->path_for(keys[0]), zkr::SemaphoreLimit::fixed(config_.semaphore_limit),
          options);
    } else {
      std::vector<std::string> paths;
      for (const auto& k : keys) paths.push_back(factory_->path_for(k));
      hold.multi = std::make_unique<zkr::MultiLock>(client_, paths, options);
    }
  }

  // The constructor must refuse an invalid holder text with
  // std::invalid_argument, before anything is sent.
  void try_invalid_holder(const std::string& op, const std::string& kind,
                          const std::vector<std::string>& keys, std::mt19937_64& rng) {
    const auto holder = invalid_holder(rng);
    zkr::LockOptions options = options_;
    options.holder_id = holder.text;
    std::string outcome;
    std::string message;
    try {
      Hold hold;
      make(hold, kind, keys, options);
      outcome = "accepted";
    } catch (const std::invalid_argument&) {
      outcome = "threw";
    } catch (const std::exception& e) {
      outcome = "other";
      message = e.what();
    }
    log_.write("holder", {{"op", op},
                          {"label", holder.label},
                          {"valid", "0"},
                          {"bytes", std::to_string(holder.text.size())},
                          {"outcome", outcome},
                          {"msg", message.substr(0, 200)}});
  }

  // The kinds of lock an acquire may take. The read/write lock and the
  // semaphore only where their key was given, and only with the library's
  // locks used as meant: the broken modes are about the mutex's counters.
  std::vector<std::string> lock_kinds() const {
    std::vector<std::string> kinds = {"mutex", "semaphore", "multi", "shared_mutex",
                                      "shared_semaphore"};
    if (config_.broken != "none") return kinds;
    if (!config_.rw_key.empty()) kinds.insert(kinds.end(), {"read", "write"});
    if (!config_.semaphore_key.empty()) kinds.push_back("lease");
    return kinds;
  }

  // What a hold of `kind` on `key` writes under its guard: "" for the
  // counter and token (it excludes every other writer), or the path of a
  // guarded check alone, for a reader (it shares with readers) and a lease
  // (it shares with up to limit-1 others).
  std::string check_only_path(const std::string& kind, const std::string& key) const {
    if (kind == "read") return counter_path(config_, key);
    if (kind == "lease") return config_.root + "/data";
    return "";
  }

  void one_op(const std::string& op, std::mt19937_64& rng) {
    const auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
    std::vector<std::string> keys{config_.keys[pick(config_.keys.size())]};
    std::string kind;
    std::string holder_label = "-";
    Hold hold;
    if (config_.broken == "nolock") {
      kind = "nolock";
    } else {
      const auto kinds = lock_kinds();
      kind = kinds[pick(kinds.size())];
      if (kind == "read" || kind == "write") keys = {config_.rw_key};
      if (kind == "lease") keys = {config_.semaphore_key};
      if (kind == "shared_mutex") {
        hold.mutex = shared_mutex_.at(keys[0]).get();
      } else if (kind == "shared_semaphore") {
        hold.semaphore = shared_semaphore_.at(keys[0]).get();
      } else {
        if (kind == "multi") {
          std::string other;
          do other = config_.keys[pick(config_.keys.size())];
          while (other == keys[0]);
          keys.push_back(other);
        }
        if (pick(4) == 0) try_invalid_holder(op, kind, keys, rng);
        const auto holder = valid_holder(rng);
        holder_label = holder.label;
        zkr::LockOptions options = options_;
        options.holder_id = holder.text;
        try {
          make(hold, kind, keys, options);
        } catch (const std::exception& e) {
          // A valid text refused: on record for the checker; no acquire.
          log_.write("holder", {{"op", op},
                                {"label", holder.label},
                                {"valid", "1"},
                                {"bytes", std::to_string(holder.text.size())},
                                {"outcome", "refused"},
                                {"msg", std::string(e.what()).substr(0, 200)}});
          return;
        }
        if (hold.multi) {
          keys = hold.multi->paths();  // canonical order; back to keys
          for (auto& k : keys) k = k.substr(k.rfind('/') + 1);
        }
      }
    }
    std::string key_list;
    for (const auto& k : keys) key_list += (key_list.empty() ? "" : ",") + k;
    const auto timeout = milliseconds(300 + static_cast<std::int64_t>(pick(5700)));
    const auto start = monotonic_ns();
    zkr::chaos::Fields acq{{"op", op},
                           {"kind", kind},
                           {"keys", key_list},
                           {"holder", holder_label},
                           {"deadline", std::to_string(start + timeout.count() * 1'000'000)}};
    if (kind == "lease") acq.emplace_back("limit", std::to_string(config_.semaphore_limit));
    log_.write("acq", acq, start);
    bool granted = false;
    try {
      granted = hold.acquire(timeout);
    } catch (const std::exception& e) {
      log_.write("noacq", {{"op", op}, {"why", "error"}, {"msg", e.what()}});
      return;
    }
    if (!granted) {
      log_.write("noacq", {{"op", op}, {"why", "timeout"}});
      return;
    }
    std::vector<zkr::Grant> grants;
    std::string nolock_node;
    if (config_.broken == "nolock") {
      // A lock that excludes nobody: a lock node like any contender's, and
      // no wait for those before it. The servers' record shows each such
      // grant alive beside others.
      nolock_node = make_nolock_node(keys[0], rng);
      if (nolock_node.empty()) {
        log_.write("noacq", {{"op", op}, {"why", "error"}, {"msg", "nolock_create_failed"}});
        return;
      }
    }
    try {
      grants = hold.grants();
    } catch (const std::exception& e) {
      // Granted, yet no grant for this thread (a shared object whose grant
      // another thread's call took): on record, and given back.
      log_.write("noacq", {{"op", op}, {"why", "no_lease"}, {"msg", e.what()}});
      if (const auto released = hold.release())
        log_.write("release", {{"op", op}, {"ok", *released ? "1" : "0"}});
      return;
    }
    std::string nodes = nolock_node;
    for (const auto& grant : grants) nodes += (nodes.empty() ? "" : ",") + grant.node_path();
    std::vector<std::pair<std::string, std::int64_t>> tokens;
    for (std::size_t i = 0; i < keys.size(); ++i)
      tokens.emplace_back(keys[i], grants.empty() ? 0 : grants[i].fencing_token());
    // The session the grants were granted in, when the Client is still on it
    // ("0" when it has moved on already): the checker matches it against the
    // sessions the nemesis ended.
    std::string sid = "0";
    try {
      const auto epoch = client_.session_epoch();
      auto keeper = client_.keeper();
      if (!grants.empty() && grants.front().session_epoch() == epoch &&
          client_.session_epoch() == epoch)
        sid = hex_id(keeper->session_id());
    } catch (const std::exception&) {
    }
    log_.write("enter", {{"op", op},
                         {"tokens", zkr::chaos::format_key_ints(tokens)},
                         {"sid", sid},
                         {"nodes", nodes.empty() ? "-" : nodes}});
    auto lost_flag = std::make_shared<LostFlag>();
    for (std::size_t i = 0; i < grants.size(); ++i) {
      grants[i].on_lost([this, op, key = keys[i], lost_flag](zkr::LostReason why) {
        log_.write("lost", {{"op", op}, {"key", key}, {"why", std::string(zkr::to_string(why))}});
        {
          std::lock_guard lock(lost_flag->mutex);
          lost_flag->lost = true;
        }
        lost_flag->cv.notify_all();
        signal_.ring();
      });
    }

    const auto check_only = check_only_path(kind, keys[0]);
    const int writes = 1 + static_cast<int>(pick(3));
    bool in_doubt = false;  // the hold ended on a loss, a refusal or an unknown outcome
    bool late_made = false;
    for (int w = 0; w < writes; ++w) {
      bool late = false;
      if (config_.broken != "unguarded" && any_lost(grants)) {
        in_doubt = true;
        // A correct holder stops here. Where the grant is certainly void,
        // write once anyway: fencing must refuse.
        if (!surely_void(grants)) break;
        late = true;
      }
      const auto outcome = write(op, w, keys, tokens, grants, late, check_only);
      late_made = late_made || (late && !outcome.empty());
      if (outcome == "rejected" && !grants.empty()) {
        // Refused: the lock node is gone (the check is all that can fail),
        // so the grant must say lost, a watch event away. Wait for it, past
        // the checker's grace, so that a grant never told shows in the record.
        std::unique_lock lock(lost_flag->mutex);
        lost_flag->cv.wait_for(lock, zkr::chaos::kLostNoticeGrace + 1s,
                               [&] { return lost_flag->lost; });
      }
      if (outcome != "ok" || late) {
        in_doubt = true;
        break;
      }
      // The "work" of the critical section: faults get a chance to land mid-hold.
      std::this_thread::sleep_for(milliseconds(pick(60)));
    }
    // A hold that ended in doubt (a paused or expired holder's first write
    // after it runs again fails with the link; its grant may say lost only
    // later): once its session or node is surely gone, one late write, which
    // fencing must refuse. Bounded: a session that lives on is no reason.
    if (!grants.empty() && !late_made && (in_doubt || any_lost(grants)) && !stop_requested &&
        wait_surely_void(grants))
      (void)write(op, writes, keys, tokens, grants, true, check_only);
    log_.write("exit", {{"op", op}});
    if (!nolock_node.empty()) {
      try {
        (void)client_.keeper()->try_remove(nolock_node);  // its session's end takes it otherwise
      } catch (const std::exception&) {
      }
    }
    if (const auto released = hold.release())
      log_.write("release", {{"op", op}, {"ok", *released ? "1" : "0"}});
  }

  static bool any_lost(const std::vector<zkr::Grant>& grants) {
    return std::any_of(grants.begin(), grants.end(), [](const auto& l) { return l.lost(); });
  }

  // The session of a grant is gone (the Client has moved on to a
  // new one), or a node was deleted: nothing can revive the lock.
  bool surely_void(const std::vector<zkr::Grant>& grants) const {
    for (const auto& grant : grants) {
      if (grant.session_epoch() != client_.session_epoch()) return true;
      if (grant.lost() && grant.lost_reason() != zkr::LostReason::suspended) return true;
    }
    return false;
  }

  // Waits until the hold is surely void, up to a session timeout and two
  // seconds; gives up after a second if the Client is connected in the
  // hold's own session (the link failed and came back: the lock may live).
  bool wait_surely_void(const std::vector<zkr::Grant>& grants) {
    const auto start = std::chrono::steady_clock::now();
    std::unique_lock lock(signal_.mutex);
    if (signal_.cv.wait_until(lock, start + 1s, [&] { return surely_void(grants); })) return true;
    if (client_.is_connected() && client_.session_epoch() == grants.front().session_epoch())
      return false;
    return signal_.cv.wait_until(lock, start + config_.session_timeout + 2s,
                                 [&] { return surely_void(grants); });
  }

  // nolock's lock node in the key's lock directory (made if missing); "" if
  // it could not be made.
  std::string make_nolock_node(const std::string& key, std::mt19937_64& rng) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string guid(32, '0');
    for (auto& c : guid) c = kDigits[rng() % 16];
    const auto dir = factory_->path_for(key);
    try {
      auto keeper = client_.keeper();
      (void)keeper->try_create(dir);  // node_exists is fine
      auto made = keeper->try_create(dir + "/_c_" + guid + "-lock-", "nolock",
                                     zkr::CreateMode::ephemeral_sequential);
      return made.ok() ? made.value().path : "";
    } catch (const std::exception&) {
      return "";
    }
  }

  // Returns the outcome: ok, rejected, unknown, or "" if nothing was sent. A
  // late write is tried again (a read failed: the Client is between
  // sessions) until it is sent, for up to a session timeout and two seconds,
  // waiting for a change of the Client's state in between.
  // With check_only, the guarded multi is a check of that path alone (see
  // check_only_path).
  std::string write(const std::string& op, int n, const std::vector<std::string>& keys,
                    const std::vector<std::pair<std::string, std::int64_t>>& tokens,
                    const std::vector<zkr::Grant>& grants, bool late,
                    const std::string& check_only) {
    if (!late) return write_once(op, n, keys, tokens, grants, false, check_only);
    const auto deadline = std::chrono::steady_clock::now() + config_.session_timeout + 2s;
    for (int attempt = 0; attempt < 10; ++attempt) {
      const auto outcome = write_once(op, n, keys, tokens, grants, true, check_only);
      if (!outcome.empty() || std::chrono::steady_clock::now() >= deadline || stop_requested)
        return outcome;
      std::unique_lock lock(signal_.mutex);
      signal_.cv.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() + 500ms));
    }
    return "";
  }

  std::string write_once(const std::string& op, int n, const std::vector<std::string>& keys,
                         const std::vector<std::pair<std::string, std::int64_t>>& tokens,
                         const std::vector<zkr::Grant>& grants, bool late,
                         const std::string& check_only) {
    std::shared_ptr<zkr::Keeper> keeper;
    std::vector<std::pair<std::string, std::int64_t>> values;
    std::vector<zkr::Op> ops;
    try {
      // A late write goes out in whatever session the Client has next.
      keeper = late ? client_.keeper_when_connected(std::chrono::steady_clock::now() +
                                                    config_.session_timeout)
                    : client_.keeper();
      if (!check_only.empty()) ops.push_back(zkr::op::Check{check_only, zkr::kAnyVersion});
      for (std::size_t i = 0; i < keys.size() && check_only.empty(); ++i) {
        auto read = keeper->try_get(counter_path(config_, keys[i]));
        if (!read.ok()) {
          log_.write(
              "readfail",
              {{"op", op}, {"key", keys[i]}, {"err", std::string(zkr::errc_name(read.error()))}});
          return "";
        }
        const auto value = integer(read.value().data, "counter") + 1;
        values.emplace_back(keys[i], value);
        ops.push_back(zkr::op::Set{counter_path(config_, keys[i]), std::to_string(value)});
        ops.push_back(zkr::op::Set{token_path(config_, keys[i]), std::to_string(tokens[i].second)});
      }
    } catch (const std::exception& e) {
      log_.write("readfail", {{"op", op}, {"msg", e.what()}});
      return "";
    }
    const auto sent = monotonic_ns();
    // The intent first: if this process is killed before the reply, the
    // write is still on record (its outcome unknown), and the checker can
    // explain the counter value it may have left behind.
    log_.write("wsend",
               {{"op", op},
                {"n", std::to_string(n)},
                {"sent", std::to_string(sent)},
                {"values", zkr::chaos::format_key_ints(values)},
                {"tokens", zkr::chaos::format_key_ints(tokens)},
                {"late", late ? "1" : "0"}},
               sent);
    std::string outcome;
    zkr::Errc error = zkr::Errc::ok;
    if (grants.empty() || config_.broken == "unguarded") {
      const auto result = keeper->try_multi(std::move(ops));
      // An error the multi's results pin on one operation is a refusal; an
      // error with no results (the link, the session) leaves the outcome unknown.
      outcome = result.ok() ? "ok" : result.results.empty() ? "unknown" : "rejected";
      error = result.error;
    } else {
      const auto result = zkr::guarded_write(*keeper, grants, std::move(ops));
      outcome = write_record(result);
      error = result.error;
    }
    // Whether the grant already said lost when the reply was back: the watch
    // event of the node's deletion comes before the reply of any request the
    // server ordered after it (silent_loss).
    const bool lost_at_reply = any_lost(grants);
    log_.write("write", {{"op", op},
                         {"n", std::to_string(n)},
                         {"sent", std::to_string(sent)},
                         {"result", outcome},
                         {"err", std::string(zkr::errc_name(error))},
                         {"lost", lost_at_reply ? "1" : "0"},
                         {"values", zkr::chaos::format_key_ints(values)},
                         {"tokens", zkr::chaos::format_key_ints(tokens)},
                         {"late", late ? "1" : "0"}});
    return outcome;
  }

  const Config& config_;
  zkr::Client& client_;
  EventLog& log_;
  StateSignal& signal_;
  zkr::LockOptions options_;  // everything but the holder text
  std::unique_ptr<zkr::LockFactory> factory_;
  // Shared by every thread, by key; made before the threads start, destroyed
  // after they are joined.
  std::map<std::string, std::unique_ptr<zkr::InterProcessMutex>> shared_mutex_;
  std::map<std::string, std::unique_ptr<zkr::NonReentrantMutex>> shared_semaphore_;
};

int run(const Config& config) {
  EventLog log(config.log_path);
  EventLog sessions(config.sessions_path);
  log.write("start", {{"pid", std::to_string(::getpid())},
                      {"slot", std::to_string(config.slot)},
                      {"gen", std::to_string(config.gen)},
                      {"session_timeout_ms", std::to_string(config.session_timeout.count())}});
  zkr::ClientOptions options;
  options.connect_string = config.connect;
  options.session_timeout = config.session_timeout;
  options.connection_timeout = config.session_timeout;
  // Patient enough to ride out a leader election on a loaded machine.
  options.retry_policy = std::make_shared<zkr::BoundedExponentialBackoffRetry>(100ms, 1s, 20s);
  StateSignal signal;  // outlives the Client, whose listener rings it
  zkr::Client client(options);
  // The nemesis expires sessions by id and password: it reads them here.
  const auto publish_session = [&] {
    std::string session = "0";
    try {
      auto keeper = client.keeper();
      session = hex_id(keeper->session_id());
      if (keeper->session_id() != 0)
        sessions.write("session", {{"pid", std::to_string(::getpid())},
                                   {"id", session},
                                   {"password", zkr::chaos::to_hex(keeper->session_password())}});
    } catch (const std::exception&) {
    }
    return session;
  };
  client.add_listener([&](zkr::ConnectionState state) {
    signal.ring();
    std::string session = "0";
    if (state == zkr::ConnectionState::connected || state == zkr::ConnectionState::reconnected)
      session = publish_session();
    log.write("state", {{"s", std::string(zkr::to_string(state))}, {"session", session}});
  });
  if (!client.block_until_connected(30s)) {
    std::cerr << "chaos_worker: no connection to " << config.connect << "\n";
    return 1;
  }
  (void)publish_session();  // the first connection may have come before the listener
  Worker worker(config, client, log, signal);
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(config.seconds);
  // One leader latch participant per process, beside the lock threads:
  // none under nolock (its control is about the locks), unguarded writes
  // under unguarded (its control expects leader_write_after_loss too).
  const zkr::chaos::LatchParticipantConfig latch{
      std::string(zkr::chaos::kLatchRoot) + "/l0",
      std::string(zkr::chaos::kLeaderWriteRoot) + "/l0",
      std::to_string(config.slot) + "." + std::to_string(config.gen),
      config.seed,
      config.session_timeout,
      config.broken == "unguarded"};
  // And one counter participant, racing the other processes' on one counter.
  const zkr::chaos::CounterParticipantConfig counter{
      std::string(zkr::chaos::kCounterRoot) + "/c0",
      std::to_string(config.slot) + "." + std::to_string(config.gen), config.seed};
  // And one group member, whose view of the group is checked at the end.
  const zkr::chaos::MemberParticipantConfig member{
      std::string(zkr::chaos::kGroupRoot) + "/g0", "w" + std::to_string(config.slot),
      std::to_string(config.slot) + "." + std::to_string(config.gen)};
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < config.threads; ++t)
      threads.emplace_back([&, t] { worker.run_thread(t, end); });
    if (config.broken != "nolock")
      threads.emplace_back(
          [&] { zkr::chaos::run_latch_participant(latch, client, log, stop_requested, end); });
    if (config.broken != "nolock")
      threads.emplace_back(
          [&] { zkr::chaos::run_counter_participant(counter, client, log, stop_requested, end); });
    if (config.broken != "nolock")
      threads.emplace_back(
          [&] { zkr::chaos::run_member_participant(member, client, log, stop_requested, end); });
  }
  log.write("stop", {});
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Never outlive the runner (it may be killed before it can stop us).
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1) return 3;
  Config config;
  try {
    config = parse(argc, argv);
  } catch (const std::invalid_argument& e) {
    std::cerr << "chaos_worker: " << e.what() << "\n";
    return 64;
  }
  // The library's warnings (connection loss...) are the point of a chaos run:
  // kept in a file of their own, not on the runner's console.
  if (!config.stderr_path.empty()) {
    const int fd =
        ::open(config.stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::close(fd);
    }
  }
  struct sigaction action {};
  action.sa_handler = on_sigterm;
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGTERM, &action, nullptr);
  try {
    return run(config);
  } catch (const std::exception& e) {
    std::cerr << "chaos_worker: " << e.what() << "\n";
    return 1;
  }
}
