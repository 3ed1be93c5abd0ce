#pragma once
// The SP-enable table: decode latency measured for each (C, P) at each swept context
// length S, from `kernbench bench gqa_llama70b`. The driver (`run --cubes-per-group auto`,
// `--pes auto`) picks the (C, P) with the lowest latency at the largest swept S not above
// the requested one. A table holds for the topology and shape it was measured on.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace kb::gqa {

struct SpTable {
  struct Entry {
    std::uint64_t s = 0;
    std::uint32_t cubes = 0, pes = 0;
    std::uint64_t cycles = 0;
  };
  std::string topology;  // the topology's name
  std::uint32_t h_q = 0, h_kv = 0, d = 0, t_q = 0;
  std::vector<Entry> entries;

  // Throws std::invalid_argument naming the file and what is wrong.
  static SpTable load(const std::string& path);
  nlohmann::json to_json() const;

  // The fastest (C, P) for context `s`; a given C or P is kept and only the other chosen.
  // Throws std::invalid_argument when no entry fits.
  std::pair<std::uint32_t, std::uint32_t> choose(std::uint64_t s, std::optional<std::uint32_t> cubes,
                                                 std::optional<std::uint32_t> pes) const;
};

}  // namespace kb::gqa
