// The chaos suite's record format, shared by the worker (which writes it), the
// nemesis (which writes its own) and the checker (which only reads).
//
// One event per line: "<monotonic_ns> <event> key=value key=value ...".
// CLOCK_MONOTONIC is one clock for every process on the machine, so lines of
// different files can be compared. Values never contain spaces (writers pass
// them through `word`). Lines are written with one write(2) each on an
// O_APPEND descriptor, so a process killed with SIGKILL loses no line it
// finished, and lines of concurrent threads never interleave.
//
//   zkr::chaos::EventLog log("/tmp/run/worker-1.log");
//   log.write("enter", {{"op", "1.0.0.7"}, {"tokens", "k0:4294967391"}});
//   for (const auto& e : zkr::chaos::read_events("/tmp/run/worker-1.log")) ...
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace zkr::chaos {

// CLOCK_MONOTONIC in nanoseconds.
std::int64_t monotonic_ns();

// A value made safe for the format: spaces and control characters become '_'.
std::string word(std::string_view text);

// Lowercase hex of arbitrary bytes (session passwords), and back.
std::string to_hex(std::string_view bytes);
std::string from_hex(std::string_view hex);

using Fields = std::vector<std::pair<std::string, std::string>>;

class EventLog {
 public:
  // Creates or appends to path; throws std::system_error if it cannot.
  explicit EventLog(const std::string& path);
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // Stamps the line with monotonic_ns() (or `at`) and writes it. Never throws:
  // a record that cannot be written is lost, and the checker then sees less,
  // never more, than happened.
  void write(std::string_view event, const Fields& fields,
             std::optional<std::int64_t> at = {}) noexcept;

 private:
  int fd_ = -1;
};

struct Event {
  std::int64_t at = 0;
  std::string name;
  std::map<std::string, std::string> fields;
  int line = 0;

  // The field, or "" if absent.
  const std::string& get(const std::string& key) const;
  // The field as an integer; throws std::invalid_argument naming it if absent or bad.
  std::int64_t integer(const std::string& key) const;
};

// Parses one line; throws std::invalid_argument saying what is wrong.
Event parse_event(std::string_view line);

// Every complete line of a file (a last line without its newline, cut by a
// SIGKILL mid-write, is ignored). Throws std::runtime_error naming the file
// and line on a malformed line or if it cannot be opened.
std::vector<Event> read_events(const std::string& path);

// "k0:5,k1:7" -> {{"k0",5},{"k1",7}}; throws std::invalid_argument.
std::vector<std::pair<std::string, std::int64_t>> parse_key_ints(std::string_view text);
std::string format_key_ints(const std::vector<std::pair<std::string, std::int64_t>>& items);

}  // namespace zkr::chaos
