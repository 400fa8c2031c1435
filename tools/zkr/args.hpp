// tools/zkr/args.hpp: command-line options and durations for `zkr`.
//
// Each verb declares its options as a table, which also writes the verb's
// --help; parse_args reads the command line from the table with CLI11 and
// keeps what CLI11 does not give as we need it: `zkr lock PATH CMD ARGS...`
// stops reading options at the command's first word (as flock(1) and env(1)
// do), so that the command's own options reach it intact, and the messages
// of a usage error name the option the way our docs and tests do.
//
//   const std::vector<OptionSpec> specs{{"timeout", 't', true, "D", "give up after D"}};
//   auto parsed = parse_args(args, specs, /*options_until_operands=*/1);
//   auto timeout = parsed.value("timeout").transform([](auto& v) { return parse_duration(v, "--timeout"); });
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace zkr::cli {

// Bad usage: the message is shown after "zkr: ", and zkr exits with
// exit_code::usage.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct OptionSpec {
  std::string name;     // long name without "--"
  char short_name = 0;  // 0: none
  bool takes_value = false;
  std::string metavar;  // "D", "HOSTS": for --help
  std::string help;     // one line
};

class ParsedArgs {
 public:
  bool has(std::string_view name) const { return count(name) > 0; }
  int count(std::string_view name) const;
  // The last value given, if any.
  std::optional<std::string> value(std::string_view name) const;
  // Operands in order: positionals, and everything after "--" or after the
  // point where option parsing stopped.
  const std::vector<std::string>& operands() const noexcept { return operands_; }

 private:
  friend ParsedArgs parse_args(const std::vector<std::string>&, const std::vector<OptionSpec>&,
                               std::size_t);
  std::map<std::string, std::vector<std::string>, std::less<>> values_;  // "" for flags
  std::vector<std::string> operands_;
};

inline constexpr std::size_t kAllOptions = std::numeric_limits<std::size_t>::max();

// Parses --name, --name=value, --name value, -x, -xVALUE, -x VALUE, -vvv
// (with CLI11).
// "--" ends the options. Once `options_until_operands` operands have been
// read, the next operand and everything after it are operands too (for a
// command line to run). Throws UsageError for an unknown option, a missing
// value, or a value given to a flag.
ParsedArgs parse_args(const std::vector<std::string>& args, const std::vector<OptionSpec>& specs,
                      std::size_t options_until_operands = kAllOptions);

// "  -t, --timeout D     give up after D" lines, aligned, for --help.
std::string format_options(const std::vector<OptionSpec>& specs);

// "500ms", "10s", "2m", "1h", "1.5s"; a bare number is seconds (as in flock
// -w and timeout(1)). Throws UsageError naming `what` (the option) for
// anything else, for a negative value, or for more than a year.
std::chrono::milliseconds parse_duration(std::string_view text, std::string_view what);

// A whole number from `min` to `max` (e.g. --max-children), never wrapped
// into range: throws UsageError naming `what` and the range for anything else.
std::uint64_t parse_count(std::string_view text, std::string_view what, std::uint64_t min = 1,
                          std::uint64_t max = std::numeric_limits<std::uint64_t>::max());

// A label written into a queue node for people to read (zkr lock --holder,
// zkr elect --id): it ends up in the node, one line of `zkr ls`, and a log
// line of whoever reads it, so a control character would forge or break
// lines there. It is a label: kMaxLabelBytes is plenty, and keeps listings of
// many locks small. Checked before anything is sent, whatever the library
// checks. Throws UsageError naming `option` and its `metavar`: empty, too
// long, or with a C0 or C1 control character or DEL.
inline constexpr std::size_t kMaxLabelBytes = 1024;
void check_label(const std::string& text, std::string_view option, std::string_view metavar);

// The most --max-depth may say: far deeper than any lock layout (the hashed
// one uses 2), and the walk recurses once per level, so a bound keeps a typo
// from meaning "unlimited".
inline constexpr std::uint64_t kMaxScanDepth = 1000;

// "850ms", "12s", "3m05s", "2h07m", "3d04h": short and readable, for ages.
std::string format_duration(std::chrono::milliseconds d);

}  // namespace zkr::cli
