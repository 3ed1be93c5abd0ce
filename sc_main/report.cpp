#include "sc_main/report.h"

#include <cstdio>

#include <sys/resource.h>

#include "platform/units.h"

namespace kb::report {

long peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

std::string format_stream(const Topology& topo, const StreamResult& r, const RunInfo& info) {
  const double ns_per_cycle = 1e9 / topo.pe.clock_hz;
  const double efficiency = r.achieved_bytes_per_cycle_per_pe / r.configured_bytes_per_cycle_per_pe;
  const double agg_tbs = static_cast<double>(r.total_bytes) /
                         (static_cast<double>(r.simulated_cycles) * ns_per_cycle * 1e-9) / 1e12;
  const double deviation = r.predicted_cycles
                               ? (static_cast<double>(r.simulated_cycles) - static_cast<double>(r.predicted_cycles)) /
                                     static_cast<double>(r.predicted_cycles)
                               : 0;
  std::string s;
  char line[256];
  auto add = [&](const char* fmt, auto... args) {
    std::snprintf(line, sizeof line, fmt, args...);
    s += line;
  };
  add("kernbench: hbm_stream on %s (%s)\n", info.topology_name.c_str(), info.topology_file.c_str());
  add("  workload        every PE %s %s %s its own HBM channel (%u PEs)\n",
      r.write ? "writes" : "reads", units::format_bytes(r.bytes_per_pe).c_str(),
      r.write ? "to" : "from", r.pes);
  add("  simulated       %llu cycles = %.3f us\n",
      static_cast<unsigned long long>(r.simulated_cycles),
      static_cast<double>(r.simulated_cycles) * ns_per_cycle / 1e3);
  add("  predicted       %llu cycles (burst pipeline: %s bursts, %u outstanding, %lluB/cycle, "
      "latency %llu)\n",
      static_cast<unsigned long long>(r.predicted_cycles),
      units::format_bytes(topo.pe.dma.burst_bytes).c_str(), topo.pe.dma.outstanding,
      static_cast<unsigned long long>(topo.cube.hbm.bytes_per_cycle),
      static_cast<unsigned long long>(topo.cube.hbm.latency_cycles));
  add("  model vs sim    %+.2f%%\n", deviation * 100);
  add("  bytes moved     %s\n", units::format_bytes(r.total_bytes).c_str());
  add("  bandwidth       %.2f B/cycle per channel of %.0f configured (%.1f%%); %.3f TB/s aggregate\n",
      r.achieved_bytes_per_cycle_per_pe, r.configured_bytes_per_cycle_per_pe, efficiency * 100,
      agg_tbs);
  add("  wall time       elaboration %.3f s, simulation %.3f s, peak RSS %.1f MiB\n",
      info.elaboration_seconds, info.simulation_seconds, static_cast<double>(info.peak_rss_kib) / 1024);
  add("  simulator       %llu DMA bursts, %.0f bursts/s\n", static_cast<unsigned long long>(r.bursts),
      info.simulation_seconds > 0 ? static_cast<double>(r.bursts) / info.simulation_seconds : 0.0);
  return s;
}

nlohmann::json stream_json(const Topology& topo, const StreamResult& r, const RunInfo& info) {
  return {
      {"kernel", "hbm_stream"},
      {"topology", {{"file", info.topology_file}, {"name", info.topology_name}}},
      {"knobs", {{"bytes_per_pe", r.bytes_per_pe}, {"write", r.write}, {"pes", r.pes}}},
      {"simulated_cycles", r.simulated_cycles},
      {"simulated_seconds", static_cast<double>(r.simulated_cycles) / topo.pe.clock_hz},
      {"predicted_cycles", r.predicted_cycles},
      {"total_bytes", r.total_bytes},
      {"bursts", r.bursts},
      {"achieved_bytes_per_cycle_per_pe", r.achieved_bytes_per_cycle_per_pe},
      {"configured_bytes_per_cycle_per_pe", r.configured_bytes_per_cycle_per_pe},
      {"wall",
       {{"elaboration_seconds", info.elaboration_seconds},
        {"simulation_seconds", info.simulation_seconds},
        {"peak_rss_kib", info.peak_rss_kib}}},
  };
}

}  // namespace kb::report
