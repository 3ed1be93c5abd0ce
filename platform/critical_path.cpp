#include "platform/critical_path.h"
#include "models/common/clock.h"
#include "models/common/path_extension.h"

#include <algorithm>
#include <stdexcept>

namespace kb {

PathEnd device_path(const std::vector<PeCpu*>& cpus) {
  PathEnd last;
  if (!cpus.empty()) last.pe = cpus.front()->coord();
  for (const PeCpu* cpu : cpus)
    if (cpu->path().at > last.account.at) last = {cpu->path(), cpu->coord()};
  return last;
}

void keep_slowest(std::optional<PathEnd>& slowest, const PathEnd& device) {
  if (!slowest || device.account.total() > slowest->account.total() ||
      (device.account.total() == slowest->account.total() && device.pe < slowest->pe))
    slowest = device;
}

void critical_spans(std::map<std::uint64_t, CriticalSpans>& spans, const PathAccount& path,
                    const sc_core::sc_time& origin, const sc_core::sc_time& cycle, std::vector<AwayWalk>* away) {
  critical_spans_from(spans, path.step, path.at, origin, cycle, away);
}

void critical_spans_from(std::map<std::uint64_t, CriticalSpans>& spans, std::uint64_t step, std::uint64_t until,
                         const sc_core::sc_time& origin, const sc_core::sc_time& cycle, std::vector<AwayWalk>* away) {
  auto cycles = [&](std::uint64_t ticks) {
    return static_cast<std::uint64_t>((sc_core::sc_time::from_value(ticks) - origin) / cycle + 0.5);
  };
  std::vector<std::uint64_t> entered;
  for (std::uint64_t s = step; s < path_steps().size(); s = path_steps()[s].before) {  // newest first
    const PathStep& at = path_steps()[s];
    if (at.op == kImported) {
      if (away == nullptr) throw std::logic_error("a chain from another process in a simulation of one");
      away->push_back({at.before, until});
      break;
    }
    if (at.op != kNoOp && until > at.at) {  // each span ends where the next one began
      spans[at.op].emplace_back(cycles(at.at), cycles(until));
      entered.push_back(at.op);
    }
    until = at.at;
  }
  // Chains of coupled SIPs share their common past: a span two of them went through counts once.
  for (const std::uint64_t op : entered) {
    std::sort(spans[op].begin(), spans[op].end());
    spans[op].erase(std::unique(spans[op].begin(), spans[op].end()), spans[op].end());
  }
}

CriticalPath path_cycles(const std::optional<PathEnd>& path, const Topology& topo) {
  if (!path) return {};
  CriticalPath c = critical_path(path->account, ticks(cycle_time(topo)));
  c.end = path->pe;
  return c;
}

}  // namespace kb
