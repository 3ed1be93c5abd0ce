#pragma once
// The typed, validated hardware description of an AHBM system (docs/topology.md).
// Every hardware number of the simulator comes from here; none lives in code.
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/mesh.h"


namespace kb {

// A point-to-point transfer resource: serialises bytes at its bandwidth and adds a latency.
struct LinkParams {
  std::uint64_t bytes_per_cycle = 0;
  std::uint64_t latency_cycles = 0;
};

// Cycles per op, by op name. Looked up by a string_view or literal without making a
// string (the simulator does so for every op it issues).
using CostTable = std::map<std::string, std::uint64_t, std::less<>>;
// `table`'s cost of `op`; std::out_of_range if it has none.
std::uint64_t cost_of(const CostTable& table, std::string_view op);

// Each part's parameters are a *Spec: the SystemC modules that model the part carry the
// plain names (System, Sip, Cube, Hbm, Pe).
struct Topology {
  std::string source;  // file the topology came from (or "<string>")
  std::string name;

  struct SystemSpec {
    std::uint32_t sips = 0;
    // Links between SIPs (docs/topology.md, Links); none when the section is absent.
    struct Links {
      enum class Kind : std::uint8_t { None, FullyConnected, Ring, Switch, Pairs };
      Kind kind = Kind::None;
      LinkParams link;                   // each way: bytes per cycle and latency, in cycles
      std::vector<std::uint32_t> ports;  // cubes where a SIP's link interface attaches to its mesh
      bool ports_by_quarters = false;    // `ports: quarters`: the cube of each mesh quarter nearest its centre
      std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;  // Kind::Pairs: the SIPs each joins
    } links;
  } system;

  struct SipSpec {
    std::uint32_t mesh_x = 0;  // cubes per mesh row
    std::uint32_t mesh_y = 0;  // cube rows
    LinkParams noc;            // one mesh link per direction; latency is per hop
    std::uint32_t job_queue = 0;  // job descriptors the SIP's command queue holds
  } sip;

  struct CubeSpec {
    std::uint32_t pes = 0;
    LinkParams fabric;  // intra-cube PE fabric (IPCQ, DMA to sibling channels)
    struct HbmSpec {
      std::uint64_t bytes_per_cycle = 0;
      std::uint64_t latency_cycles = 0;
      std::uint64_t capacity = 0;
    } hbm;  // one channel per PE
  } cube;

  struct PeSpec {
    double clock_hz = 0;
    std::uint64_t tcm_bytes = 0;
    struct Dma {
      std::uint64_t burst_bytes = 0;
      std::uint32_t outstanding = 0;  // bursts in flight per channel
    } dma;
    struct Gemm {
      std::uint32_t rows = 0;  // R
      std::uint32_t cols = 0;  // C
    } gemm;
    struct Math {
      std::uint32_t lanes = 0;
      CostTable cycles;  // per lane-op, by op name
    } math;
    struct Cpu {
      CostTable issue_cycles;  // per tl op type
    } cpu;
  } pe;
  // What each modelled event costs (docs/energy.md): energies in picojoules, static
  // power in watts, each from the topology's `energy:` section.
  struct EnergySpec {
    double hbm_read = 0, hbm_write = 0;  // pJ a byte, at the HBM channel
    double tcm_read = 0, tcm_write = 0;  // pJ a byte an engine reads from or writes to its TCM
    double fabric = 0;                   // pJ a byte across the intra-cube fabric
    double noc = 0;                      // pJ a byte a NOC hop (one mesh link)
    double link = 0;                     // pJ a byte across a link between SIPs
    double gemm_mac = 0;                 // pJ a bf16 MAC
    std::map<std::string, double, std::less<>> math;  // pJ a lane-op, by the keys of pe.math.cycles
    double cpu_op = 0;                                // pJ an op the CPU issues
    double static_pe = 0, static_cube = 0, static_sip = 0;  // W, for the whole run
  } energy;

  // Cycles of a MATH engine op of cost `op` (a key of pe.math.cycles) over `elements`
  // elements in passes of `lanes`; a row reduce over `reduce_width` columns adds a tree
  // of ceil(log2 width) steps per pass of rows.
  std::uint64_t math_cycles(std::string_view op, std::uint64_t elements, std::uint32_t reduce_width = 0) const;
  // The same for an op whose cost per lane-op (pe.math.cycles) is already looked up.
  std::uint64_t math_cycles_at(std::uint64_t op_cycles, std::uint64_t elements, std::uint32_t reduce_width = 0) const;

  static const char* link_kind_name(SystemSpec::Links::Kind kind);

  // The op names the math and cpu tables must list (exactly these).
  static const std::vector<std::string>& math_ops();
  static const std::vector<std::string>& cpu_ops();

  // Loads and validates a topology file; `sets` are "key.path=value" overrides.
  // Throws TopologyError listing every problem; nothing of a bad file is returned.
  static Topology load(const std::string& path, const std::vector<std::string>& sets = {});
  static Topology parse(const std::string& yaml_text, const std::string& source_name,
                        const std::vector<std::string>& sets = {});

  // Derived quantities.
  Mesh mesh() const { return Mesh(sip.mesh_x, sip.mesh_y); }
  std::uint32_t cubes_per_sip() const { return sip.mesh_x * sip.mesh_y; }
  std::uint32_t pes_per_sip() const { return cubes_per_sip() * cube.pes; }
  std::uint32_t total_pes() const { return system.sips * pes_per_sip(); }
  double hbm_bytes_per_second_per_sip() const;
  double gemm_flops_per_second_per_sip() const;  // 2 FLOP per MAC
  double static_watts_per_sip() const;           // its own, its cubes' and its PEs' static power
};

// Every problem of a topology. An error about an override ("sip.mesh.x=4") names it as
// "override sip.mesh.x=4"; a program shows its own word for overrides with errors_as
// (kernbench: "--set ").
class TopologyError : public std::runtime_error {
 public:
  static constexpr const char* kOverride = "{override}";  // stands for the word in raw texts
  explicit TopologyError(std::vector<std::string> errors);
  const std::vector<std::string>& errors() const { return errors_; }
  std::vector<std::string> errors_as(const std::string& override_word) const;

 private:
  std::vector<std::string> raw_, errors_;
};

// The resolved topology with aggregates, as `kernbench topology show` prints it.
std::string format_topology(const Topology& topo);

}  // namespace kb
