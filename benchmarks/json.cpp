#include "json.hpp"

#include <cmath>
#include <cstdio>

namespace zkr::bench {

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

std::string format_number(double value) {
  if (!std::isfinite(value)) return "null";
  char buf[64];
  // %.6g keeps 6 significant digits but writes 1e+06 for a million; integral
  // values below 2^53 are written as integers instead.
  if (value == std::floor(value) && std::fabs(value) < 9.0e15)
    std::snprintf(buf, sizeof buf, "%.0f", value);
  else std::snprintf(buf, sizeof buf, "%.6g", value);
  return buf;
}

JsonObject& JsonObject::raw(std::string_view key, std::string encoded) {
  fields_.emplace_back(std::string(key), std::move(encoded));
  return *this;
}
JsonObject& JsonObject::add(std::string_view key, std::string_view value) {
  return raw(key, json_string(value));
}
JsonObject& JsonObject::add(std::string_view key, bool value) {
  return raw(key, value ? "true" : "false");
}
JsonObject& JsonObject::add(std::string_view key, std::int64_t value) {
  return raw(key, std::to_string(value));
}
JsonObject& JsonObject::add(std::string_view key, std::uint64_t value) {
  return raw(key, std::to_string(value));
}
JsonObject& JsonObject::add(std::string_view key, double value) {
  return raw(key, format_number(value));
}
JsonObject& JsonObject::add(std::string_view key, const JsonObject& value) {
  return raw(key, value.str());
}
JsonObject& JsonObject::add_null(std::string_view key) { return raw(key, "null"); }
JsonObject& JsonObject::append(const JsonObject& other) {
  fields_.insert(fields_.end(), other.fields_.begin(), other.fields_.end());
  return *this;
}

std::string JsonObject::str() const {
  std::string out = "{";
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    if (i) out += ',';
    out += json_string(fields_[i].first);
    out += ':';
    out += fields_[i].second;
  }
  return out + "}";
}

}  // namespace zkr::bench
