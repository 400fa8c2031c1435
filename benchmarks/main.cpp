// zkr-bench: the benchmarks as a program of their own, the same as
// `zkr bench ...` (see bench.hpp; `zkr-bench --help` for the options).
#include <string>
#include <vector>

#include "bench.hpp"

int main(int argc, char** argv) {
  return zkr::bench::run(std::vector<std::string>(argv + 1, argv + argc));
}
