// One timed round of a workload: every worker on a thread of its own, all
// released at once (none starts while the others are still being created),
// each working until one deadline `duration` after the start. The server
// counters' span begins just before the start.
//
//   const double seconds = run_timed_round(workers, duration, tally.cost,
//       [&](unsigned i, Clock::time_point deadline) { worker(*locks[i], deadline, ...); });
#pragma once

#include <chrono>
#include <latch>
#include <thread>
#include <vector>

#include "server_cost.hpp"
#include "stats.hpp"

namespace zkr::bench {

// Returns the seconds from the start until the last worker returned.
template <class Work>
double run_timed_round(unsigned workers, std::chrono::milliseconds duration, CostMeter& cost,
                       Work work) {
  std::latch go(1);
  Clock::time_point start;
  Clock::time_point deadline;
  {
    std::vector<std::jthread> threads;
    for (unsigned i = 0; i < workers; ++i)
      threads.emplace_back([&, i] {
        go.wait();
        work(i, deadline);
      });
    cost.begin();
    start = Clock::now();
    deadline = start + duration;
    go.count_down();  // the latch orders the write of deadline before the reads
  }
  return seconds_since(start);
}

}  // namespace zkr::bench
