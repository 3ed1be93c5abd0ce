#pragma once
// Per-engine use of a run, from the engines' own counters: the time each had a command
// in service (its lanes merged), commands served, bytes moved and flops, summed per SIP
// and per cube over the PEs that served anything; and each link direction's messages,
// bytes and busy time. Counters run from elaboration, so this
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
// One direction of a link between SIPs ("sip0>sip1") that carried anything.
struct LinkUse {
  std::string name;
  std::uint64_t messages = 0, bytes = 0, busy_cycles = 0;  // busy % = busy_cycles / cycles
};
struct Utilisation {
  std::uint64_t cycles = 0;  // the run's latency: busy % = busy_cycles / (cycles * pes)
  std::vector<UseRow> sips, cubes;
  std::vector<LinkUse> links{};
};
Utilisation utilisation(System& system, std::uint64_t cycles);
// Link rows by sender, then receiver ("sip1>sip0" before "sip1>switch"): the order of
// one run however its SIPs were split between processes.
void sort_links(std::vector<LinkUse>& links);

}  // namespace kb
