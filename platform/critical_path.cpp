#include "platform/critical_path.h"
#include "models/common/clock.h"
#include "models/common/path_extension.h"

#include <algorithm>

namespace kb {

PathAccount device_path(const std::vector<PeCpu*>& cpus) {
  PathAccount last;
  for (const PeCpu* cpu : cpus) last.join(cpu->path());
  return last;
}

void keep_slowest(std::optional<PathAccount>& slowest, const PathAccount& device) {
  if (!slowest || device.total() > slowest->total()) slowest = device;
}

void mark_critical(OpLog& log, const PathAccount& path, const sc_core::sc_time& origin, const sc_core::sc_time& cycle) {
  auto cycles = [&](std::uint64_t ticks) {
    return static_cast<std::uint64_t>((sc_core::sc_time::from_value(ticks) - origin) / cycle + 0.5);
  };
  std::vector<const PathStep*> steps;  // newest first
  for (std::uint64_t s = path.step; s < path_steps().size(); s = path_steps()[s].before)
    steps.push_back(&path_steps()[s]);
  std::uint64_t until = path.at;
  for (const PathStep* s : steps) {  // each span ends where the next one began
    if (s->op < log.size() && until > s->at) log.at(s->op).critical.emplace_back(cycles(s->at), cycles(until));
    until = s->at;
  }
  for (const PathStep* s : steps)
    if (s->op < log.size()) std::sort(log.at(s->op).critical.begin(), log.at(s->op).critical.end());
}

CriticalPath path_cycles(const std::optional<PathAccount>& path, const Topology& topo) {
  if (!path) return {};
  return critical_path(*path, ticks(cycle_time(topo)));
}

}  // namespace kb
