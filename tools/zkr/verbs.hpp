// tools/zkr/verbs.hpp: the verbs of `zkr`. Each takes the arguments after its
// name and returns zkr's exit code; each `*_help()` is its --help text.
#pragma once

#include <string>
#include <vector>

namespace zkr::cli {

int lock_main(const std::vector<std::string>& args);
std::string lock_help();

int elect_main(const std::vector<std::string>& args);
std::string elect_help();

int member_main(const std::vector<std::string>& args);
std::string member_help();

int members_main(const std::vector<std::string>& args);
std::string members_help();

int ls_main(const std::vector<std::string>& args);
std::string ls_help();

int counter_main(const std::vector<std::string>& args);
std::string counter_help();
int cleanup_main(const std::vector<std::string>& args);
std::string cleanup_help();

// Hands the arguments to the benchmarks (benchmarks/bench.hpp) when zkr was
// built with them, else says they are not built.
int bench_main(const std::vector<std::string>& args);
std::string bench_help();

}  // namespace zkr::cli
