// A tiny JSON object writer: fields keep the order they were added in, which
// makes the JSON lines easy to read and to diff between runs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace zkr::bench {

class JsonObject {
 public:
  JsonObject& add(std::string_view key, std::string_view value);
  JsonObject& add(std::string_view key, const char* value) {
    return add(key, std::string_view(value));
  }
  JsonObject& add(std::string_view key, const std::string& value) {
    return add(key, std::string_view(value));
  }
  JsonObject& add(std::string_view key, bool value);
  JsonObject& add(std::string_view key, std::int64_t value);
  JsonObject& add(std::string_view key, std::uint64_t value);
  JsonObject& add(std::string_view key, int value) { return add(key, std::int64_t{value}); }
  JsonObject& add(std::string_view key, unsigned value) { return add(key, std::uint64_t{value}); }
  // Finite numbers with up to 6 significant decimals; NaN and infinities as null.
  JsonObject& add(std::string_view key, double value);
  JsonObject& add(std::string_view key, const JsonObject& value);
  JsonObject& add_null(std::string_view key);
  // Every field of other, after ours.
  JsonObject& append(const JsonObject& other);

  bool empty() const noexcept { return fields_.empty(); }
  const std::vector<std::pair<std::string, std::string>>& fields() const noexcept {
    return fields_;
  }
  std::string str() const;  // {"a":1,"b":"x"}

 private:
  JsonObject& raw(std::string_view key, std::string encoded);
  std::vector<std::pair<std::string, std::string>> fields_;  // key, encoded value
};

std::string json_string(std::string_view text);  // quoted and escaped
std::string format_number(double value);         // as add(double) writes it

}  // namespace zkr::bench
