#pragma once
// Parsing of quantities with units, as written in topology YAML and --set values.
#include <cstdint>
#include <optional>
#include <string>

namespace kb::units {

// "1MiB", "2KiB", "512B", "4096" -> bytes. Binary (KiB) and decimal (KB) prefixes.
std::optional<std::uint64_t> parse_bytes(const std::string& text);
// "64B/cycle", "2KiB/cycle", "64" -> bytes per cycle.
std::optional<std::uint64_t> parse_bytes_per_cycle(const std::string& text);
// "120cycles", "1 cycle", "120" -> cycles.
std::optional<std::uint64_t> parse_cycles(const std::string& text);
// "150GB/s", "64GiB/s", "1TB/s" -> bytes per second.
std::optional<std::uint64_t> parse_bytes_per_second(const std::string& text);
// "500ns", "2us", "750ps", "1ms" -> picoseconds.
std::optional<std::uint64_t> parse_picoseconds(const std::string& text);
// "1GHz", "500MHz", "1.5GHz" -> hertz.
std::optional<double> parse_hertz(const std::string& text);
// "31.2pJ/B", "0.5 pJ/MAC", "10W", "50mW": a non-negative decimal with an SI prefix
// (f, p, n, u, m, k or none) on `unit` ("J/B", "J/MAC", "J/op", "W"), in `unit` times
// 10^`scale` (parse_quantity("31.2pJ/B", "J/B", -12) is 31.2). Nothing without the unit.
std::optional<double> parse_quantity(const std::string& text, const std::string& unit, int scale);
// A plain non-negative whole number.
std::optional<std::uint64_t> parse_count(const std::string& text);

// Human-readable forms for reports.
std::string format_bytes(std::uint64_t bytes);
std::string format_hex(std::uint64_t value);  // 0x1f00
std::string format_hertz(double hz);
// Seconds in the shortest fixed-point form that reads back as the same number: 0.5,
// 2000000, 0.000001.
std::string format_seconds(double seconds);

}  // namespace kb::units
