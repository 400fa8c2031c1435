#include "plots.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>

namespace zkr::bench {
namespace {

std::string n_label(std::uint64_t n) {
  if (n >= 1'000'000 && n % 1'000'000 == 0) return std::to_string(n / 1'000'000) + "M";
  if (n >= 1000 && n % 1000 == 0) return std::to_string(n / 1000) + "k";
  return std::to_string(n);
}

// Runs gnuplot on a script in dir, without a shell (the scripts name their
// files relative to dir, so any dir works); true if it exited 0.
bool run_gnuplot(const std::string& dir, const std::string& script) {
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    if (::chdir(dir.c_str()) != 0) _exit(126);
    execlp("gnuplot", "gnuplot", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

struct Point {
  double p50 = -1, p99 = -1;
};

// The N of a record: params carry it as "n" (W4) or "waiters" (W5).
std::uint64_t n_of(const Record& r, const std::string& key) {
  const auto it = r.params.find(key);
  return it != r.params.end() && it->is_number_integer() ? it->get<std::uint64_t>() : 0;
}

std::string layout_of(const Record& r) {
  const auto it = r.params.find("layout");
  return it != r.params.end() && it->is_string() ? it->get<std::string>() : "";
}

// Finite numbers with up to 6 significant decimals, integral ones as integers
// (%.6g alone writes 1e+06 for a million); gnuplot reads both.
std::string format_number(double value) {
  if (!std::isfinite(value)) return "null";
  char buf[64];
  if (value == std::floor(value) && std::fabs(value) < 9.0e15)
    std::snprintf(buf, sizeof buf, "%.0f", value);
  else std::snprintf(buf, sizeof buf, "%.6g", value);
  return buf;
}

std::string plot_value(double v) { return v < 0 ? "NaN" : format_number(v); }

std::string common_header(const std::string& png, const std::string& title,
                          const std::string& xlabel) {
  return "set terminal pngcairo size 900,540 font 'sans,11'\n"
         "set output '" +
         png +
         "'\n"
         "set title '" +
         title +
         "'\n"
         "set xlabel '" +
         xlabel +
         "'\n"
         "set ylabel 'latency (ms, log scale)'\n"
         "set logscale y\n"
         "set grid ytics\n"
         "set key top left Left reverse\n"
         "set datafile missing 'NaN'\n";
}

// The floor's p50 cycle as a flat grey line, or nothing without a floor.
std::string floor_line(double floor_p50) {
  if (floor_p50 <= 0) return "\n";
  return ", \\\n     " + format_number(floor_p50) +
         " with lines lc rgb 'gray50' lw 1 dt 3 title 'floor p50 (bare C client cycle)'\n";
}

}  // namespace

std::vector<std::string> write_plots(const std::vector<Record>& records, const std::string& dir) {
  std::vector<std::string> made;
  std::map<std::uint64_t, std::map<std::string, Point>> w4;  // N -> layout -> point
  std::map<std::uint64_t, Point> w5;
  std::map<double, std::map<std::string, double>> rtt;  // added RTT -> "impl W" -> ops/s
  double floor_p50 = -1;                                // drawn as a reference line
  for (const auto& r : records) {
    if (r.impl == "floor" && r.workload == "W1" && r.added_rtt_ms == 0 && r.latency)
      floor_p50 = r.latency->p50_ms;
    if ((r.workload == "W1" || r.workload == "W2") && r.latency)
      rtt[r.added_rtt_ms][r.impl + " " + r.workload] = r.ops_per_sec();
    if (r.impl != "zkr" || !r.latency) continue;
    if (r.workload == "W4") w4[n_of(r, "n")][layout_of(r)] = {r.latency->p50_ms, r.latency->p99_ms};
    if (r.workload == "W5") w5[n_of(r, "waiters")] = {r.latency->p50_ms, r.latency->p99_ms};
  }
  const auto draw = [&](const std::string& stem, const std::string& data,
                        const std::string& script) {
    std::ofstream(dir + "/" + stem + ".dat") << data;
    std::ofstream(dir + "/" + stem + ".gp") << script;
    if (run_gnuplot(dir, stem + ".gp")) made.push_back(dir + "/" + stem + ".png");
    else
      std::cerr << "bench: gnuplot could not draw " << dir << "/" << stem
                << ".png (is gnuplot installed?)\n";
  };
  if (!w4.empty()) {
    std::string data = "# N  label  flat_p50 flat_p99 hashed_p50 hashed_p99 (ms)\n";
    for (const auto& [n, by_layout] : w4) {
      const auto get = [&](const std::string& layout) {
        const auto it = by_layout.find(layout);
        return it == by_layout.end() ? Point{} : it->second;
      };
      const Point flat = get("flat"), hashed = get("hashed");
      data += std::to_string(n) + " " + n_label(n) + " " + plot_value(flat.p50) + " " +
              plot_value(flat.p99) + " " + plot_value(hashed.p50) + " " + plot_value(hashed.p99) +
              "\n";
    }
    const std::string dat = "w4.dat";
    draw("w4", data,
         common_header("w4.png", "W4: lock cycle latency vs other lock keys under the root",
                       "other lock keys already present (N)") +
             "plot '" + dat +
             "' using 0:3:xtic(2) with linespoints lw 2 pt 7 title 'flat p50', \\\n"
             "     '" +
             dat +
             "' using 0:4 with linespoints lw 1 pt 6 dt 2 title 'flat p99', \\\n"
             "     '" +
             dat +
             "' using 0:5 with linespoints lw 2 pt 5 title 'hashed p50', \\\n"
             "     '" +
             dat + "' using 0:6 with linespoints lw 1 pt 4 dt 2 title 'hashed p99'" +
             floor_line(floor_p50));
  }
  if (!w5.empty()) {
    std::string data = "# N  label  p50 p99 (ms)\n";
    for (const auto& [n, p] : w5)
      data += std::to_string(n) + " " + n_label(n) + " " + plot_value(p.p50) + " " +
              plot_value(p.p99) + "\n";
    const std::string dat = "w5.dat";
    draw("w5", data,
         common_header("w5.png", "W5: hand-off latency vs waiters queued behind the receiver",
                       "waiters (N)") +
             "plot '" + dat +
             "' using 0:3:xtic(2) with linespoints lw 2 pt 7 title 'p50', \\\n"
             "     '" +
             dat + "' using 0:4 with linespoints lw 1 pt 6 dt 2 title 'p99'" +
             floor_line(floor_p50));
  }
  if (rtt.size() > 1) {
    const std::vector<std::string> series = {"floor W1", "zkr W1",     "floor W2",
                                             "zkr W2",   "curator W1", "curator W2"};
    std::string data =
        "# added_rtt_ms  floor_W1 zkr_W1 floor_W2 zkr_W2 curator_W1 curator_W2 (operations/s)\n";
    for (const auto& [ms, rates] : rtt) {
      data += format_number(ms);
      for (const auto& name : series) {
        const auto it = rates.find(name);
        data += " " + plot_value(it == rates.end() ? -1 : it->second);
      }
      data += "\n";
    }
    const std::string dat = "rtt.dat";
    draw("rtt", data,
         "set terminal pngcairo size 900,540 font 'sans,11'\n"
         "set output 'rtt.png'\n"
         "set title 'W1 and W2 against added round-trip latency (delay proxy)'\n"
         "set xlabel 'added round trip (ms)'\n"
         "set ylabel 'cycles or acquisitions per second (log scale)'\n"
         "set logscale y\nset grid ytics\nset key top right\nset datafile missing 'NaN'\n"
         "plot '" +
             dat +
             "' using 1:2 with linespoints lw 1 pt 6 dt 2 lc rgb 'gray40' title 'floor W1 "
             "(cycles/s)', \\\n"
             "     '" +
             dat +
             "' using 1:3 with linespoints lw 2 pt 7 lc rgb 'blue' title 'zkr W1 (cycles/s)', \\\n"
             "     '" +
             dat +
             "' using 1:4 with linespoints lw 1 pt 4 dt 2 lc rgb 'gray20' title 'floor W2 "
             "(acquisitions/s)', \\\n"
             "     '" +
             dat +
             "' using 1:5 with linespoints lw 2 pt 5 lc rgb 'red' title 'zkr W2 (acquisitions/s)', "
             "\\\n"
             "     '" +
             dat +
             "' using 1:6 with linespoints lw 1 pt 9 lc rgb 'dark-green' title 'Curator W1 "
             "(cycles/s)', \\\n"
             "     '" +
             dat +
             "' using 1:7 with linespoints lw 1 pt 11 lc rgb 'orange' title 'Curator W2 "
             "(acquisitions/s)'\n");
  }
  return made;
}

}  // namespace zkr::bench
