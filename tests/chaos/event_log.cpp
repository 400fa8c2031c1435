#include "event_log.hpp"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace zkr::chaos {

std::int64_t monotonic_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

std::string word(std::string_view text) {
  std::string out(text);
  for (auto& c : out)
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) c = '_';
  return out.empty() ? "-" : out;
}

std::string to_hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

std::string from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0) throw std::invalid_argument("odd-length hex '" + std::string(hex) + "'");
  std::string out;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    unsigned value = 0;
    const auto [end, error] = std::from_chars(hex.data() + i, hex.data() + i + 2, value, 16);
    if (error != std::errc() || end != hex.data() + i + 2)
      throw std::invalid_argument("bad hex '" + std::string(hex) + "'");
    out.push_back(static_cast<char>(value));
  }
  return out;
}

EventLog::EventLog(const std::string& path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "open " + path);
}

EventLog::~EventLog() {
  if (fd_ >= 0) ::close(fd_);
}

void EventLog::write(std::string_view event, const Fields& fields,
                     std::optional<std::int64_t> at) noexcept {
  try {
    std::string line = std::to_string(at.value_or(monotonic_ns())) + " " + word(event);
    for (const auto& [key, value] : fields) line += " " + word(key) + "=" + word(value);
    line += "\n";
    // One write per line: O_APPEND makes it atomic with respect to other writers.
    std::size_t done = 0;
    while (done < line.size()) {
      const auto n = ::write(fd_, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      done += static_cast<std::size_t>(n);
    }
  } catch (...) {
  }
}

const std::string& Event::get(const std::string& key) const {
  static const std::string kEmpty;
  const auto it = fields.find(key);
  return it == fields.end() ? kEmpty : it->second;
}

namespace {
std::int64_t parse_int(std::string_view text, std::string_view what) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size())
    throw std::invalid_argument(std::string(what) + " '" + std::string(text) +
                                "' is not an integer");
  return value;
}
}  // namespace

std::int64_t Event::integer(const std::string& key) const {
  const auto it = fields.find(key);
  if (it == fields.end()) throw std::invalid_argument("event '" + name + "' has no field " + key);
  return parse_int(it->second, key);
}

Event parse_event(std::string_view line) {
  Event event;
  std::size_t at = 0;
  int index = 0;
  while (at < line.size()) {
    const auto start = line.find_first_not_of(' ', at);
    if (start == std::string_view::npos) break;
    const auto end = std::min(line.find(' ', start), line.size());
    const auto token = line.substr(start, end - start);
    if (index == 0) {
      event.at = parse_int(token, "time");
    } else if (index == 1) {
      event.name = std::string(token);
    } else {
      const auto eq = token.find('=');
      if (eq == std::string_view::npos || eq == 0)
        throw std::invalid_argument("field '" + std::string(token) + "' is not key=value");
      event.fields[std::string(token.substr(0, eq))] = std::string(token.substr(eq + 1));
    }
    ++index;
    at = end;
  }
  if (index < 2)
    throw std::invalid_argument("expected '<ns> <event> ...', got '" + std::string(line) + "'");
  return event;
}

std::vector<Event> read_events(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  std::vector<Event> events;
  std::size_t at = 0;
  int number = 0;
  while (at < text.size()) {
    const auto newline = text.find('\n', at);
    if (newline == std::string::npos) break;  // cut short by a kill: not a record
    ++number;
    const std::string_view line(text.data() + at, newline - at);
    at = newline + 1;
    if (line.find_first_not_of(' ') == std::string_view::npos) continue;
    try {
      events.push_back(parse_event(line));
      events.back().line = number;
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(path + ":" + std::to_string(number) + ": " + e.what());
    }
  }
  return events;
}

std::vector<std::pair<std::string, std::int64_t>> parse_key_ints(std::string_view text) {
  std::vector<std::pair<std::string, std::int64_t>> items;
  if (text == "-") return items;
  std::size_t at = 0;
  while (at < text.size()) {
    const auto end = std::min(text.find(',', at), text.size());
    const auto item = text.substr(at, end - at);
    const auto colon = item.rfind(':');
    if (colon == std::string_view::npos || colon == 0)
      throw std::invalid_argument("'" + std::string(item) + "' is not key:integer");
    items.emplace_back(std::string(item.substr(0, colon)),
                       parse_int(item.substr(colon + 1), "value"));
    at = end + 1;
  }
  return items;
}

std::string format_key_ints(const std::vector<std::pair<std::string, std::int64_t>>& items) {
  std::string out;
  for (const auto& [key, value] : items) {
    if (!out.empty()) out += ",";
    out += key + ":" + std::to_string(value);
  }
  return out.empty() ? "-" : out;
}

}  // namespace zkr::chaos
