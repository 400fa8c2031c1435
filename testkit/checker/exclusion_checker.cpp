#include "exclusion_checker.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <functional>
#include <istream>
#include <queue>
#include <sstream>
#include <stdexcept>

namespace zkr::exclusion {
namespace {

constexpr std::string_view kFormat = "<pid> <thread> <enter_ns> <exit_ns> <token> <kind>";

std::vector<std::string_view> split_spaces(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t at = 0;
  while (at < line.size()) {
    const auto start = line.find_first_not_of(" \t\r", at);
    if (start == std::string_view::npos) break;
    const auto end = std::min(line.find_first_of(" \t\r", start), line.size());
    fields.push_back(line.substr(start, end - start));
    at = end;
  }
  return fields;
}

std::int64_t parse_int(std::string_view text, std::string_view field) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size())
    throw std::invalid_argument(std::string(field) + " '" + std::string(text) +
                                "' is not a decimal 64-bit integer");
  return value;
}

// "+1234.567us": times relative to the first enter read better than raw clocks.
std::string relative_time(std::int64_t ns, std::int64_t origin_ns) {
  char text[48];
  std::snprintf(text, sizeof text, "+%.3fus", static_cast<double>(ns - origin_ns) / 1e3);
  return text;
}

std::string describe(const HolderInterval& i, std::int64_t origin_ns) {
  return "pid " + std::to_string(i.pid) + " thread " + std::to_string(i.thread) + " " + i.kind +
         " token " + std::to_string(i.token) + " [" + relative_time(i.enter_ns, origin_ns) + ", " +
         relative_time(i.exit_ns, origin_ns) + "]";
}

}  // namespace

std::string format_interval(const HolderInterval& i) {
  return std::to_string(i.pid) + " " + std::to_string(i.thread) + " " + std::to_string(i.enter_ns) +
         " " + std::to_string(i.exit_ns) + " " + std::to_string(i.token) + " " + i.kind;
}

HolderInterval parse_interval(std::string_view line) {
  const auto fields = split_spaces(line);
  if (fields.size() != 6)
    throw std::invalid_argument("expected 6 fields, " + std::string(kFormat) + ", got " +
                                std::to_string(fields.size()) + ": '" + std::string(line) + "'");
  HolderInterval interval;
  interval.pid = parse_int(fields[0], "pid");
  interval.thread = parse_int(fields[1], "thread");
  interval.enter_ns = parse_int(fields[2], "enter_ns");
  interval.exit_ns = parse_int(fields[3], "exit_ns");
  interval.token = parse_int(fields[4], "token");
  interval.kind = std::string(fields[5]);
  if (interval.exit_ns < interval.enter_ns)
    throw std::invalid_argument("exit_ns " + std::to_string(interval.exit_ns) +
                                " is before enter_ns " + std::to_string(interval.enter_ns) + ": '" +
                                std::string(line) + "'");
  return interval;
}

std::vector<HolderInterval> parse_intervals(std::istream& in, const std::string& source) {
  std::vector<HolderInterval> intervals;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (split_spaces(line).empty()) continue;
    try {
      intervals.push_back(parse_interval(line));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(source + ":" + std::to_string(number) + ": " + e.what());
    }
  }
  if (in.bad()) throw std::runtime_error(source + ": read error");
  return intervals;
}

std::vector<HolderInterval> read_interval_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open interval file " + path);
  return parse_intervals(in, path);
}

ExclusionReport check_exclusion(std::vector<HolderInterval> intervals, std::int64_t counter,
                                std::int64_t acquisitions) {
  ExclusionReport report;
  report.intervals = intervals.size();
  report.counter = counter;
  report.acquisitions = acquisitions;
  report.lost_updates = acquisitions - counter;
  const auto shared = [](const HolderInterval& i) { return i.kind == kSharedKind; };
  report.shared_intervals =
      static_cast<std::size_t>(std::count_if(intervals.begin(), intervals.end(), shared));
  report.interval_count_mismatch =
      static_cast<std::int64_t>(intervals.size() - report.shared_intervals) != acquisitions;

  // Grant order is enter order: a lock hands itself to one holder at a time,
  // so sorted by enter, each interval must begin after every earlier one ended
  // (a shared one: after every earlier exclusive one ended).
  std::sort(intervals.begin(), intervals.end(), [](const auto& a, const auto& b) {
    return a.enter_ns != b.enter_ns ? a.enter_ns < b.enter_ns : a.exit_ns < b.exit_ns;
  });
  const std::int64_t origin = intervals.empty() ? 0 : intervals.front().enter_ns;
  std::vector<std::string> overlap_examples;
  std::vector<std::string> token_examples;
  // The interval that ends last so far, of any kind and exclusive: comparing
  // with it, not just with the one before, also catches a long hold that
  // spans several short ones.
  const HolderInterval* latest = nullptr;
  const HolderInterval* latest_exclusive = nullptr;
  // Tokens a grant must exceed: the last exclusive one's, and (for an
  // exclusive grant) every earlier one's.
  const HolderInterval* last_exclusive = nullptr;
  const HolderInterval* highest = nullptr;
  std::priority_queue<std::int64_t, std::vector<std::int64_t>, std::greater<>> shared_exits;
  for (const auto& current : intervals) {
    const bool is_shared = shared(current);
    const HolderInterval* blocking = is_shared ? latest_exclusive : latest;
    if (blocking && current.enter_ns < blocking->exit_ns) {
      ++report.overlaps;
      if (overlap_examples.size() < kExamplesPerKind)
        overlap_examples.push_back("overlap: " + describe(current, origin) + " entered while " +
                                   describe(*blocking, origin) + " held the lock");
    }
    const HolderInterval* below = is_shared ? last_exclusive : highest;
    if (below && current.token <= below->token) {
      ++report.token_inversions;
      if (token_examples.size() < kExamplesPerKind)
        token_examples.push_back("token not increasing: " + describe(current, origin) +
                                 " was granted after " + describe(*below, origin));
    }
    if (latest && current.enter_ns - latest->exit_ns > report.longest_idle_ns) {
      report.longest_idle_ns = current.enter_ns - latest->exit_ns;
      report.longest_idle_before = describe(current, origin);
    }
    if (is_shared) {
      while (!shared_exits.empty() && shared_exits.top() <= current.enter_ns) shared_exits.pop();
      shared_exits.push(current.exit_ns);
      report.most_shared_at_once = std::max(report.most_shared_at_once, shared_exits.size());
    } else {
      last_exclusive = &current;
      if (!latest_exclusive || current.exit_ns > latest_exclusive->exit_ns)
        latest_exclusive = &current;
    }
    if (!latest || current.exit_ns > latest->exit_ns) latest = &current;
    if (!highest || current.token > highest->token) highest = &current;
  }

  report.examples = std::move(overlap_examples);
  report.examples.insert(report.examples.end(), token_examples.begin(), token_examples.end());
  if (report.lost_updates != 0)
    report.examples.push_back("counter is " + std::to_string(counter) + " after " +
                              std::to_string(acquisitions) +
                              " increments: " + std::to_string(report.lost_updates) + " lost");
  if (report.interval_count_mismatch)
    report.examples.push_back(std::to_string(report.intervals) + " intervals recorded for " +
                              std::to_string(acquisitions) + " acquisitions");
  return report;
}

std::string format_report(const ExclusionReport& report) {
  std::ostringstream out;
  out << (report.ok() ? "mutual exclusion held" : "MUTUAL EXCLUSION VIOLATED") << ": "
      << report.intervals << " intervals, " << report.overlaps << " overlaps, "
      << report.token_inversions << " token inversions, counter " << report.counter << " for "
      << report.acquisitions << " acquisitions (" << report.lost_updates << " lost updates)\n";
  if (report.shared_intervals > 0)
    out << "  shared holds: " << report.shared_intervals << ", at most "
        << report.most_shared_at_once << " at once\n";
  if (report.longest_idle_ns > 0)
    out << "  longest idle: " << static_cast<double>(report.longest_idle_ns) / 1e6 << " ms, before "
        << report.longest_idle_before << "\n";
  for (const auto& example : report.examples) out << "  " << example << "\n";
  return out.str();
}

}  // namespace zkr::exclusion
