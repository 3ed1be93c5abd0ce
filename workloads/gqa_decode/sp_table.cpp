#include "workloads/gqa_decode/sp_table.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <tuple>

namespace kb::gqa {

SpTable SpTable::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("SP table " + path + ": cannot be read");
  SpTable t;
  try {
    const auto j = nlohmann::json::parse(in);
    t.topology = j.at("topology").get<std::string>();
    const auto& shape = j.at("shape");
    t.h_q = shape.at("heads_q");
    t.h_kv = shape.at("heads_kv");
    t.d = shape.at("head_dim");
    t.t_q = shape.at("q_len");
    for (const auto& e : j.at("entries"))
      t.entries.push_back({e.at("seq_len"), e.at("cubes_per_group"), e.at("pes"), e.at("cycles")});
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument("SP table " + path + ": " + e.what());
  }
  if (t.entries.empty()) throw std::invalid_argument("SP table " + path + ": has no entries");
  return t;
}

nlohmann::json SpTable::to_json() const {
  std::vector<Entry> sorted = entries;
  std::sort(sorted.begin(), sorted.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.s, a.cubes, a.pes) < std::tie(b.s, b.cubes, b.pes);
  });
  nlohmann::json out = nlohmann::json::array();
  for (const Entry& e : sorted)
    out.push_back({{"seq_len", e.s}, {"cubes_per_group", e.cubes}, {"pes", e.pes}, {"cycles", e.cycles}});
  return {{"topology", topology},
          {"shape", {{"heads_q", h_q}, {"heads_kv", h_kv}, {"head_dim", d}, {"q_len", t_q}}},
          {"entries", out}};
}

std::pair<std::uint32_t, std::uint32_t> SpTable::choose(std::uint64_t s, std::optional<std::uint32_t> cubes,
                                                        std::optional<std::uint32_t> pes) const {
  auto fits = [&](const Entry& e) { return (!cubes || e.cubes == *cubes) && (!pes || e.pes == *pes); };
  // The swept S to use: the largest not above s (or the smallest, below the table).
  std::optional<std::uint64_t> at;
  for (const Entry& e : entries)
    if (fits(e) && e.s <= s && (!at || e.s > *at)) at = e.s;
  if (!at)
    for (const Entry& e : entries)
      if (fits(e) && (!at || e.s < *at)) at = e.s;
  if (!at) throw std::invalid_argument("the SP table has no entry with that C and P");
  // Fastest; on a tie the fewer ranks, then the fewer cubes.
  const Entry* best = nullptr;
  for (const Entry& e : entries)
    if (fits(e) && e.s == *at &&
        (!best || std::make_tuple(e.cycles, e.cubes * e.pes, e.cubes) <
                      std::make_tuple(best->cycles, best->cubes * best->pes, best->cubes)))
      best = &e;
  return {best->cubes, best->pes};
}

}  // namespace kb::gqa
