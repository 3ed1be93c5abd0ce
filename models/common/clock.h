#pragma once
// The PE clock of a topology as SystemC time. Lives with the models so the topology
// itself stays free of SystemC.
#include <systemc>

#include "base/topology.h"

namespace kb {

inline sc_core::sc_time cycle_time(const Topology& topo) { return sc_core::sc_time(1.0 / topo.pe.clock_hz, sc_core::SC_SEC); }

}  // namespace kb
