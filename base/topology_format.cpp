#include <algorithm>
#include <cstdio>
#include <sstream>

#include "base/sip_graph.h"
#include "base/topology.h"
#include "base/units.h"

namespace kb {
namespace {

std::string link_text(const LinkParams& l, const char* latency_word) {
  return std::to_string(l.bytes_per_cycle) + "B/cycle, " + latency_word + " " +
         std::to_string(l.latency_cycles) + " cycles";
}

std::string table_text(const CostTable& table) {
  std::string s;
  for (const auto& [op, c] : table) s += (s.empty() ? "" : ", ") + op + " " + std::to_string(c);
  return s;
}

// A price as written in the topology (%g: 31.2, 0.225, 0.05).
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string energy_text(const Topology::EnergySpec& e, const Topology& t) {
  std::string math;
  for (const auto& [op, pj] : e.math) math += (math.empty() ? "" : ", ") + op + " " + num(pj);
  const double sip_watts = t.static_watts_per_sip();
  return "  energy   HBM read " + num(e.hbm_read) + ", write " + num(e.hbm_write) +
         " pJ/B; TCM read " + num(e.tcm_read) + ", write " + num(e.tcm_write) + " pJ/B; fabric " +
         num(e.fabric) + ", NOC hop " + num(e.noc) + ", link " + num(e.link) +
         " pJ/B\n           GEMM " + num(e.gemm_mac) + " pJ/MAC; CPU " + num(e.cpu_op) +
         " pJ/op; math pJ/lane-op: " + math + "\n           static " + num(e.static_pe) +
         " W a PE, " + num(e.static_cube) + " W a cube, " + num(e.static_sip) + " W a SIP (" +
         num(sip_watts) + " W a SIP in all)\n";
}

}  // namespace

std::string format_topology(const Topology& t) {
  std::ostringstream o;
  char line[256];
  o << "topology " << t.name << "  (" << t.source << ")\n";
  o << "  system   " << t.system.sips << " SIP(s)\n";
  if (const auto& l = t.system.links; l.kind != Topology::SystemSpec::Links::Kind::None) {
    std::string ports;
    for (const std::uint32_t p : l.ports) ports += (ports.empty() ? "" : ", ") + std::to_string(p);
    o << "  links    " << Topology::link_kind_name(l.kind) << ", " << SipGraph(t).links().size() << " link(s), each way "
      << link_text(l.link, "latency") << "; ports at cubes " << ports << "\n";
  }
  o << "  sip      " << t.sip.mesh_x << "x" << t.sip.mesh_y << " cube mesh, NOC link "
    << link_text(t.sip.noc, "per hop") << ", job queue " << t.sip.job_queue << " descriptors\n";
  o << "  cube     " << t.cube.pes << " PEs, fabric " << link_text(t.cube.fabric, "latency") << "\n";
  o << "  hbm      per PE channel " << t.cube.hbm.bytes_per_cycle << "B/cycle, latency "
    << t.cube.hbm.latency_cycles << " cycles, capacity " << units::format_bytes(t.cube.hbm.capacity)
    << "\n";
  o << "  pe       clock " << units::format_hertz(t.pe.clock_hz) << ", TCM "
    << units::format_bytes(t.pe.tcm_bytes) << "\n";
  o << "  dma      burst " << units::format_bytes(t.pe.dma.burst_bytes) << ", "
    << t.pe.dma.outstanding << " outstanding bursts per channel\n";
  o << "  gemm     " << t.pe.gemm.rows << "x" << t.pe.gemm.cols << " MAC array ("
    << t.pe.gemm.rows * t.pe.gemm.cols << " MAC/cycle)\n";
  o << "  math     " << t.pe.math.lanes << " lanes; cycles per lane-op: " << table_text(t.pe.math.cycles)
    << "\n";
  o << "  cpu      issue cycles: " << table_text(t.pe.cpu.issue_cycles) << "\n";
  o << energy_text(t.energy, t);
  o << "aggregates\n";
  std::snprintf(line, sizeof line, "  PEs               %u per SIP, %u total\n", t.pes_per_sip(),
                t.total_pes());
  o << line;
  std::snprintf(line, sizeof line, "  HBM bandwidth     %.3f TB/s per SIP, %.3f TB/s total\n",
                t.hbm_bytes_per_second_per_sip() / 1e12,
                t.hbm_bytes_per_second_per_sip() * t.system.sips / 1e12);
  o << line;
  std::snprintf(line, sizeof line, "  GEMM peak (bf16)  %.1f TFLOP/s per SIP, %.1f TFLOP/s total\n",
                t.gemm_flops_per_second_per_sip() / 1e12,
                t.gemm_flops_per_second_per_sip() * t.system.sips / 1e12);
  o << line;
  std::snprintf(line, sizeof line, "  HBM capacity      %s per SIP\n",
                units::format_bytes(t.cube.hbm.capacity * t.pes_per_sip()).c_str());
  o << line;
  if (const SipGraph g(t); !g.empty()) {
    // A SIP's links: the most any SIP has (a switch SIP has one).
    std::size_t most = 0;
    for (std::uint32_t s = 0; s < t.system.sips; ++s) {
      std::size_t n = 0;
      for (const SipLink& k : g.links()) n += (k.a == s || k.b == s) ? 1 : 0;
      most = std::max(most, n);
    }
    std::snprintf(line, sizeof line, "  link bandwidth    %.1f GB/s out of a SIP (%zu link(s) x %.1f GB/s)\n",
                  static_cast<double>(most * t.system.links.link.bytes_per_cycle) * t.pe.clock_hz / 1e9, most,
                  static_cast<double>(t.system.links.link.bytes_per_cycle) * t.pe.clock_hz / 1e9);
    o << line;
  }
  return o.str();
}

}  // namespace kb
