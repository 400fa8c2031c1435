// zkr-trainyard: several processes updating shared state safely, with zkrecipes.
//
//   zkr-trainyard [--connect HOSTS] [--trains T] [--locations L] [--messages M]
//                 [--workers W] [--seed S] [--no-locks] [--chaos] [--timeout SECONDS]
//
// The orchestrator (this process) lays out a fresh run in ZooKeeper, starts
// three dispatcher candidates (this binary again, with --dispatcher I: the
// leader among them publishes the stream) and W worker processes (with
// --worker I: they apply what is published), shows progress, and at the end
// checks the invariants from the records and prints a summary. Exit
// code: 0 when every invariant holds, 1 when one is broken (always the case
// with --no-locks, which is the point of it), 2 for bad usage, 3 when the run
// itself failed (no connection, a worker crashed, timeout).
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "orchestrator.hpp"
#include "yard.hpp"

namespace {

constexpr const char* kUsage =
    "usage: zkr-trainyard [--connect HOSTS] [--trains T] [--locations L] [--messages M]\n"
    "                     [--workers W] [--seed S] [--no-locks] [--chaos] [--timeout SECONDS]\n"
    "  --connect    ZooKeeper connect string (default: $ZK_CONNECT)\n"
    "  --trains     trains (default 50)         --locations  locations (default 8)\n"
    "  --messages   messages (default 3000)     --workers    worker processes (default 4)\n"
    "  --seed       stream seed (default 1)     --timeout    give up after (default 300 s)\n"
    "  --no-locks   unversioned read-modify-write with no locks: watch invariants break\n"
    "  --chaos      mid-run, kill and restart the leader (needs ZKR_ENSEMBLE_SCRIPT and\n"
    "               ZKR_ENSEMBLE_DIR), expire worker 0's session while it holds locks,\n"
    "               delete a lock node of the last worker just before it writes, and\n"
    "               SIGKILL the leading dispatcher twice (a new candidate replaces it)\n";

int to_int(std::string_view flag, const char* value) {
  char* end = nullptr;
  const long v = std::strtol(value, &end, 10);
  if (*value == '\0' || *end != '\0' || v < 0 || v > 10'000'000)
    throw std::invalid_argument(std::string(flag) + ": not a count: " + value);
  return static_cast<int>(v);
}

trainyard::Options parse(int argc, char** argv) {
  trainyard::Options o;
  if (const char* env = std::getenv("ZK_CONNECT")) o.connect = env;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--no-locks") {
      o.locks = false;
      continue;
    }
    if (flag == "--chaos") {
      o.chaos = true;
      continue;
    }
    if (i + 1 >= argc)
      throw std::invalid_argument(std::string(flag) + ": missing value or unknown flag");
    const char* value = argv[++i];
    if (flag == "--connect") o.connect = value;
    else if (flag == "--trains") o.stream.trains = to_int(flag, value);
    else if (flag == "--locations") o.stream.locations = to_int(flag, value);
    else if (flag == "--messages") o.stream.messages = to_int(flag, value);
    else if (flag == "--workers") o.workers = to_int(flag, value);
    else if (flag == "--seed") o.stream.seed = static_cast<std::uint64_t>(to_int(flag, value));
    else if (flag == "--timeout") o.timeout = std::chrono::seconds(to_int(flag, value));
    else if (flag == "--worker") o.worker = to_int(flag, value);          // internal
    else if (flag == "--dispatcher") o.dispatcher = to_int(flag, value);  // internal
    else if (flag == "--run") o.run = value;                              // internal
    else throw std::invalid_argument("unknown flag " + std::string(flag));
  }
  if (o.chaos && !o.locks) throw std::invalid_argument("--chaos needs the locks: drop --no-locks");
  if (o.connect.empty()) throw std::invalid_argument("no --connect and no ZK_CONNECT");
  if (o.workers < 1 || o.workers > trainyard::kMaxWorkers)
    throw std::invalid_argument("--workers: 1 to " + std::to_string(trainyard::kMaxWorkers));
  if (o.stream.trains < 1 || o.stream.locations < 2 || o.stream.messages < o.stream.trains)
    throw std::invalid_argument("need trains >= 1, locations >= 2, messages >= trains");
  if (o.worker >= o.workers || (o.worker >= 0 && o.run.empty()))
    throw std::invalid_argument("--worker needs --run and a number below --workers");
  if (o.dispatcher >= trainyard::kDispatchers || (o.dispatcher >= 0 && o.run.empty()) ||
      (o.dispatcher >= 0 && o.worker >= 0))
    throw std::invalid_argument("--dispatcher needs --run, no --worker and a number below " +
                                std::to_string(trainyard::kDispatchers));
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--help" || std::string_view(argv[i]) == "-h") {
      std::printf("%s", kUsage);
      return 0;
    }
  trainyard::Options options;
  try {
    options = parse(argc, argv);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "zkr-trainyard: %s\n%s", e.what(), kUsage);
    return 2;
  }
  if (options.worker >= 0) return trainyard::run_worker(options);
  if (options.dispatcher >= 0) return trainyard::run_dispatcher(options);
  return trainyard::run_orchestrator(options);
}
