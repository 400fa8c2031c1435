#include "chaos_options.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>

#include <CLI/CLI.hpp>

namespace zkr::chaos {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

std::int64_t integer(const std::string& text, const std::string& name) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 0)
    throw std::invalid_argument(name + " needs a non-negative integer, got '" + text + "'");
  return value;
}

std::vector<std::string> parse_faults(const std::string& value) {
  if (value == "all") return kFaultKinds;
  if (value == "classic") return kClassicFaultKinds;
  if (value == "adversarial") return kAdversarialFaultKinds;
  std::vector<std::string> faults;
  if (value == "none") return faults;
  for (std::size_t at = 0; at <= value.size();) {
    const auto end = std::min(value.find(',', at), value.size());
    const auto kind = value.substr(at, end - at);
    if (std::find(kFaultKinds.begin(), kFaultKinds.end(), kind) == kFaultKinds.end())
      throw std::invalid_argument("unknown fault kind '" + kind + "'");
    faults.push_back(kind);
    at = end + 1;
  }
  return faults;
}

}  // namespace

Options parse_options(int argc, char** argv, bool have_zkr) {
  Options o;
  CLI::App app;
  app.set_help_flag();  // the usage line below is the help
  bool help = false;
  std::string seconds, seed, workers, threads, keys, supervisors, session_timeout, faults, rules;
  app.add_flag("-h,--help", help);
  app.add_flag("--keep", o.keep);
  app.add_option("--seconds", seconds);
  app.add_option("--seed", seed);
  app.add_option("--workers", workers);
  app.add_option("--threads", threads);
  app.add_option("--keys", keys);
  app.add_option("--supervisors", supervisors);
  app.add_option("--session-timeout-ms", session_timeout);
  app.add_option("--out", o.out);
  app.add_option("--check", o.check_dir);
  app.add_option("--broken", o.broken);
  app.add_option("--faults", faults);
  app.add_option("--expect-violations", rules);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    throw std::invalid_argument(e.what());
  }
  if (help)
    throw std::invalid_argument(
        "usage: zkr-chaos [--seconds N] [--seed S] [--workers N] "
        "[--threads N] [--keys N] [--session-timeout-ms N] "
        "[--faults all|none|classic|adversarial|k1,k2] [--out DIR] [--keep] "
        "[--supervisors N] "
        "[--broken nolock|unguarded|escaped] [--expect-violations=RULE,RULE] "
        "| --check RUN_DIR");
  const auto number = [&](const char* name, const std::string& text, int& into) {
    if (app.count(name) != 0) into = static_cast<int>(integer(text, name));
  };
  number("--seconds", seconds, o.seconds);
  number("--workers", workers, o.workers);
  number("--threads", threads, o.threads);
  number("--keys", keys, o.keys);
  number("--supervisors", supervisors, o.supervisors);
  if (app.count("--seed") != 0) {
    o.seed = static_cast<std::uint64_t>(integer(seed, "--seed"));
    o.seed_given = true;
  }
  if (app.count("--session-timeout-ms") != 0)
    o.session_timeout = milliseconds(integer(session_timeout, "--session-timeout-ms"));
  if (app.count("--faults") != 0) o.faults = parse_faults(faults);
  if (app.count("--expect-violations") != 0) {
    for (std::size_t at = 0; at <= rules.size();) {
      const auto end = std::min(rules.find(',', at), rules.size());
      if (end > at) o.expect_violations.push_back(rules.substr(at, end - at));
      at = end + 1;
    }
    if (o.expect_violations.empty())
      throw std::invalid_argument("--expect-violations= needs rule names");
  }
  if (o.workers < 2 || o.threads < 1 || o.keys < 2 || o.session_timeout < 1000ms)
    throw std::invalid_argument(
        "need --workers >= 2, --threads >= 1, --keys >= 2, "
        "--session-timeout-ms >= 1000 (the ensemble's minimum)");
  if (o.broken != "none" && o.broken != "nolock" && o.broken != "unguarded" &&
      o.broken != "escaped")
    throw std::invalid_argument("--broken must be nolock, unguarded or escaped");
  if (!have_zkr) o.supervisors = 0;
  if (o.broken == "escaped" && o.supervisors < 2)
    throw std::invalid_argument("--broken escaped needs --supervisors >= 2 (and the zkr tool)");
  return o;
}

}  // namespace zkr::chaos
