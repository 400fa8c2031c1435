// PNG charts of latency against N for W4 (flat and hashed) and W5, drawn by
// gnuplot (Debian's gnuplot-nox) from data files written next to them.
#pragma once

#include <string>
#include <vector>

#include "report.hpp"

namespace zkr::bench {

// Writes DIR/w4.dat, w4.gp, w4.png and w5.* for the workloads present in
// records. Returns the PNGs made; says on stderr why one was not.
std::vector<std::string> write_plots(const std::vector<Record>& records, const std::string& dir);

}  // namespace zkr::bench
