// The workloads of issue 4. Each adds its Records and Verdicts to the
// context's reporter; each loop is bounded in count and in time.
#pragma once

#include "context.hpp"

namespace zkr::bench {

void run_floor_workload(Context& ctx);  // first: the others are shown as ratios to it
void run_w1_uncontended(Context& ctx);
void run_w2_contended(Context& ctx);
void run_w3_many_locks(Context& ctx);
void run_w4_znode_growth(Context& ctx);
void run_w5_queue_depth(Context& ctx);

}  // namespace zkr::bench
