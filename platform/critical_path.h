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
// The spans of the device's path `path` (from `origin`, in cycles of `cycle`) spent in
// each op-log record it entered, by record id: from when it entered the op until it
// entered the next one. Added to `spans`.
void critical_spans(std::map<std::uint64_t, CriticalSpans>& spans, const PathAccount& path,
                    const sc_core::sc_time& origin, const sc_core::sc_time& cycle);

}  // namespace kb
