// Results: one Record per run of a workload at one setting, shown as a table
// for people and as one JSON line per record; and the verdicts on the issue's
// targets and correctness checks.
#pragma once

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stats.hpp"

namespace zkr::bench {

struct Record {
  std::string impl = "zkr";  // "zkr" or "floor"
  std::string workload;      // "W1" .. "W5", or "W4-list", "W4-clean"
  std::string label;         // the params, short, for the table: "flat N=1000"
  double added_rtt_ms = 0;   // round-trip latency added by a delay proxy (W1, W2)
  // ordered_json: the fields keep the order they were set in, which makes
  // the JSON lines easy to read and to diff between runs.
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  std::uint64_t ops = 0;
  double seconds = 0;
  std::optional<Percentiles> latency;  // of each op; none for a single timed step
  // Counted by the servers (server_cost.hpp), where measured: requests and
  // quorum writes per operation.
  std::optional<double> requests_per_op, writes_per_op;
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();  // the workload's own fields
  std::string note;                                                 // a few words for the table

  double ops_per_sec() const { return seconds > 0 ? static_cast<double>(ops) / seconds : 0; }
};

// A target of the issue (performance, memory) or a check (correctness).
struct Verdict {
  std::string name;
  bool check = false;  // true: correctness check; false: performance target
  bool met = false;
  bool meaningful = true;  // false at --quick sizes: shown, never fails the run
  std::string detail;      // the numbers
};

// printf into a std::string, for verdict details and notes.
std::string strprintf(const char* format, ...) __attribute__((format(printf, 1, 2)));

class Reporter {
 public:
  // json: JSON lines on stdout. out_dir: results.jsonl is written there as we go.
  Reporter(bool json, const std::optional<std::string>& out_dir);

  // The floor's cycle rate and median latency: every later record gets its
  // ratios to them (x_floor_rate, x_floor_p50), unless the floor ran the
  // record's own workload (W2): then to that.
  void set_floor(double ops_per_sec, double p50_ms);
  // Prints the record's JSON line (with --json), appends it to results.jsonl,
  // says one line on stderr, and keeps it for the table.
  void add(Record record);
  void verdict(Verdict v);

  const std::vector<Record>& records() const noexcept { return records_; }
  const std::vector<Verdict>& verdicts() const noexcept { return verdicts_; }
  std::string table() const;  // records, then verdicts
  bool any_check_failed() const;
  bool any_target_missed() const;
  std::string json_of(const Record& record) const;
  std::string verdicts_json() const;  // a JSON array

 private:
  struct FloorFigures {
    double rate = 0, p50_ms = 0;
  };
  std::optional<FloorFigures> floor_for(const Record& r) const;

  bool json_;
  std::ofstream jsonl_;
  std::optional<double> floor_rate_, floor_p50_;
  std::vector<Record> records_;
  std::vector<Verdict> verdicts_;
};

}  // namespace zkr::bench
