#include "args.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <sstream>

#include <CLI/CLI.hpp>

namespace zkr::cli {
namespace {

// "--timeout" or "-t", as the user may have typed it, for messages.
std::string shown_name(const OptionSpec& spec) { return "--" + spec.name; }

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
  CLI::App app;
  // The verbs write their own --help from the same table (format_options),
  // and ask for it as an option of the table.
  app.set_help_flag();
  // Unknown options come back in remaining() and are refused below with our
  // own message; the command after PATH comes back there too.
  app.allow_extras();
  std::vector<std::pair<const OptionSpec*, CLI::Option*>> options;
  for (const auto& spec : specs) {
    std::string names = "--" + spec.name;
    if (spec.short_name != 0) names = std::string("-") + spec.short_name + "," + names;
    CLI::Option* option = nullptr;
    if (spec.takes_value) {
      // One value per occurrence, all kept (the last one wins in value()).
      option = app.add_option(names, spec.help)
                   ->type_size(1)
                   ->expected(1)
                   ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    } else {
      option = app.add_flag(names, spec.help)->disable_flag_override();
    }
    options.emplace_back(&spec, option);
  }
  std::vector<std::string> positionals;
  auto* operands = app.add_option("operands", positionals)->take_all();
  if (options_until_operands != kAllOptions) {
    // flock(1)-style: once PATH is read, the next word and all after it are
    // the command line, its own options included.
    operands->expected(static_cast<int>(options_until_operands))->allow_extra_args(false);
    app.prefix_command();
  }
  try {
    app.parse(std::vector<std::string>(args.rbegin(), args.rend()));
  } catch (const CLI::ArgumentMismatch& e) {
    // A missing value or a value given to a flag: CLI11 names the option
    // first in its message ("--timeout: ...", "dry-run was given ...").
    const std::string what = e.what();
    const auto begin = what.find_first_not_of('-');
    const auto end = what.find_first_of(": ", begin);
    const std::string named = what.substr(begin, end - begin);
    for (const auto& spec : specs) {
      if (named != spec.name && !(named.size() == 1 && named[0] == spec.short_name)) continue;
      if (spec.takes_value)
        throw UsageError(shown_name(spec) + " needs a value (" + spec.metavar + ")");
      throw UsageError(shown_name(spec) + " takes no value");
    }
    throw UsageError(what);
  } catch (const CLI::ParseError& e) {
    throw UsageError(e.what());
  }
  ParsedArgs parsed;
  for (const auto& [spec, option] : options) {
    if (option->count() == 0) continue;
    auto& values = parsed.values_[spec->name];
    // CLI11 reads "--timeout -- cmd" as the value "--", which ends the
    // options and is no value.
    const auto& results = option->results();
    if (spec->takes_value &&
        (results.empty() || std::find(results.begin(), results.end(), "--") != results.end()))
      throw UsageError(shown_name(*spec) + " needs a value (" + spec->metavar + ")");
    if (spec->takes_value) values = results;
    else values.assign(option->count(), std::string());
  }
  parsed.operands_ = positionals;
  std::vector<std::string> rest = app.remaining();
  // "--" ends the options; CLI11 hands it back among the extras.
  bool options_ended = false;
  for (auto it = rest.begin(); it != rest.end(); ++it) {
    if (!options_ended && *it == "--") {
      options_ended = true;
      continue;
    }
    if (!options_ended && it->size() > 1 && (*it)[0] == '-')
      throw UsageError("unknown option " + *it);
    if (options_until_operands != kAllOptions) {
      parsed.operands_.insert(parsed.operands_.end(), it, rest.end());
      break;
    }
    parsed.operands_.push_back(*it);
  }
  // CLI11 reads "--timeout=" as "--timeout" and takes the next word for its
  // value: "--timeout= --connect h" lost --connect. An empty value is no
  // value. Only among our options: not after "--", nor in the command's own
  // words (`zkr lock /a curl --connect-timeout= ...` is curl's business).
  std::size_t command_words = 0;
  if (options_until_operands != kAllOptions && parsed.operands_.size() > options_until_operands)
    command_words = parsed.operands_.size() - options_until_operands;
  for (std::size_t i = 0; i + command_words < args.size() && args[i] != "--"; ++i)
    for (const auto& spec : specs)
      if (spec.takes_value && args[i] == "--" + spec.name + "=")
        throw UsageError(shown_name(spec) + " needs a value (" + spec.metavar + ")");
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

void check_label(const std::string& text, std::string_view option, std::string_view metavar) {
  const std::string named = std::string(option) + ": " + std::string(metavar);
  if (text.empty())
    throw UsageError(std::string(option) + " needs a non-empty " + std::string(metavar));
  if (text.size() > kMaxLabelBytes)
    throw UsageError(named + " is " + std::to_string(text.size()) + " bytes long, more than " +
                     std::to_string(kMaxLabelBytes));
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    // C0 controls and DEL; and C1 controls, which UTF-8 writes as C2 80..9F.
    const bool c1 = byte == 0xc2 && i + 1 < text.size() &&
                    static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(text[i + 1]) <= 0x9f;
    if (byte < 0x20 || byte == 0x7f || c1) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", c1 ? static_cast<unsigned char>(text[i + 1]) : byte);
      throw UsageError(named + " has a control character (" + std::string(hex) + ") at byte " +
                       std::to_string(i) + "; use printable text");
    }
  }
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
