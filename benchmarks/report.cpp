#include "report.hpp"

#include <cstdarg>
#include <cstdio>
#include <iostream>
#include <stdexcept>

namespace zkr::bench {
namespace {

// One line; a string that is not UTF-8 (a server's error text, say) gets
// U+FFFD rather than ending the run.
std::string dump(const nlohmann::ordered_json& o) {
  return o.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string format_fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// A cell of the table: right-aligned to width, or left-aligned when width < 0.
std::string cell(const std::string& text, int width) {
  const auto w = static_cast<std::size_t>(width < 0 ? -width : width);
  if (text.size() >= w) return text;
  const std::string pad(w - text.size(), ' ');
  return width < 0 ? text + pad : pad + text;
}

}  // namespace

std::string strprintf(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

Reporter::Reporter(bool json, const std::optional<std::string>& out_dir) : json_(json) {
  if (out_dir) {
    const std::string path = *out_dir + "/results.jsonl";
    jsonl_.open(path, std::ios::trunc);
    if (!jsonl_) throw std::runtime_error("cannot write " + path);
  }
}

void Reporter::set_floor(double ops_per_sec, double p50_ms) {
  floor_rate_ = ops_per_sec;
  floor_p50_ = p50_ms;
}

std::optional<Reporter::FloorFigures> Reporter::floor_for(const Record& r) const {
  if (r.impl == "floor" || !r.latency) return std::nullopt;
  for (const auto& f : records_)
    if (f.impl == "floor" && f.workload == r.workload && f.added_rtt_ms == r.added_rtt_ms &&
        f.latency)
      return FloorFigures{f.ops_per_sec(), f.latency->p50_ms};
  if (!floor_rate_ || *floor_rate_ <= 0) return std::nullopt;
  return FloorFigures{*floor_rate_, floor_p50_.value_or(0)};
}

std::string Reporter::json_of(const Record& r) const {
  nlohmann::ordered_json o;
  o["impl"] = r.impl;
  o["workload"] = r.workload;
  o["params"] = r.params;
  if (r.workload == "W1" || r.workload == "W2") o["added_rtt_ms"] = r.added_rtt_ms;
  o["ops"] = r.ops;
  o["seconds"] = r.seconds;
  o["ops_per_sec"] = r.ops_per_sec();
  if (r.latency) {
    o["p50_ms"] = r.latency->p50_ms;
    o["p99_ms"] = r.latency->p99_ms;
    o["max_ms"] = r.latency->max_ms;
  } else {
    o["p50_ms"] = nullptr;
    o["p99_ms"] = nullptr;
    o["max_ms"] = nullptr;
  }
  if (const auto floor = floor_for(r)) {
    if (floor->rate > 0) o["x_floor_rate"] = r.ops_per_sec() / floor->rate;
    if (floor->p50_ms > 0) o["x_floor_p50"] = r.latency->p50_ms / floor->p50_ms;
  }
  if (r.requests_per_op) o["requests_per_op"] = *r.requests_per_op;
  if (r.writes_per_op) o["writes_per_op"] = *r.writes_per_op;
  // The workload's own fields after the common ones.
  for (const auto& [key, value] : r.extra.items()) o[key] = value;
  return dump(o);
}

void Reporter::add(Record record) {
  const std::string line = json_of(record);
  if (json_) std::cout << line << std::endl;
  if (jsonl_.is_open()) jsonl_ << line << '\n' << std::flush;
  std::string say = "bench: " + record.impl + " " + record.workload;
  if (!record.label.empty()) say += " " + record.label;
  say += ": " + std::to_string(record.ops) + " ops in " + format_fixed(record.seconds, 2) + " s";
  if (record.latency)
    say += ", " + format_fixed(record.ops_per_sec(), 1) + "/s, p50 " +
           format_fixed(record.latency->p50_ms, 2) + " ms, p99 " +
           format_fixed(record.latency->p99_ms, 2) + " ms";
  if (!record.note.empty()) say += " (" + record.note + ")";
  std::cerr << say << std::endl;
  records_.push_back(std::move(record));
}

void Reporter::verdict(Verdict v) { verdicts_.push_back(std::move(v)); }

bool Reporter::any_check_failed() const {
  for (const auto& v : verdicts_)
    if (v.check && !v.met) return true;
  return false;
}

bool Reporter::any_target_missed() const {
  for (const auto& v : verdicts_)
    if (!v.check && v.meaningful && !v.met) return true;
  return false;
}

std::string Reporter::table() const {
  std::string out;
  const auto row = [&](const std::vector<std::pair<std::string, int>>& cells) {
    std::string line;
    for (const auto& [text, width] : cells) line += cell(text, width) + "  ";
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + '\n';
  };
  row({{"impl", -11},
       {"workload", -8},
       {"params", -22},
       {"ops", 8},
       {"s", 7},
       {"ops/s", 9},
       {"p50 ms", 8},
       {"p99 ms", 8},
       {"max ms", 8},
       {"x floor/s", 9},
       {"x floor p50", 11},
       {"req/op", 6},
       {"wr/op", 5},
       {"notes", -5}});
  for (const auto& r : records_) {
    const auto floor = floor_for(r);
    row({{r.impl, -11},
         {r.workload, -8},
         {r.label, -22},
         {std::to_string(r.ops), 8},
         {format_fixed(r.seconds, 2), 7},
         {format_fixed(r.ops_per_sec(), 1), 9},
         {r.latency ? format_fixed(r.latency->p50_ms, 2) : "-", 8},
         {r.latency ? format_fixed(r.latency->p99_ms, 2) : "-", 8},
         {r.latency ? format_fixed(r.latency->max_ms, 2) : "-", 8},
         {floor && floor->rate > 0 ? format_fixed(r.ops_per_sec() / floor->rate, 2) : "-", 9},
         {floor && floor->p50_ms > 0 ? format_fixed(r.latency->p50_ms / floor->p50_ms, 2) : "-",
          11},
         {r.requests_per_op ? format_fixed(*r.requests_per_op, 2) : "-", 6},
         {r.writes_per_op ? format_fixed(*r.writes_per_op, 2) : "-", 5},
         {r.note, -5}});
  }
  if (!verdicts_.empty()) {
    out += "\nTargets and checks:\n";
    for (const auto& v : verdicts_) {
      std::string status = v.met ? "met" : (v.check ? "FAILED" : "MISSED");
      if (!v.meaningful) status += " (quick sizes: not meaningful)";
      out += "  [" + std::string(v.check ? "check " : "target") + "] " + v.name + ": " + status +
             " -- " + v.detail + '\n';
    }
  }
  return out;
}

std::string Reporter::verdicts_json() const {
  std::string out = "[";
  for (std::size_t i = 0; i < verdicts_.size(); ++i) {
    const auto& v = verdicts_[i];
    nlohmann::ordered_json o;
    o["name"] = v.name;
    o["kind"] = v.check ? "check" : "target";
    o["met"] = v.met;
    o["meaningful"] = v.meaningful;
    o["detail"] = v.detail;
    out += (i ? ",\n " : "") + dump(o);
  }
  return out + "]\n";
}

}  // namespace zkr::bench
