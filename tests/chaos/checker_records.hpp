// The chaos checker's reading of a run's records (checker.hpp): the workers'
// and the nemesis's logs turned into holds (Op), writes, faults and pauses,
// for the rules to judge. Internal to the checker.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "checker.hpp"

namespace zkr::chaos {

inline constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

struct Write {
  int n = 0;
  std::int64_t sent = 0;
  std::int64_t at = 0;  // when the outcome was recorded
  std::string result;   // ok, rejected, unknown
  std::string err;
  std::map<std::string, std::int64_t> values;
  bool late = false;
  bool lost_at_reply = false;  // a lease of the hold said lost when the reply was back
  std::string op;
};

struct Op {
  std::string id;
  std::int64_t pid = 0;
  std::string source;
  std::string kind;
  std::vector<std::string> keys;
  std::int64_t acq_at = 0;
  std::int64_t deadline = 0;
  std::optional<std::int64_t> returned_at;
  std::optional<std::int64_t> enter_at;
  std::map<std::string, std::int64_t> tokens;
  std::map<std::string, std::pair<std::int64_t, std::string>> first_lost;  // key -> (at, why)
  std::optional<std::int64_t> exit_at;
  std::vector<Write> writes;
  std::string sid;                 // the session the leases were granted in ("0"/"": unknown)
  std::vector<std::string> nodes;  // the lock nodes held, in keys order ("" if not recorded)
  bool release_refused = false;    // its release returned false
  std::int64_t limit = 0;          // a semaphore's lease: how many the semaphore allows at once
};

// A lock constructor given a holder text, and what it did with it.
struct HolderTry {
  std::string source;
  std::string op;
  std::string label;
  bool valid = false;
  std::string outcome;  // threw (std::invalid_argument), accepted, refused (valid, threw), other
  std::int64_t at = 0;
};

struct Cut {
  std::int64_t pid = 0;
  std::string why;
  std::int64_t from = 0;
  std::int64_t to = 0;
  std::string session;  // expire_session: the session ended
  std::string node;     // the lock node of the hold aimed at (delete_holder_node: deleted)
};

struct Process {
  std::int64_t pid = 0;
  std::int64_t session_timeout_ns = 0;
  std::int64_t last_at = 0;
  bool stopped_cleanly = false;
  std::vector<std::pair<std::int64_t, std::string>> states;  // client states in order
};

struct Fault {
  std::int64_t from;
  std::int64_t to;
  std::string kind;
};

// Everything the records say, by op id and by process.
struct ParsedRun {
  std::map<std::string, Op> ops;
  std::map<std::int64_t, Process> processes;
  std::vector<Cut> cuts;
  std::vector<HolderTry> holder_tries;
  std::set<std::string> foreign_paths;
  std::set<std::int64_t> foreign_sessions;
  std::vector<Fault> faults;
  Pauses paused;
  std::int64_t phase_from = 0;
  std::int64_t phase_to = 0;
};

// Reads the records; counts what is only counted (acquires, states, faults,
// lost notices) into result, and unreadable records into result.problems.
ParsedRun parse_records(const RunInput& input, CheckResult& result);

// A violation of `rule`, with an example while there are fewer than kExamplesPerRule.
void add_violation(CheckResult& result, const std::string& rule, const std::string& text);

// Every bystander after the run and the sweep is the node it was before (bystanders.cpp).
void check_bystanders(const BystanderRecord& record, CheckResult& result);

std::string ms(std::int64_t ns, std::int64_t origin);  // "+12.3ms" after origin
std::vector<std::string> split(const std::string& text, char sep);
std::string hex_session(std::int64_t id);
std::int64_t parse_hex_session(const std::string& text);

}  // namespace zkr::chaos
