#include "args.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <sstream>

namespace zkr::cli {
namespace {

const OptionSpec* find_long(const std::vector<OptionSpec>& specs, std::string_view name) {
  for (const auto& s : specs)
    if (s.name == name) return &s;
  return nullptr;
}

const OptionSpec* find_short(const std::vector<OptionSpec>& specs, char c) {
  for (const auto& s : specs)
    if (s.short_name != 0 && s.short_name == c) return &s;
  return nullptr;
}

}  // namespace

int ParsedArgs::count(std::string_view name) const {
  const auto it = values_.find(name);
  return it == values_.end() ? 0 : static_cast<int>(it->second.size());
}

std::optional<std::string> ParsedArgs::value(std::string_view name) const {
  const auto it = values_.find(name);
  if (it == values_.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

ParsedArgs parse_args(const std::vector<std::string>& args, const std::vector<OptionSpec>& specs,
                      std::size_t options_until_operands) {
  ParsedArgs parsed;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool options_over =
        parsed.operands_.size() >= options_until_operands && options_until_operands != kAllOptions;
    if (arg == "--") {
      parsed.operands_.insert(parsed.operands_.end(), args.begin() + static_cast<long>(i) + 1,
                              args.end());
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {  // an operand ("-" alone is one too)
      if (options_over) {
        parsed.operands_.insert(parsed.operands_.end(), args.begin() + static_cast<long>(i),
                                args.end());
        break;
      }
      parsed.operands_.push_back(arg);
      continue;
    }
    if (arg.starts_with("--")) {
      const auto eq = arg.find('=');
      const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      const OptionSpec* spec = find_long(specs, name);
      if (!spec) throw UsageError("unknown option --" + name);
      if (!spec->takes_value) {
        if (eq != std::string::npos) throw UsageError("--" + name + " takes no value");
        parsed.values_[name].emplace_back();
      } else if (eq != std::string::npos) {
        parsed.values_[name].push_back(arg.substr(eq + 1));
      } else {
        if (i + 1 >= args.size())
          throw UsageError("--" + name + " needs a value (" + spec->metavar + ")");
        parsed.values_[name].push_back(args[++i]);
      }
      continue;
    }
    // A cluster of short options: -vv, -t5s, -t 5s.
    for (std::size_t j = 1; j < arg.size(); ++j) {
      const OptionSpec* spec = find_short(specs, arg[j]);
      if (!spec) throw UsageError(std::string("unknown option -") + arg[j]);
      if (!spec->takes_value) {
        parsed.values_[spec->name].emplace_back();
        continue;
      }
      if (j + 1 < arg.size()) {
        parsed.values_[spec->name].push_back(arg.substr(j + 1));
      } else {
        if (i + 1 >= args.size())
          throw UsageError(std::string("-") + arg[j] + " needs a value (" + spec->metavar + ")");
        parsed.values_[spec->name].push_back(args[++i]);
      }
      break;
    }
  }
  return parsed;
}

std::string format_options(const std::vector<OptionSpec>& specs) {
  std::vector<std::string> left;
  std::size_t width = 0;
  for (const auto& s : specs) {
    std::string l = s.short_name ? std::string("  -") + s.short_name + ", " : std::string("      ");
    l += "--" + s.name;
    if (s.takes_value) l += " " + s.metavar;
    width = std::max(width, l.size());
    left.push_back(std::move(l));
  }
  std::ostringstream out;
  for (std::size_t i = 0; i < specs.size(); ++i)
    out << left[i] << std::string(width + 2 - left[i].size(), ' ') << specs[i].help << '\n';
  return out.str();
}

std::chrono::milliseconds parse_duration(std::string_view text, std::string_view what) {
  const auto bad = [&](std::string_view why) {
    return UsageError(std::string(what) + ": bad duration '" + std::string(text) + "' (" +
                      std::string(why) + "; use e.g. 500ms, 10s, 2m, 1h)");
  };
  std::size_t digits_end = 0;
  while (digits_end < text.size() &&
         ((text[digits_end] >= '0' && text[digits_end] <= '9') || text[digits_end] == '.'))
    ++digits_end;
  const std::string_view number = text.substr(0, digits_end);
  const std::string_view unit = text.substr(digits_end);
  if (number.empty() || number == "." || std::count(number.begin(), number.end(), '.') > 1)
    throw bad("not a number");
  double scale = 0;
  if (unit.empty() || unit == "s") scale = 1000;
  else if (unit == "ms") scale = 1;
  else if (unit == "m" || unit == "min") scale = 60'000;
  else if (unit == "h") scale = 3'600'000;
  else if (unit == "d") scale = 86'400'000;
  else throw bad("unknown unit");
  // from_chars for double is in libstdc++ 11+; strtod would also accept
  // "inf" and hex, which is not a duration.
  double value = 0;
  const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (error != std::errc{} || end != number.data() + number.size()) throw bad("not a number");
  const double ms = value * scale;
  if (ms > 365.0 * 86'400'000) throw bad("longer than a year");
  return std::chrono::milliseconds(static_cast<std::int64_t>(ms + 0.5));
}

std::uint64_t parse_count(std::string_view text, std::string_view what, std::uint64_t min,
                          std::uint64_t max) {
  std::uint64_t value = 0;
  // from_chars refuses a sign and reports a value beyond uint64 as out of range.
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc{} || end != text.data() + text.size() || value < min ||
      value > max)
    throw UsageError(std::string(what) + ": expected a whole number from " + std::to_string(min) +
                     " to " + std::to_string(max) + ", got '" + std::string(text) + "'");
  return value;
}

std::string format_duration(std::chrono::milliseconds d) {
  const std::int64_t ms = std::max<std::int64_t>(0, d.count());
  char buffer[32];
  const std::int64_t s = ms / 1000, m = s / 60, h = m / 60, days = h / 24;
  if (ms < 1000) std::snprintf(buffer, sizeof buffer, "%lldms", static_cast<long long>(ms));
  else if (s < 60) std::snprintf(buffer, sizeof buffer, "%llds", static_cast<long long>(s));
  else if (m < 60)
    std::snprintf(buffer, sizeof buffer, "%lldm%02llds", static_cast<long long>(m),
                  static_cast<long long>(s % 60));
  else if (h < 24)
    std::snprintf(buffer, sizeof buffer, "%lldh%02lldm", static_cast<long long>(h),
                  static_cast<long long>(m % 60));
  else
    std::snprintf(buffer, sizeof buffer, "%lldd%02lldh", static_cast<long long>(days),
                  static_cast<long long>(h % 24));
  return buffer;
}

}  // namespace zkr::cli
