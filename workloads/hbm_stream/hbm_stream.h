#pragma once
// The foundation's workload: every PE of the chosen SIPs streams `bytes` from (or to)
// its own HBM channel through its DMA, and the result is compared with what the
// configured bandwidth, latency and outstanding-burst limit predict.
#include <cstdint>
#include <vector>

#include "base/critical_path.h"
#include "models/sip/system.h"

namespace kb {

struct StreamResult {
  std::uint64_t bytes_per_pe = 0;
  std::uint32_t pes = 0;
  bool write = false;
  std::uint64_t simulated_cycles = 0;   // until the last PE finished
  std::uint64_t predicted_cycles = 0;   // the DMA/HBM formula for one channel
  std::uint64_t total_bytes = 0;
  std::uint64_t bursts = 0;             // DMA<->HBM transactions in the run
  double achieved_bytes_per_cycle_per_pe = 0;
  double configured_bytes_per_cycle_per_pe = 0;
  CriticalPath critical_path;           // of the PE that finished last
};

// The pipelined-burst schedule of one DMA command on an idle channel:
// burst i starts when the wire is free and one of the `outstanding` slots is;
// it answers after bytes/bw + latency.
std::uint64_t predict_dma_cycles(const Topology& topo, std::uint64_t bytes);

// Runs the workload to completion (calls sc_start).
StreamResult run_hbm_stream(System& system, std::uint64_t bytes_per_pe, bool write,
                            const std::vector<SipId>& sips);

}  // namespace kb
