#include "base/units.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

namespace kb::units {
namespace {

std::string trim(const std::string& s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// Splits "64 KiB" into a whole number and its unit suffix (spaces ignored).
std::optional<std::pair<std::uint64_t, std::string>> split_whole(const std::string& text) {
  const std::string s = trim(text);
  std::size_t i = 0;
  std::uint64_t value = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    const std::uint64_t digit = static_cast<std::uint64_t>(s[i] - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
    ++i;
  }
  if (i == 0) return std::nullopt;
  return std::make_pair(value, trim(s.substr(i)));
}

// Splits "1.5 GHz" into a non-negative decimal and its unit suffix (spaces ignored).
std::optional<std::pair<double, std::string>> split_decimal(const std::string& text) {
  const std::string s = trim(text);
  std::size_t i = 0;
  bool dot = false;
  while (i < s.size() &&
         (std::isdigit(static_cast<unsigned char>(s[i])) || (s[i] == '.' && !dot))) {
    dot = dot || s[i] == '.';
    ++i;
  }
  if (i == 0 || s.substr(0, i) == ".") return std::nullopt;
  const double v =
      std::strtod(s.substr(0, i).c_str(), nullptr);  // no throw: 400 digits read as inf
  if (!std::isfinite(v)) return std::nullopt;
  return std::make_pair(v, trim(s.substr(i)));
}

std::optional<std::uint64_t> multiply(std::uint64_t v, std::uint64_t m) {
  if (m != 0 && v > std::numeric_limits<std::uint64_t>::max() / m) return std::nullopt;
  return v * m;
}

std::optional<std::uint64_t> byte_multiplier(const std::string& unit) {
  static const std::pair<const char*, std::uint64_t> table[] = {
      {"", 1},           {"B", 1},          {"KiB", 1ull << 10}, {"MiB", 1ull << 20},
      {"GiB", 1ull << 30}, {"TiB", 1ull << 40}, {"KB", 1000ull},   {"MB", 1000000ull},
      {"GB", 1000000000ull}, {"TB", 1000000000000ull}};
  for (const auto& [name, mult] : table)
    if (unit == name) return mult;
  return std::nullopt;
}

}  // namespace

std::optional<std::uint64_t> parse_bytes(const std::string& text) {
  const auto parts = split_whole(text);
  if (!parts) return std::nullopt;
  const auto mult = byte_multiplier(parts->second);
  if (!mult) return std::nullopt;
  return multiply(parts->first, *mult);
}

std::optional<std::uint64_t> parse_bytes_per_cycle(const std::string& text) {
  const std::string s = trim(text);
  const auto slash = s.find('/');
  if (slash == std::string::npos) return parse_bytes(s);
  if (trim(s.substr(slash + 1)) != "cycle") return std::nullopt;
  return parse_bytes(s.substr(0, slash));
}

std::optional<std::uint64_t> parse_cycles(const std::string& text) {
  const auto parts = split_whole(text);
  if (!parts) return std::nullopt;
  const std::string& unit = parts->second;
  if (unit.empty() || unit == "cycle" || unit == "cycles") return parts->first;
  return std::nullopt;
}

std::optional<std::uint64_t> parse_bytes_per_second(const std::string& text) {
  const std::string s = trim(text);
  const auto slash = s.find('/');
  if (slash == std::string::npos || trim(s.substr(slash + 1)) != "s") return std::nullopt;
  return parse_bytes(s.substr(0, slash));
}

std::optional<std::uint64_t> parse_picoseconds(const std::string& text) {
  const auto parts = split_whole(text);
  if (!parts) return std::nullopt;
  static const std::pair<const char*, std::uint64_t> table[] = {
      {"ps", 1}, {"ns", 1000}, {"us", 1000000}, {"ms", 1000000000}};
  for (const auto& [name, mult] : table)
    if (parts->second == name) return multiply(parts->first, mult);
  return std::nullopt;
}

std::optional<double> parse_hertz(const std::string& text) {
  const auto parts = split_decimal(text);
  if (!parts) return std::nullopt;
  const auto& [value, unit] = *parts;
  double mult = 0;
  if (unit == "Hz") mult = 1;
  else if (unit == "kHz") mult = 1e3;
  else if (unit == "MHz") mult = 1e6;
  else if (unit == "GHz") mult = 1e9;
  else return std::nullopt;
  const double hz = value * mult;
  if (!std::isfinite(hz)) return std::nullopt;
  return hz;
}

std::optional<double> parse_quantity(const std::string& text, const std::string& unit, int scale) {
  const auto parts = split_decimal(text);
  if (!parts || parts->second.size() < unit.size() ||
      parts->second.compare(parts->second.size() - unit.size(), unit.size(), unit) != 0)
    return std::nullopt;
  const std::string prefix = parts->second.substr(0, parts->second.size() - unit.size());
  static const std::pair<const char*, int> prefixes[] = {
      {"f", -15}, {"p", -12}, {"n", -9}, {"u", -6}, {"m", -3}, {"", 0}, {"k", 3}};
  for (const auto& [name, exponent] : prefixes)
    if (prefix == name) {
      const double v = parts->first * std::pow(10.0, exponent - scale);
      return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
    }
  return std::nullopt;
}

std::optional<std::uint64_t> parse_count(const std::string& text) {
  const auto parts = split_whole(text);
  if (!parts || !parts->second.empty()) return std::nullopt;
  return parts->first;
}

std::string format_hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

std::string format_bytes(std::uint64_t bytes) {
  static const char* names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  std::uint64_t v = bytes;
  while (unit < 4 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++unit;
  }
  return std::to_string(v) + names[unit];
}

std::string format_hertz(double hz) {
  char buf[64];
  if (hz >= 1e9) std::snprintf(buf, sizeof buf, "%gGHz", hz / 1e9);
  else if (hz >= 1e6) std::snprintf(buf, sizeof buf, "%gMHz", hz / 1e6);
  else std::snprintf(buf, sizeof buf, "%gHz", hz);
  return buf;
}

std::string format_seconds(double seconds) {
  char buf[512];
  const auto r = std::to_chars(buf, buf + sizeof buf, seconds, std::chars_format::fixed);
  return r.ec == std::errc() ? std::string(buf, r.ptr) : std::to_string(seconds);
}

}  // namespace kb::units
