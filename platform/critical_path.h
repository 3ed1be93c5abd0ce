#pragma once
// A run's critical path (docs/critical_path.md): the account of the PE program that
// finished last on the slowest device, in cycles per cause.
#include <map>
#include <optional>
#include <vector>

#include "base/critical_path.h"
#include "base/op_log.h"
#include "base/topology.h"
#include "models/pe/pe_cpu.h"

namespace kb {

// A program's account and its PE.
struct PathEnd {
  PathAccount account;
  PeCoord pe;
};
// A unit's critical path (a device, or a CUBE group of it): the account of its program
// that finished last (the first of them on a tie).
PathEnd device_path(const std::vector<PeCpu*>& cpus);
// Keeps in `slowest` the longer of it and `device`; on a tie, the one ending on the lower
// PE (as Result::merge picks among the parts of a split run, whose groups may interleave).
void keep_slowest(std::optional<PathEnd>& slowest, const PathEnd& device);
// In cycles of the topology's clock (empty for no path).
CriticalPath path_cycles(const std::optional<PathEnd>& path, const Topology& topo);
// Where a chain's walk goes on in another process of a parallel simulation: from its
// import number `import`, its spans there ending at `until` (ticks).
struct AwayWalk {
  std::uint64_t import, until;
};
// The spans of the device's path `path` (from `origin`, in cycles of `cycle`) spent in
// each op-log record it entered, by record id: from when it entered the op until it
// entered the next one. Added to `spans`. A walk that reaches a chain's past in another
// process stops there and is added to `away` (which a parallel simulation gives).
void critical_spans(std::map<std::uint64_t, CriticalSpans>& spans, const PathAccount& path,
                    const sc_core::sc_time& origin, const sc_core::sc_time& cycle,
                    std::vector<AwayWalk>* away = nullptr);
// The same from step `step` of path_steps(), the newer span ending at `until`.
void critical_spans_from(std::map<std::uint64_t, CriticalSpans>& spans, std::uint64_t step, std::uint64_t until,
                         const sc_core::sc_time& origin, const sc_core::sc_time& cycle, std::vector<AwayWalk>* away);

}  // namespace kb
