// W8: what a waiter costs. 1,000 keys, 10 waiters queued on each,
// all granted in turn, five times in the same process:
//   async:     the 10,000 waiters are Asio operations on ONE Asio thread
//              (zkr::asio::async_acquire_guard), each completing to a
//              callback bound to the io_context, the plainest Asio form;
//   async coroutines: the same with use_awaitable, each waiter a coroutine
//              of the caller's (its frames are the caller's heap, counted);
//   semaphore, semaphore coroutines: the same two with
//              InterProcessSemaphoreV2 (one lease per key,
//              zkr::asio::async_acquire of 1 lease): a key's first waiter
//              holds the semaphore's internal lock and waits in leases/,
//              the others wait for the internal lock;
//   blocking:  one thread per waiter in InterProcessMutex::try_acquire_until,
//              as many threads as that needs.
// Each side has a Client (one session) of its own and keys of its own. A first
// holder takes every key, then the waiters queue behind it, and only once
// every waiter is queued do the holders release; each waiter, when granted,
// releases at once, and the next on its key is granted. Measured per side:
// the threads, RSS and heap the waiters add, when every waiter is queued
// (the most there ever are); the hand-off p50/p99, from the previous
// holder's release to the grant; the time from the first release to the last
// grant. Checked: every waiter granted exactly once, never two holders of a
// key at once, fencing tokens rising on each key (KeyLedger).
//
// Where a waiter's heap goes: with ZKR_MARK_PEAK=<side> (async,
// async-coroutines, semaphore, semaphore-coroutines or blocking) in the environment, that side takes and gives back one 1 GiB
// block when every waiter is queued, so that a heap profiler's peak
// (heaptrack's, say) is that moment (docs/benchmarks.md, W8).
#include <malloc.h>

#include <algorithm>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "critical_section.hpp"
#include "rss.hpp"
#include "server_cost.hpp"
#include "small_stack_threads.hpp"
#include "w8_ledger.hpp"
#include "w8_sides.hpp"
#include "workloads.hpp"
#include "zkr/asio.hpp"
#include "zkr/lock.hpp"
#include "zkr/semaphore.hpp"

namespace zkr::bench {
namespace {

namespace net = boost::asio;

// Every acquire of a side, the first holders' included, has this long from
// the side's start: a side ends by itself within it.
constexpr auto kSideTimeLimit = std::chrono::seconds(120);
// The blocking side's stack per thread. The library's deepest blocking path
// (an acquire's retries, logging) needs a few KiB; 256 KiB leaves room and
// keeps 10,000 threads within 2.5 GiB of address space (the default, 8 MiB,
// would reserve 80 GiB). Only touched pages are resident, so the RSS
// measured does not depend on this size.
constexpr std::size_t kStackBytes = 256 * 1024;

// Every key taken by a first holder, all at once as callbacks on an
// io_context of its own run on this thread (it is gone before the side's
// measures begin). Throws if a key cannot be had.
template <class Keys>
std::vector<typename Keys::Held> hold_every_key(Side<Keys>& side, Clock::time_point deadline) {
  net::io_context io;
  std::vector<typename Keys::Held> held(side.locks.size());
  std::exception_ptr error;
  for (std::size_t k = 0; k < side.locks.size(); ++k)
    Keys::acquire(*side.locks[k], deadline,
                  net::bind_executor(io, [&, k](std::exception_ptr e, typename Keys::Held got) {
                    if (e && !error) error = e;
                    held[k] = std::move(got);
                  }));
  io.run();  // until every acquire has completed
  if (error) std::rethrow_exception(error);
  for (std::size_t k = 0; k < held.size(); ++k) {
    if (!Keys::held(held[k]))
      throw RunError("W8: " + side.locks[k]->path() + " not acquired in time: held elsewhere?");
    (void)side.ledgers[k].granted(Keys::token(held[k]), monotonic_ns());
  }
  return held;
}

// The hand-offs begin: each key's first holder releases.
template <class Keys>
void release_first_holders(Side<Keys>& side, std::vector<typename Keys::Held>& held) {
  for (std::size_t k = 0; k < held.size(); ++k) {
    side.ledgers[k].releasing(monotonic_ns());
    Keys::release(held[k]);
  }
}

// Whether each key's directories show its first holder and its waiters
// (per_key[k] of them) by the deadline.
template <class Keys>
bool wait_until_queued(Client& client, const Side<Keys>& side,
                       const std::vector<std::size_t>& per_key, Clock::time_point deadline) {
  auto keeper = client.keeper();
  for (std::size_t k = 0; k < side.locks.size(); ++k)
    if (!Keys::queued(*keeper, *side.locks[k], per_key[k], deadline)) return false;
  return true;
}

struct Footprint {
  std::uint64_t threads = 0;
  std::uint64_t rss_kib = 0;
  // What malloc has handed out and not had back (glibc's mallinfo2, every
  // arena): the waiters' own state, without the allocator's slack and
  // without thread stacks, which are not malloc's.
  std::uint64_t heap_kib = 0;
};

// The process now. RSS is the resident set now, not the peak: getrusage's
// peak (VmHWM) covers the whole process life, earlier workloads and the
// other side included, so it cannot tell the sides apart. Each side's growth
// is its RSS when every waiter is queued minus its RSS just before it starts
// them; `trim` first hands the heap that earlier work freed back to the
// system (glibc's malloc_trim), so that neither side grows into memory the
// one before it freed and looks cheaper than it is.
Footprint footprint_now(bool trim) {
  if (trim) (void)::malloc_trim(0);
  const auto heap = ::mallinfo2();
  return {thread_count(), current_rss_kib(), (heap.uordblks + heap.hblkhd) / 1024};
}

// What a side measured.
struct WaitersOutcome {
  std::string label;
  std::string api;
  std::size_t waiters = 0;  // started: the blocking side may start fewer
  Footprint before, queued;
  bool all_queued = false;
  double seconds = 0;  // first release to last grant
  Samples handoffs;
  std::uint64_t granted_once = 0;
  std::uint64_t violations = 0;  // the ledgers', and waiters granted more than once
  std::uint64_t failures = 0;    // acquire timeouts and errors
  std::string first_error;
  std::optional<double> requests_per_op, writes_per_op;

  std::int64_t threads_added() const {
    return static_cast<std::int64_t>(queued.threads) - static_cast<std::int64_t>(before.threads);
  }
  std::int64_t rss_added_kib() const {
    return static_cast<std::int64_t>(queued.rss_kib) - static_cast<std::int64_t>(before.rss_kib);
  }
  std::int64_t heap_added_kib() const {
    return static_cast<std::int64_t>(queued.heap_kib) - static_cast<std::int64_t>(before.heap_kib);
  }
  bool clean() const { return violations == 0 && failures == 0 && granted_once == waiters; }
};

// With ZKR_MARK_PEAK=<side>, that side marks the moment its waiters are all
// queued as a heap profiler's peak (see the top of this file).
void mark_peak(const char* side) {
  const char* wanted = std::getenv("ZKR_MARK_PEAK");
  if (!wanted || std::strcmp(wanted, side) != 0) return;
  auto block = std::make_unique<char[]>(std::size_t{1} << 30);
  block[0] = 1;
  std::fprintf(stderr, "bench:   W8 %s: heap peak marked at %p\n", side,
               static_cast<void*>(block.get()));
}

// Waiters per key among the first `started`.
template <class Keys>
std::vector<std::size_t> waiters_per_key(const Side<Keys>& side, std::size_t started) {
  std::vector<std::size_t> per_key(side.locks.size(), 0);
  for (std::size_t w = 0; w < started; ++w) ++per_key[side.key_of(w)];
  return per_key;
}

// The side's waiters are queued and their key's first holders about to
// release: measures, releases, waits for every grant (`join` returns when all
// waiters have ended), and sums up.
template <class Keys, class Join>
WaitersOutcome hand_off(const Context& ctx, Client& client, Side<Keys>& side,
                        std::vector<typename Keys::Held>& holders, std::size_t started,
                        Clock::time_point deadline, const char* name, Join&& join) {
  WaitersOutcome o;
  o.waiters = started;
  o.all_queued = wait_until_queued(client, side, waiters_per_key(side, started), deadline);
  if (!o.all_queued)
    std::fprintf(stderr, "bench:   W8: not every waiter queued within %lld s; releasing anyway\n",
                 static_cast<long long>(kSideTimeLimit.count()));
  o.queued = footprint_now(false);
  mark_peak(name);
  CostMeter cost(ctx.options.connect);
  cost.begin();
  const std::int64_t start_ns = monotonic_ns();
  release_first_holders(side, holders);
  join();
  std::int64_t last_ns = start_ns;
  for (std::size_t w = 0; w < started; ++w) {
    const Waiter& waiter = side.waiters[w];
    if (waiter.grants == 0) continue;
    o.handoffs.add(waiter.handoff_ms);
    last_ns = std::max(last_ns, waiter.granted_ns);
    if (waiter.grants == 1) ++o.granted_once;
    o.violations += waiter.grants - 1;
  }
  o.seconds = static_cast<double>(last_ns - start_ns) / 1e9;
  cost.end(o.handoffs.size());
  o.requests_per_op = cost.requests_per_op();
  o.writes_per_op = cost.writes_per_op();
  for (const auto& ledger : side.ledgers) o.violations += ledger.violations();
  o.failures = side.failures.errors();
  o.first_error = side.failures.first_error();
  return o;
}

template <class Keys>
net::awaitable<void> async_waiter(Side<Keys>& side, std::size_t w, Clock::time_point deadline) {
  try {
    auto held = co_await Keys::acquire(*side.locks[side.key_of(w)], deadline, net::use_awaitable);
    if (!Keys::held(held)) {
      side.failures.timed_out();
      co_return;
    }
    side.granted(w, Keys::token(held), [&] { Keys::release(held); });
  } catch (const std::exception& e) {
    side.failures.failed(e);
  }
}

// A waiter whose grant comes to a callback: the callback is all the
// caller keeps while it waits.
template <class Keys>
void start_callback_waiter(net::io_context& io, Side<Keys>& side, std::size_t w,
                           Clock::time_point deadline) {
  Keys::acquire(
      *side.locks[side.key_of(w)], deadline,
      net::bind_executor(io, [&side, w](std::exception_ptr error, typename Keys::Held held) {
        if (error) {
          try {
            std::rethrow_exception(error);
          } catch (const std::exception& e) {
            side.failures.failed(e);
          }
          return;
        }
        if (!Keys::held(held)) {
          side.failures.timed_out();
          return;
        }
        side.granted(w, Keys::token(held), [&] { Keys::release(held); });
      }));
}

// How an async side's waiters take their grant: both are common Asio forms.
enum class Form { callback, coroutine };

template <class Keys>
WaitersOutcome run_async(const Context& ctx, const char* name, Form form, std::size_t keys,
                         std::size_t waiters) {
  auto client = ctx.connect();
  Side<Keys> side(*client, ctx.path(std::string("w8/") + name), keys, waiters);
  const auto deadline = Clock::now() + kSideTimeLimit;
  auto holders = hold_every_key(side, deadline);
  const Footprint before = footprint_now(true);
  net::io_context io(1);
  for (std::size_t w = 0; w < waiters; ++w) {
    if (form == Form::coroutine) net::co_spawn(io, async_waiter(side, w, deadline), net::detached);
    else start_callback_waiter(io, side, w, deadline);
  }
  // The one Asio thread; run() returns once every waiter has ended.
  // A jthread: should hand_off() throw, it still joins (each waiter ends by the deadline).
  std::jthread io_thread([&io] { io.run(); });
  WaitersOutcome o =
      hand_off(ctx, *client, side, holders, waiters, deadline, name, [&] { io_thread.join(); });
  o.before = before;
  return o;
}

void blocking_waiter(Side<MutexKeys>& side, std::size_t w, Clock::time_point deadline) {
  try {
    InterProcessMutex& mutex = *side.locks[side.key_of(w)];
    if (!mutex.try_acquire_until(deadline)) {
      side.failures.timed_out();
      return;
    }
    side.granted(w, mutex.grant().fencing_token(), [&] { (void)mutex.release(); });
  } catch (const std::exception& e) {
    side.failures.failed(e);
  }
}

WaitersOutcome run_blocking(const Context& ctx, std::size_t keys, std::size_t waiters) {
  auto client = ctx.connect();
  Side<MutexKeys> side(*client, ctx.path("w8/blocking"), keys, waiters);
  const auto deadline = Clock::now() + kSideTimeLimit;
  auto holders = hold_every_key(side, deadline);
  const Footprint before = footprint_now(true);
  SmallStackThreads threads(kStackBytes);
  for (std::size_t w = 0; w < waiters; ++w) {
    if (!threads.start([&side, w, deadline] { blocking_waiter(side, w, deadline); })) {
      std::fprintf(stderr,
                   "bench:   W8 blocking: the system refused thread %zu (%s): going on with %zu "
                   "threads, one per waiter\n",
                   w + 1, threads.last_error().c_str(), threads.started());
      break;
    }
  }
  const std::size_t started = threads.started();
  WaitersOutcome o = hand_off(ctx, *client, side, holders, started, deadline, "blocking",
                              [&] { threads.join_all(); });
  o.before = before;
  o.label = "blocking, " + std::to_string(started) + " threads";
  o.api = "InterProcessMutex::try_acquire_until";
  return o;
}

Record record_of(const WaitersOutcome& o, std::size_t keys) {
  Record r;
  r.workload = "W8";
  r.label = o.label;
  r.params["keys"] = static_cast<std::uint64_t>(keys);
  r.params["waiters"] = static_cast<std::uint64_t>(o.waiters);
  r.params["sessions"] = 1;
  r.params["api"] = o.api;
  r.ops = o.handoffs.size();
  r.seconds = o.seconds;
  r.latency = o.handoffs.percentiles();
  r.requests_per_op = o.requests_per_op;
  r.writes_per_op = o.writes_per_op;
  const double mib = static_cast<double>(o.rss_added_kib()) / 1024.0;
  r.extra["threads_before"] = o.before.threads;
  r.extra["threads_queued"] = o.queued.threads;
  r.extra["threads_added"] = o.threads_added();
  r.extra["rss_before_kib"] = o.before.rss_kib;
  r.extra["rss_queued_kib"] = o.queued.rss_kib;
  r.extra["rss_added_kib"] = o.rss_added_kib();
  const double waiters = o.waiters ? static_cast<double>(o.waiters) : 1;
  const double rss_per_waiter = static_cast<double>(o.rss_added_kib()) / waiters;
  const double heap_per_waiter = static_cast<double>(o.heap_added_kib()) / waiters;
  r.extra["rss_added_per_waiter_kib"] = rss_per_waiter;
  r.extra["heap_added_kib"] = o.heap_added_kib();
  r.extra["heap_added_per_waiter_kib"] = heap_per_waiter;
  r.extra["all_queued"] = o.all_queued;
  r.extra["granted_once"] = o.granted_once;
  r.extra["violations"] = o.violations;
  r.extra["failures"] = o.failures;
  r.extra["peak_rss_kib"] = peak_rss_kib();
  r.note = strprintf(
      "latency = hand-off; %+lld threads, %+.1f MiB RSS (heap %+.1f) while queued: %.2f KiB RSS "
      "(heap %.2f) per waiter",
      static_cast<long long>(o.threads_added()), mib,
      static_cast<double>(o.heap_added_kib()) / 1024.0, rss_per_waiter, heap_per_waiter);
  return r;
}

}  // namespace

// What an async waiter may hold while it waits: heap per waiter (malloc's
// bytes in use, every arena), which counts the waiters' own state and
// nothing else. RSS is reported beside it but not judged: its growth also
// holds what the allocator kept of memory freed during the queueing
// (replies, listings) and depends on what the sides before left in the
// arenas (a side has shown less RSS than heap growth, reusing pages).
constexpr double kAsyncWaiterBoundKib = 4.0;

void run_w8_many_waiters(Context& ctx) {
  const std::size_t keys = ctx.plan.w8_keys;
  const std::size_t waiters = keys * ctx.plan.w8_waiters_per_key;
  std::cerr << "bench: W8 " << waiters << " waiters on " << keys
            << " keys: async on one Asio thread (a mutex, then a semaphore of one lease; each "
               "with callbacks, then coroutines), then blocking with a thread each\n";
  // Async first: if anything, the blocking side then finds the allocator's
  // arenas warm; footprint_now() trims what the sides before freed.
  WaitersOutcome async = run_async<MutexKeys>(ctx, "async", Form::callback, keys, waiters);
  async.label = "async, 1 Asio thread";
  async.api = "zkr::asio::async_acquire_guard, a callback bound to the io_context";
  WaitersOutcome async_co =
      run_async<MutexKeys>(ctx, "async-coroutines", Form::coroutine, keys, waiters);
  async_co.label = "async coroutines, 1 Asio thread";
  async_co.api = "zkr::asio::async_acquire_guard, use_awaitable";
  WaitersOutcome semaphore =
      run_async<SemaphoreKeys>(ctx, "semaphore", Form::callback, keys, waiters);
  semaphore.label = "semaphore async, 1 Asio thread";
  semaphore.api =
      "InterProcessSemaphoreV2 (1 lease), zkr::asio::async_acquire, a callback bound to the "
      "io_context";
  WaitersOutcome semaphore_co =
      run_async<SemaphoreKeys>(ctx, "semaphore-coroutines", Form::coroutine, keys, waiters);
  semaphore_co.label = "semaphore async coroutines, 1 Asio thread";
  semaphore_co.api = "InterProcessSemaphoreV2 (1 lease), zkr::asio::async_acquire, use_awaitable";
  const WaitersOutcome blocking = run_blocking(ctx, keys, waiters);
  const std::initializer_list<const WaitersOutcome*> sides = {&async, &async_co, &semaphore,
                                                              &semaphore_co, &blocking};
  for (const WaitersOutcome* o : sides) {
    if (!o->first_error.empty())
      std::cerr << "bench:   W8 " << o->label << ": first error: " << o->first_error << "\n";
    ctx.reporter.add(record_of(*o, keys));
  }
  for (const WaitersOutcome* o : sides)
    ctx.reporter.verdict(
        {"W8 " + o->label + ": every waiter granted once, one holder per key at a time", true,
         o->clean(), true,
         strprintf("%llu of %zu waiters granted once, %llu violations, %llu timeouts or errors",
                   static_cast<unsigned long long>(o->granted_once), o->waiters,
                   static_cast<unsigned long long>(o->violations),
                   static_cast<unsigned long long>(o->failures))});
  // The Asio thread is the one an async side may add.
  ctx.reporter.verdict(
      {"W8 async waiters take no thread each", false,
       async.threads_added() <= 1 && async_co.threads_added() <= 1 &&
           semaphore.threads_added() <= 1 && semaphore_co.threads_added() <= 1,
       true,
       strprintf("%+lld threads for %zu async waiters (%+lld with coroutines, %+lld and %+lld for "
                 "the semaphore's), %+lld for %zu blocking ones",
                 static_cast<long long>(async.threads_added()), async.waiters,
                 static_cast<long long>(async_co.threads_added()),
                 static_cast<long long>(semaphore.threads_added()),
                 static_cast<long long>(semaphore_co.threads_added()),
                 static_cast<long long>(blocking.threads_added()), blocking.waiters)});
  const auto per_waiter = [](const WaitersOutcome& o, std::int64_t kib) {
    return o.waiters ? static_cast<double>(kib) / static_cast<double>(o.waiters) : 0;
  };
  const double async_rss = per_waiter(async, async.rss_added_kib());
  const double blocking_rss = per_waiter(blocking, blocking.rss_added_kib());
  ctx.reporter.verdict(
      {"W8 an async waiter costs less memory than a blocking one", false, async_rss < blocking_rss,
       !ctx.options.quick,
       strprintf("RSS per waiter: %.1f KiB async, %.1f KiB blocking (of which heap: %.1f and "
                 "%.1f KiB; the rest is the allocator's slack, and the threads' stacks)",
                 async_rss, blocking_rss, per_waiter(async, async.heap_added_kib()),
                 per_waiter(blocking, blocking.heap_added_kib()))});
  // Judged on the callback form: what a waiter costs with the library's
  // state and the least a caller can keep. A coroutine waiter adds its own
  // frames (the caller's), printed beside it.
  const std::initializer_list<std::pair<const WaitersOutcome*, const WaitersOutcome*>> judged = {
      {&async, &async_co}, {&semaphore, &semaphore_co}};
  for (const auto& [o, co] : judged) {
    const double heap = per_waiter(*o, o->heap_added_kib());
    ctx.reporter.verdict(
        {strprintf("W8 %s: at most %.0f KiB heap per waiter", o->label.c_str(),
                   kAsyncWaiterBoundKib),
         false, heap <= kAsyncWaiterBoundKib, !ctx.options.quick,
         strprintf("%.2f KiB heap per waiter (RSS: %.2f KiB); as coroutines: %.2f KiB (RSS: "
                   "%.2f KiB)",
                   heap, per_waiter(*o, o->rss_added_kib()), per_waiter(*co, co->heap_added_kib()),
                   per_waiter(*co, co->rss_added_kib()))});
  }
  for (const WaitersOutcome* o : sides) {
    const auto p = o->handoffs.percentiles();
    std::cerr << strprintf("bench:   W8 %s: hand-off p50/p99 %.2f/%.2f ms, all granted in %.2f s",
                           o->label.c_str(), p.p50_ms, p.p99_ms, o->seconds)
              << "\n";
  }
}

}  // namespace zkr::bench
