#include "workloads/hbm_stream/hbm_stream.h"
#include "models/common/clock.h"
#include "platform/critical_path.h"

#include <algorithm>
#include <deque>

namespace kb {

std::uint64_t predict_dma_cycles(const Topology& topo, std::uint64_t bytes) {
  const std::uint64_t burst = topo.pe.dma.burst_bytes, bw = topo.cube.hbm.bytes_per_cycle;
  const std::uint64_t lat = topo.cube.hbm.latency_cycles, k = topo.pe.dma.outstanding;
  std::deque<std::uint64_t> answers;  // answer times of the bursts in flight window
  std::uint64_t wire_free = 0, last = 0;
  for (std::uint64_t off = 0, i = 0; off < bytes; off += burst, ++i) {
    const std::uint64_t len = std::min(burst, bytes - off);
    std::uint64_t ready = 0;
    if (answers.size() == k) {
      ready = answers.front();
      answers.pop_front();
    }
    const std::uint64_t start = std::max(ready, wire_free);
    wire_free = start + (len + bw - 1) / bw;
    last = wire_free + lat;
    answers.push_back(last);
  }
  return last;
}

StreamResult run_hbm_stream(System& system, std::uint64_t bytes_per_pe, bool write,
                            const std::vector<SipId>& sips) {
  const Topology& topo = system.topology();
  StreamResult r;
  r.bytes_per_pe = bytes_per_pe;
  r.write = write;
  const sc_core::sc_time t0 = sc_core::sc_time_stamp();
  std::vector<PeCpu*> cpus;
  for (const SipId s : sips) {
    Sip& sip = system.sip(s);
    for (std::uint32_t c = 0; c < sip.cube_count(); ++c)
      for (std::uint32_t p = 0; p < topo.cube.pes; ++p) {
        Pe& pe = sip.cube(CubeId(c)).pe(PeId(p));
        Command cmd;
        cmd.kind = write ? Command::Kind::DmaWrite : Command::Kind::DmaRead;
        cmd.address = sip.address_map().hbm(c, p, 0);
        cmd.bytes = bytes_per_pe;
        pe.cpu.load([cmd](PeCpu& cpu) { cpu.wait(cpu.issue(cmd)); });
        cpus.push_back(&pe.cpu);
        ++r.pes;
      }
  }
  sc_core::sc_start();
  const sc_core::sc_time elapsed = sc_core::sc_time_stamp() - t0;
  r.simulated_cycles = static_cast<std::uint64_t>(elapsed / cycle_time(topo) + 0.5);
  r.predicted_cycles = predict_dma_cycles(topo, bytes_per_pe);
  r.critical_path = path_cycles(device_path(cpus), topo);
  r.total_bytes = bytes_per_pe * r.pes;
  const std::uint64_t burst = topo.pe.dma.burst_bytes;
  r.bursts = (bytes_per_pe + burst - 1) / burst * r.pes;
  r.configured_bytes_per_cycle_per_pe = static_cast<double>(topo.cube.hbm.bytes_per_cycle);
  r.achieved_bytes_per_cycle_per_pe =
      r.simulated_cycles ? static_cast<double>(bytes_per_pe) / static_cast<double>(r.simulated_cycles) : 0;
  return r;
}

}  // namespace kb
