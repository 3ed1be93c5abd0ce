// hbm_stream as a workload: every PE streams its own HBM channel, against the closed form.
#include "base/units.h"
#include "workloads/hbm_stream/hbm_stream.h"
#include "workloads/report.h"
#include "workloads/workload.h"

namespace kb::workloads {
namespace {

const KnobSet& stream_knobs() {
  static const KnobSet set{"hbm_stream", {{"write", "", "write to HBM instead of reading", true}}};
  return set;
}

class StreamJob : public Job {
 public:
  StreamJob(std::uint64_t bytes, bool write, std::vector<SipId> devices)
      : bytes_(bytes), write_(write), devices_(std::move(devices)) {}
  Result run(RuntimeContext& rt) override {
    const Topology& topo = rt.system().topology();
    const StreamResult s = run_hbm_stream(rt.system(), bytes_, write_, devices_);
    Result r = Result::of("hbm_stream", devices_, s.simulated_cycles, topo);
    r.knobs = {{"bytes_per_pe", s.bytes_per_pe}, {"write", s.write}, {"pes", s.pes}};
    r.critical_path = s.critical_path;
    r.add("predicted_cycles", s.predicted_cycles, Merge::Same);
    r.add("total_bytes", s.total_bytes, Merge::Sum);
    r.add("bursts", s.bursts, Merge::Sum);
    r.add("achieved_bytes_per_cycle_per_pe", s.achieved_bytes_per_cycle_per_pe, Merge::Same);
    r.add("configured_bytes_per_cycle_per_pe", s.configured_bytes_per_cycle_per_pe, Merge::Same);
    return r;
  }

 private:
  std::uint64_t bytes_;
  bool write_;
  std::vector<SipId> devices_;
};

class HbmStream : public Workload {
 public:
  std::string name() const override { return "hbm_stream"; }
  std::string summary() const override {
    return "every PE streams its own HBM channel through its DMA; simulated time against the closed form";
  }
  std::vector<const KnobSet*> knobs() const override { return {&size_knobs(), &stream_knobs()}; }
  bool tl() const override { return false; }

  std::unique_ptr<Job> configure(const Values& v, const Setup& setup) const override {
    const auto bytes = units::parse_bytes(v.text("bytes"));
    if (!bytes || *bytes == 0 || *bytes > setup.topo->cube.hbm.capacity)
      throw ConfigError("{bytes} '" + ConfigError::literal(v.text("bytes")) + "': expected a size from 1B to the HBM channel capacity (" +
                            units::format_bytes(setup.topo->cube.hbm.capacity) + "), e.g. 256KiB",
                        true);
    return std::make_unique<StreamJob>(*bytes, v.on("write"), setup.devices);
  }

  std::string report(const Result& r, const Topology& topo) const override {
    const double cycles = static_cast<double>(r.simulated_cycles);
    const double predicted = r.number("predicted_cycles");
    const double achieved = r.number("achieved_bytes_per_cycle_per_pe");
    const double configured = r.number("configured_bytes_per_cycle_per_pe");
    const bool write = r.knobs.at("write");
    report::Lines add;
    add("kernbench: hbm_stream on %s (%s)\n", r.topology_name.c_str(), r.topology_file.c_str());
    add("  workload        every PE %s %s %s its own HBM channel (%u PEs)\n", write ? "writes" : "reads",
        units::format_bytes(r.knobs.at("bytes_per_pe")).c_str(), write ? "to" : "from",
        r.knobs.at("pes").get<std::uint32_t>());
    report::simulated_line(add, r);
    add("  predicted       %llu cycles (burst pipeline: %s bursts, %u outstanding, %lluB/cycle, latency %llu)\n",
        static_cast<unsigned long long>(r.count("predicted_cycles")),
        units::format_bytes(topo.pe.dma.burst_bytes).c_str(), topo.pe.dma.outstanding,
        static_cast<unsigned long long>(topo.cube.hbm.bytes_per_cycle),
        static_cast<unsigned long long>(topo.cube.hbm.latency_cycles));
    add("  model vs sim    %+.2f%%\n", predicted > 0 ? (cycles - predicted) / predicted * 100 : 0.0);
    add("  bytes moved     %s\n", units::format_bytes(r.count("total_bytes")).c_str());
    add("  bandwidth       %.2f B/cycle per channel of %.0f configured (%.1f%%); %.3f TB/s aggregate\n", achieved,
        configured, achieved / configured * 100, r.number("total_bytes") / r.simulated_seconds / 1e12);
    return add.text();
  }
};

}  // namespace

const Workload& hbm_stream_workload() { return instance<HbmStream>(); }

}  // namespace kb::workloads
