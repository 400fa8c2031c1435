// W8's sides (w8_many_waiters.cpp): the keys of one side and its waiters,
// and how a side takes a key by the kind of lock (a mutex, or a semaphore of
// one lease). Apart from the workload so that each file reads in one
// sitting.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "context.hpp"
#include "critical_section.hpp"
#include "stats.hpp"
#include "w8_ledger.hpp"
#include "workloads.hpp"
#include "zkr/asio.hpp"
#include "zkr/lock.hpp"
#include "zkr/semaphore.hpp"

namespace zkr::bench {

// One waiter's grant; each waiter writes only its own.
struct Waiter {
  double handoff_ms = -1;
  std::int64_t granted_ns = 0;
  std::uint32_t grants = 0;  // must end at 1
};

// A key's lock, and how a side takes it, by the kind of lock: a mutex, or a
// semaphore of one lease. holder(k) is what a first holder keeps.
struct MutexKeys {
  using Lock = InterProcessMutex;
  using Held = LockGuard;
  static std::unique_ptr<Lock> make(Client& client, const std::string& path) {
    return std::make_unique<Lock>(client, path);
  }
  template <class Token>
  static auto acquire(Lock& lock, Clock::time_point deadline, Token&& token) {
    return zkr::asio::async_acquire_guard(lock, deadline, std::forward<Token>(token));
  }
  static bool held(const Held& held) { return static_cast<bool>(held); }
  static std::int64_t token(const Held& held) { return held.grant().fencing_token(); }
  static void release(Held& held) { (void)held.unlock(); }
  // Whether the key's directories show its holder and `waiters` queued.
  static bool queued(Keeper& keeper, const Lock& lock, std::size_t waiters,
                     Clock::time_point deadline) {
    return wait_for_children(keeper, lock.path(), waiters + 1, deadline);
  }
};

struct SemaphoreKeys {
  using Lock = InterProcessSemaphoreV2;
  using Held = std::vector<SemaphoreLease>;
  static std::unique_ptr<Lock> make(Client& client, const std::string& path) {
    return std::make_unique<Lock>(client, path, SemaphoreLimit::fixed(1));
  }
  template <class Token>
  static auto acquire(Lock& lock, Clock::time_point deadline, Token&& token) {
    return zkr::asio::async_acquire(lock, 1, deadline, std::forward<Token>(token));
  }
  static bool held(const Held& held) { return held.size() == 1; }
  static std::int64_t token(const Held& held) { return held.front().grant().fencing_token(); }
  static void release(Held& held) { (void)held.front().release(); }
  // The key's first waiter holds the internal lock and waits in leases/
  // beside the holder's lease; the others wait in locks/ (the holder gave
  // the internal lock back once granted).
  static bool queued(Keeper& keeper, const Lock& lock, std::size_t waiters,
                     Clock::time_point deadline) {
    if (waiters == 0) return true;
    return wait_for_children(keeper, lock.path() + "/locks", waiters, deadline) &&
           wait_for_children(keeper, lock.path() + "/leases", 2, deadline);
  }
};

// One side's keys and waiters; waiter w waits on key w % keys.
template <class Keys>
struct Side {
  Side(Client& client, const std::string& dir, std::size_t keys, std::size_t waiter_count)
      : ledgers(keys), waiters(waiter_count) {
    for (std::size_t k = 0; k < keys; ++k)
      locks.push_back(Keys::make(client, dir + "/key-" + std::to_string(k)));
  }

  std::size_t key_of(std::size_t waiter) const { return waiter % locks.size(); }

  // A waiter holding its key's lock: checks and times the grant, then
  // gives the lock back at once through `release`.
  template <class Release>
  void granted(std::size_t w, std::int64_t token, Release&& release) {
    KeyLedger& key = ledgers[key_of(w)];
    Waiter& me = waiters[w];
    me.granted_ns = monotonic_ns();
    me.handoff_ms = key.granted(token, me.granted_ns);
    ++me.grants;
    key.releasing(monotonic_ns());
    release();
  }

  std::vector<std::unique_ptr<typename Keys::Lock>> locks;  // one per key, shared by its waiters
  std::vector<KeyLedger> ledgers;                           // one per key
  std::vector<Waiter> waiters;
  RoundShared failures;  // acquire timeouts and errors
};

}  // namespace zkr::bench
