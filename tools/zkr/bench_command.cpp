// `zkr bench ...`: the benchmarks live in benchmarks/ (another owner); this
// only hands them the arguments, when zkr was built with them.
#include <cstdio>

#include "errors.hpp"
#include "exit_codes.hpp"
#include "verbs.hpp"

#ifdef ZKR_HAVE_BENCH
#include "bench.hpp"
#endif

namespace zkr::cli {

std::string bench_help() {
#ifdef ZKR_HAVE_BENCH
  // The benchmarks own their options and help.
  return {};
#else
  return "Usage: zkr bench [ARGS...]\n"
         "\n"
         "Runs the lock benchmarks (see benchmarks/). This zkr was built without\n"
         "them, as the packaged zkr is: run scripts/bench in a source tree, or\n"
         "build zkr with -DZKR_BENCH_VERB=ON.\n";
#endif
}

int bench_main(const std::vector<std::string>& args) {
#ifdef ZKR_HAVE_BENCH
  return run_reporting_errors("bench", [&] { return zkr::bench::run(args); });
#else
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::fputs(bench_help().c_str(), stdout);
      return exit_code::ok;
    }
  }
  print_error(
      "bench: this zkr was built without the benchmarks (ZKR_BENCH_VERB=OFF); run scripts/bench "
      "in a source tree");
  return exit_code::unavailable;
#endif
}

}  // namespace zkr::cli
