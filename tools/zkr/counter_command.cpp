// `zkr counter PATH`: reads or changes a counter (Curator's
// DistributedAtomicLong, or with --int32 its SharedCount) and prints its
// value; a conflict and an indeterminate write have exit codes of their own.
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "args.hpp"
#include "connection.hpp"
#include "errors.hpp"
#include "exit_codes.hpp"
#include "verbs.hpp"
#include "zkr/distributed_atomic_long.hpp"
#include "zkr/path.hpp"
#include "zkr/shared_count.hpp"

namespace zkr::cli {
namespace {

std::vector<OptionSpec> counter_specs() {
  auto specs = connection_option_specs();
  specs.push_back({"get", 0, false, "", "print the value (the default)"});
  specs.push_back({"add", 0, true, "N", "add N (negative to subtract); print the new value"});
  specs.push_back({"set", 0, true, "N", "set the value to N; print it"});
  specs.push_back({"cas", 0, true, "OLD", "--cas OLD NEW: set NEW only if the value is OLD"});
  specs.push_back(
      {"int32", 0, false, "", "a 4-byte int (Curator's SharedCount) instead of an 8-byte long"});
  return specs;
}

std::int64_t parse_number(std::string_view text, std::string_view what, bool int32) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  const auto low =
      int32 ? std::numeric_limits<std::int32_t>::min() : std::numeric_limits<std::int64_t>::min();
  const auto high =
      int32 ? std::numeric_limits<std::int32_t>::max() : std::numeric_limits<std::int64_t>::max();
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < low ||
      value > high)
    throw UsageError(std::string(what) + " takes a whole number from " + std::to_string(low) +
                     " to " + std::to_string(high) + ", not '" + std::string(text) + "'");
  return value;
}

enum class Action { get, add, set, cas };

struct Request {
  std::string path;
  Action action = Action::get;
  std::int64_t amount = 0;    // add: N; set: N; cas: NEW
  std::int64_t expected = 0;  // cas: OLD
  bool int32 = false;
};

Request read_request(const ParsedArgs& parsed) {
  Request r;
  r.int32 = parsed.has("int32");
  int actions = 0;
  for (const char* name : {"get", "add", "set", "cas"}) actions += parsed.has(name) ? 1 : 0;
  if (actions > 1) throw UsageError("give one of --get, --add, --set, --cas");
  auto operands = parsed.operands();
  if (parsed.has("cas")) {
    // NEW is the operand that is not the path.
    if (operands.size() != 2) throw UsageError("--cas takes OLD and NEW, and PATH");
    const bool path_first = operands[0].starts_with("/");
    r.amount = parse_number(operands[path_first ? 1 : 0], "--cas NEW", r.int32);
    operands.erase(operands.begin() + (path_first ? 1 : 0));
    r.expected = parse_number(*parsed.value("cas"), "--cas OLD", r.int32);
    r.action = Action::cas;
  } else if (parsed.has("add")) {
    r.amount = parse_number(*parsed.value("add"), "--add", r.int32);
    r.action = Action::add;
  } else if (parsed.has("set")) {
    r.amount = parse_number(*parsed.value("set"), "--set", r.int32);
    r.action = Action::set;
  }
  if (operands.size() != 1)
    throw UsageError(operands.empty() ? "missing PATH" : "counter takes one PATH");
  r.path = operands[0];
  validate_path(r.path);
  if (r.path == "/") throw UsageError("the root cannot be a counter");
  return r;
}

// What a write came to, for the exit code and the message.
int report_outcome(const Request& r, CounterOutcome outcome, std::optional<std::int64_t> pre,
                   std::optional<std::int64_t> post) {
  switch (outcome) {
    case CounterOutcome::succeeded:
      std::printf("%lld\n", static_cast<long long>(*post));
      return exit_code::ok;
    case CounterOutcome::conflict:
      if (pre) std::printf("%lld\n", static_cast<long long>(*pre));
      print_error(r.action == Action::cas
                      ? "not set: " + r.path + " does not hold " + std::to_string(r.expected)
                      : "not applied: " + r.path + " kept changing under us");
      return exit_code::counter_conflict;
    case CounterOutcome::indeterminate:
      print_error("the connection was lost before the reply: " + r.path +
                  " holds the change once, or not at all (" +
                  (pre ? std::to_string(*pre) : std::string("?")) + " or " +
                  (post ? std::to_string(*post) : std::string("?")) +
                  " if nobody else wrote); read it to know, and do not repeat blindly");
      return exit_code::counter_indeterminate;
  }
  return exit_code::internal;
}

int run_long(Client& client, const Request& r) {
  DistributedAtomicLong counter(client, r.path);
  AtomicLongResult result;
  switch (r.action) {
    case Action::get:
      std::printf("%lld\n", static_cast<long long>(counter.get()));
      return exit_code::ok;
    case Action::add: result = counter.add(r.amount); break;
    case Action::set: result = counter.try_set(r.amount); break;
    case Action::cas: result = counter.compare_and_set(r.expected, r.amount); break;
  }
  return report_outcome(r, result.outcome, result.pre, result.post);
}

// SharedCount has one compare-and-set; add and set are made of it, each try
// on the value the last one found (the cache reads it again on a conflict).
int run_int32(Client& client, const Request& r) {
  SharedCount count(client, r.path, 0);  // creates the node holding 0 if missing, as Curator
  count.start();
  if (r.action == Action::get) {
    std::printf("%d\n", count.get_count());
    return exit_code::ok;
  }
  constexpr int kAttempts = 20;
  VersionedCount seen;
  std::int32_t next = 0;
  CounterOutcome outcome = CounterOutcome::conflict;
  for (int attempt = 0; attempt < kAttempts && outcome == CounterOutcome::conflict; ++attempt) {
    seen = count.get_versioned_count();
    if (r.action == Action::cas && seen.value != r.expected) break;
    next = r.action == Action::add
               ? static_cast<std::int32_t>(static_cast<std::uint32_t>(seen.value) +
                                           static_cast<std::uint32_t>(r.amount))
               : static_cast<std::int32_t>(r.amount);
    outcome = count.try_set_count(seen, next);
    if (r.action == Action::cas) break;
  }
  return report_outcome(r, outcome, seen.value, next);
}

}  // namespace

std::string counter_help() {
  return "Usage: zkr counter PATH [--get | --add N | --set N | --cas OLD NEW] [--int32]\n"
         "\n"
         "Reads or changes the counter at PATH and prints its value. The node holds\n"
         "an 8-byte big-endian long, as Curator's DistributedAtomicLong (a missing\n"
         "node reads 0; the first write makes it, and its parents as containers), or\n"
         "with --int32 a 4-byte int, as Curator's SharedCount (zkr makes a missing\n"
         "node holding 0 before anything else, as SharedCount.start() does). Each\n"
         "write is a compare-and-set on the node's version, tried again on a\n"
         "conflict; --cas tries once.\n"
         "\n"
         "A write whose reply is lost (the connection broke after it was sent) is\n"
         "never sent again: zkr reads the node and, unless that proves the write\n"
         "was not applied, exits 81 saying the change was applied once or not at all.\n"
         "\n"
         "Options:\n" +
         format_options(counter_specs()) + "\n" + connection_help_footer() +
         "\n"
         "Exit status: 0 done (the value printed), 64 bad usage, 65 the node's data is\n"
         "not a counter of that size, 69 ZooKeeper unreachable (nothing written),\n"
         "76 ZooKeeper refused, 80 not applied: --cas found another value, or the\n"
         "value kept changing (the value found printed), 81 indeterminate: the\n"
         "change was applied once or not at all.\n"
         "\n"
         "Example:\n"
         "  zkr counter /app/stats/deploys --add 1\n"
         "  zkr counter /app/generation --int32 --cas 41 42\n";
}

int counter_main(const std::vector<std::string>& args) {
  return run_reporting_errors("counter", [&]() -> int {
    const auto parsed = parse_args(args, counter_specs());
    if (parsed.has("help")) {
      std::fputs(counter_help().c_str(), stdout);
      return exit_code::ok;
    }
    const auto request = read_request(parsed);
    const auto connection = connection_settings(parsed);
    auto client = open_client(connection);
    wait_connected(*client, connection);
    try {
      return request.int32 ? run_int32(*client, request) : run_long(*client, request);
    } catch (const CounterDataError& e) {
      print_error(e.what());
      return exit_code::bad_counter_data;
    }
  });
}

}  // namespace zkr::cli
