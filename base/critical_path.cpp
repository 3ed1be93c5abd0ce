#include "base/critical_path.h"

#include <algorithm>
#include <numeric>

namespace kb {

const char* cause_name(Cause c) {
  switch (c) {
    case Cause::Hbm: return "hbm";
    case Cause::Noc: return "noc";
    case Cause::Fabric: return "fabric";
    case Cause::Gemm: return "gemm";
    case Cause::Math: return "math";
    case Cause::Dma: return "dma";
    case Cause::Cpu: return "cpu";
    case Cause::Sync: return "sync";
    case Cause::Link: return "link";
  }
  return "?";
}

std::deque<PathStep>& path_steps() {
  static std::deque<PathStep> steps;
  return steps;
}

std::uint64_t PathAccount::total() const { return std::accumulate(spent.begin(), spent.end(), std::uint64_t{0}); }

std::uint64_t CriticalPath::total() const {
  std::uint64_t n = 0;
  for (const auto& [cause, c] : cycles) n += c;
  return n;
}

std::uint64_t CriticalPath::of(const std::string& cause) const {
  for (const auto& [name, c] : cycles)
    if (name == cause) return c;
  return 0;
}

CriticalPath critical_path(const PathAccount& account, std::uint64_t cycle_ticks) {
  std::array<std::uint64_t, kCauses> whole{}, rest{};
  for (std::size_t i = 0; i < kCauses; ++i) {
    whole[i] = account.spent[i] / cycle_ticks;
    rest[i] = account.spent[i] % cycle_ticks;
  }
  const std::uint64_t total = (account.total() + cycle_ticks / 2) / cycle_ticks;
  std::uint64_t assigned = std::accumulate(whole.begin(), whole.end(), std::uint64_t{0});
  std::array<std::size_t, kCauses> by_rest{};
  std::iota(by_rest.begin(), by_rest.end(), std::size_t{0});
  std::stable_sort(by_rest.begin(), by_rest.end(), [&](std::size_t a, std::size_t b) { return rest[a] > rest[b]; });
  for (std::size_t i = 0; i < kCauses && assigned < total; ++i, ++assigned) ++whole[by_rest[i]];
  CriticalPath p;
  for (std::size_t i = 0; i < kCauses; ++i)
    if (whole[i] > 0) p.cycles.emplace_back(cause_name(static_cast<Cause>(i)), whole[i]);
  std::stable_sort(p.cycles.begin(), p.cycles.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return p;
}

}  // namespace kb
