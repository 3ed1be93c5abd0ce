#pragma once
// Per-engine use of a run, from the engines' own counters: the time each had a command
// in service (its lanes merged), commands served, bytes moved and flops, summed per SIP
// and per cube over the PEs that served anything. Counters run from elaboration, so this
// describes every run of the System so far.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/sip/system.h"

namespace kb {

struct EngineUse {
  std::uint64_t ops = 0, busy_cycles = 0, bytes = 0, flops = 0;
};
struct UseRow {
  std::string where;  // "sip0" or "sip0.cube3"
  std::uint32_t pes = 0;
  std::map<std::string, EngineUse> engines;  // dma, gemm, ipcq, math
};
struct Utilisation {
  std::uint64_t cycles = 0;  // the run's latency: busy % = busy_cycles / (cycles * pes)
  std::vector<UseRow> sips, cubes;
};
Utilisation utilisation(System& system, std::uint64_t cycles);

}  // namespace kb
