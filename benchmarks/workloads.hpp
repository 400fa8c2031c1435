// The benchmark workloads, W1 to W10. Each adds its Records and Verdicts to the
// context's reporter; each loop is bounded in count and in time.
#pragma once

#include "context.hpp"

namespace zkr::bench {

// First: the others are shown as ratios to the floor. With W1, the two run in
// alternating slices.
void run_floor_and_w1(Context& ctx, bool with_w1);
void run_w2_contended(Context& ctx);
void run_w3_many_locks(Context& ctx);
void run_w4_znode_growth(Context& ctx);
void run_w5_queue_depth(Context& ctx);
void run_w6_read_write(Context& ctx);
void run_w7_semaphore(Context& ctx);
void run_w8_many_waiters(Context& ctx);
void run_w9_failover(Context& ctx);  // the leader closes
void run_w9_kill(Context& ctx);      // the leader's session is abandoned
void run_w10_counter(Context& ctx);  // adds to one DistributedAtomicLong
void run_w10_cache(Context& ctx);    // a ChildrenCache following member changes

// Workers of W6 and of W7's semaphore, each on a session of its own: the
// Curator peer opens as many.
inline constexpr unsigned kW6Workers = 8;
inline constexpr unsigned kW7SemaphoreWorkers = 16;

}  // namespace zkr::bench
