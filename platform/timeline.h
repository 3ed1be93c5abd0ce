#pragma once
// The timeline of a run: its op log as Chrome trace-event JSON, which Perfetto
// (ui.perfetto.dev) and chrome://tracing open. A process per SIP, a track per engine of
// each PE ("cube(1,2).pe3.gemm") and one for its kernel phases; one slice per op-log
// record with its fields as args; every message a flow arrow from its send to its recv.
// A "links" process, after the SIPs, has a track per link direction ("sip0>sip1") with a
// slice per crossing, from its first byte to its arrival; a message between SIPs flows
// from its send through each link it crossed to its recv.
// A "critical path" track first in each SIP shows its critical path (docs/critical_path.md)
// as the ops it went through, each from when the path entered it to when it entered the
// next, with the PE and engine it ran on. A SIP of CUBE groups simulated apart (the job's
// cube_groups: group_of_cube[c] is cube c's) has such a track per group.
// Given `power` (docs/energy.md), each SIP has counter tracks of its power by cause, a
// value a window.
#include <cstdint>
#include <string>
#include <vector>

#include "base/op_log.h"
#include "base/topology.h"
#include "platform/energy.h"

namespace kb {

std::string chrome_trace(const OpLog& log, const Topology& topo,
                         const std::vector<std::uint32_t>& group_of_cube = {},
                         const std::vector<PowerTrack>& power = {});

}  // namespace kb
