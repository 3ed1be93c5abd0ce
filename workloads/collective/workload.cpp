// The collective workload: one collective over the SIPs of the run (their SIPs, cubes or
// PEs as ranks), timed, with its bandwidths as nccl-tests reports them, and checked
// against an fp64 reduction on the host in data mode.
#include <cmath>
#include <random>

#include "base/units.h"
#include "kernels/collectives/plan.h"
#include "workloads/report.h"
#include "workloads/workload.h"

namespace kb::workloads {
namespace {

namespace cl = collectives;

const KnobSet& collective_knobs() {
  static const KnobSet set{
      "collective",
      {{"op", "all_reduce", "the collective: all_reduce, reduce_scatter, all_gather, broadcast, reduce"},
       {"algorithm", "auto", "ring, tree, one_shot, two_shot, hierarchical, or auto (the cost model's pick)"},
       {"ranks", "sip", "what a rank is: sip (its PEs as lanes), cube (its PEs as lanes) or pe"},
       {"root", "0", "broadcast and reduce: the rank that sends or gets the result"}}};
  return set;
}

enum class RankKind { Sip, Cube, Pe };

struct CollectiveConfig {
  cl::Request request;
  RankKind kind = RankKind::Sip;
  std::string ranks_text;
  bool check = false;
};

// A rank's buffer as rows of `cols` fp32 elements: the widest power of two up to 256
// that divides a lane's elements.
std::uint32_t cols_for(std::uint64_t lane_elements) {
  std::uint32_t cols = 256;
  while (lane_elements % cols != 0) cols /= 2;
  return cols;
}

std::vector<cl::Rank> ranks_of(const Topology& topo, RankKind kind, const std::vector<SipId>& devices) {
  if (kind == RankKind::Sip) return cl::ranks_of_sips(topo, devices);
  if (kind == RankKind::Cube) return cl::ranks_of_cubes(topo, devices);
  return cl::ranks_of_pes(topo, devices);
}

class CollectiveJob : public Job {
 public:
  CollectiveJob(CollectiveConfig c, std::vector<SipId> devices) : c_(std::move(c)), devices_(std::move(devices)) {}

  std::vector<std::string> notes() const override {
    return {std::string("collective: ") + cl::op_name(c_.request.op) + " by " + cl::algorithm_name(plan_.algorithm) +
            (c_.request.algorithm == cl::Algorithm::Auto ? " (auto)" : "")};
  }

  bool couples_sips() const override { return devices_.size() > 1; }

  void decide(const Topology& topo) { plan_ = cl::make_plan(topo, c_.request); }

  Result run(RuntimeContext& rt) override {
    const Topology& topo = rt.system().topology();
    const cl::Request& q = c_.request;
    const auto lanes = static_cast<std::uint32_t>(q.ranks[0].size());
    const std::uint64_t rows_per_pe = q.bytes / 4 / lanes / q.cols;
    const Shape shape{static_cast<std::int64_t>(rows_per_pe * topo.pes_per_sip()), q.cols};
    const DPPolicy every = DPPolicy::shard2d(topo.cubes_per_sip(), topo.cube.pes);
    std::vector<DeviceTensor> buffers(topo.system.sips);
    std::vector<HostTensor> inputs(topo.system.sips);
    for (const SipId s : devices_) {
      if (rt.data_mode()) {
        inputs[s.value] = random_input(shape, s.value);
        buffers[s.value] = rt.from_host("buffer", inputs[s.value], DType::fp32, every, s);
      } else {
        buffers[s.value] = rt.empty("buffer", shape, DType::fp32, every, s);
      }
      rt.launch(s, "collective", cl::run, plan_, buffers);
    }
    if (devices_.size() > 1) rt.couple_devices();
    rt.run();
    Result r = Result::of("collective", devices_, rt.last_run_cycles(), topo);
    r.mode = rt.data_mode() ? "data" : "timing";
    r.knobs = {{"op", cl::op_name(q.op)},       {"algorithm", cl::algorithm_name(q.algorithm)},
               {"ranks", c_.ranks_text},         {"root", q.root},
               {"bytes", q.bytes}};
    const auto n = static_cast<std::uint32_t>(q.ranks.size());
    const cl::Estimate e = cl::estimate(topo, plan_, q.bytes);
    const double to_gbs = topo.pe.clock_hz / 1e9;  // bytes per cycle -> GB/s
    r.add("algorithm", cl::algorithm_name(plan_.algorithm), Merge::Same);
    if (plan_.algorithm == cl::Algorithm::Hierarchical) r.add("across", cl::algorithm_name(plan_.across), Merge::Same);
    r.add("ranks", n, Merge::Same);
    r.add("lanes", lanes, Merge::Same);
    r.add("rings", static_cast<std::uint32_t>(plan_.rings.size()), Merge::Same);
    r.add("piece_bytes", std::uint64_t{plan_.piece_rows} * q.cols * 4, Merge::Same);
    r.add("estimate_cycles", std::llround(e.cycles), Merge::Same);
    r.add("link_peak_busbw_gbs", cl::link_peak_busbw(topo, q.ranks) * to_gbs, Merge::Same);
    r.add("algorithm_peak_busbw_gbs", e.peak_busbw * to_gbs, Merge::Same);
    if (rt.data_mode()) r.numerics = check(rt, buffers, inputs, topo);
    return r;
  }

 private:
  static HostTensor random_input(const Shape& shape, std::uint32_t sip) {
    HostTensor h;
    h.shape = shape;
    h.data.resize(h.elements());
    std::mt19937 gen(1000 + sip);
    std::normal_distribution<float> d(0.0f, 1.0f);
    for (auto& v : h.data) v = d(gen);
    return h;
  }

  // Every rank's result against the op applied in fp64 on the host, relative to the sum
  // of the magnitudes reduced; a reduction in fp32 over n ranks is within (n - 1) x 2^-24
  // of it (recursive summation), a copy exact.
  Numerics check(RuntimeContext& rt, const std::vector<DeviceTensor>& buffers, const std::vector<HostTensor>& inputs,
                 const Topology& topo) const {
    const cl::Request& q = c_.request;
    const auto n = static_cast<std::uint32_t>(q.ranks.size());
    std::vector<HostTensor> out(topo.system.sips);
    for (const SipId s : devices_) out[s.value] = rt.read(buffers[s.value]);
    const std::uint64_t lane_elems = q.bytes / 4 / q.ranks[0].size();
    // Element e of lane PE `pe`'s shard, in a SIP's host tensor.
    auto index = [&](const PeCoord& pe, std::uint64_t e) {
      return (std::uint64_t{pe.cube.value} * topo.cube.pes + pe.pe.value) * lane_elems + e;
    };
    const bool reduces = q.op == cl::Op::AllReduce || q.op == cl::Op::ReduceScatter || q.op == cl::Op::Reduce;
    double worst = 0;
    for (std::size_t lane = 0; lane < q.ranks[0].size(); ++lane)
      for (std::uint64_t e = 0; e < lane_elems; ++e) {
        double sum = 0, magnitude = 0;
        auto in = [&](std::uint32_t rank) {
          const PeCoord& pe = q.ranks[rank][lane];
          return static_cast<double>(inputs[pe.sip.value].data[index(pe, e)]);
        };
        for (std::uint32_t j = 0; j < n; ++j) {
          sum += in(j);
          magnitude += std::abs(in(j));
        }
        // The part of the lane's rows element e is in (rows of cols elements split n ways).
        const std::uint64_t rows = lane_elems / q.cols, row = e / q.cols;
        const std::uint32_t part = static_cast<std::uint32_t>(row / ((rows + n - 1) / n));
        for (std::uint32_t i = 0; i < n; ++i) {
          double want;
          if (q.op == cl::Op::AllReduce) want = sum;
          else if (q.op == cl::Op::ReduceScatter) {
            if (part != i) continue;
            want = sum;
          } else if (q.op == cl::Op::AllGather) want = in(part);
          else if (q.op == cl::Op::Broadcast) want = in(q.root);
          else {
            if (i != q.root) continue;
            want = sum;
          }
          const PeCoord& pe = q.ranks[i][lane];
          const double got = out[pe.sip.value].data[index(pe, e)];
          const double scale = reduces ? std::max(magnitude, 1e-30) : 1.0;
          worst = std::max(worst, std::abs(got - want) / scale);
        }
      }
    Numerics num;
    num.error = worst;
    const double u = std::ldexp(1.0, -24);  // fp32 unit roundoff: gamma_{n-1} = (n-1)u / (1 - (n-1)u)
    num.tolerance = reduces ? (n - 1) * u / (1 - (n - 1) * u) : 0.0;
    num.pass = worst <= num.tolerance;
    num.enforced = c_.check;
    return num;
  }

  CollectiveConfig c_;
  std::vector<SipId> devices_;
  cl::Plan plan_;
};

class Collective : public Workload {
 public:
  std::string name() const override { return "collective"; }
  std::string summary() const override {
    return "a collective (all_reduce, ...) over the SIPs' links or a SIP's NOC: time, algbw, busbw and their peaks";
  }
  std::vector<const KnobSet*> knobs() const override { return {&collective_knobs(), &size_knobs(), &check_knobs()}; }
  // Its SIPs are coupled: a split run simulates them in step (platform/split_run.h).
  bool splits_by_sip() const override { return true; }

  std::unique_ptr<Job> configure(const Values& v, const Setup& setup) const override {
    const Topology& topo = *setup.topo;
    CollectiveConfig c;
    cl::Request& q = c.request;
    const auto op = cl::parse_op(v.text("op"));
    if (!op)
      throw ConfigError("{op} '" + ConfigError::literal(v.text("op")) +
                            "': allowed values: all_reduce, reduce_scatter, all_gather, broadcast, reduce",
                        true);
    const auto algorithm = cl::parse_algorithm(v.text("algorithm"));
    if (!algorithm)
      throw ConfigError("{algorithm} '" + ConfigError::literal(v.text("algorithm")) +
                            "': allowed values: ring, tree, one_shot, two_shot, hierarchical, auto",
                        true);
    c.ranks_text = v.text("ranks");
    if (c.ranks_text == "sip") c.kind = RankKind::Sip;
    else if (c.ranks_text == "cube") c.kind = RankKind::Cube;
    else if (c.ranks_text == "pe") c.kind = RankKind::Pe;
    else throw ConfigError("{ranks} '" + ConfigError::literal(c.ranks_text) + "': allowed values: sip, cube, pe", true);
    q.op = *op;
    q.algorithm = *algorithm;
    q.ranks = ranks_of(topo, c.kind, setup.devices);
    const auto n = static_cast<std::uint32_t>(q.ranks.size());
    if (n < 2)
      throw ConfigError("{ranks} " + c.ranks_text + " on " + std::to_string(setup.devices.size()) +
                        " SIP(s) gives 1 rank: a collective needs 2 or more (more --devices, or --ranks cube or pe)");
    q.root = v.count32("root", 0, n - 1);
    const auto lanes = static_cast<std::uint64_t>(q.ranks[0].size());
    const auto bytes = units::parse_bytes(v.text("bytes"));
    const std::uint64_t unit = 4 * lanes;
    if (!bytes || *bytes == 0 || *bytes % unit != 0)
      throw ConfigError("{bytes} '" + ConfigError::literal(v.text("bytes")) + "': a rank's buffer must be a multiple of " +
                            std::to_string(unit) + "B (fp32 elements over the rank's " + std::to_string(lanes) +
                            " PEs), e.g. 256MiB",
                        true);
    if (*bytes / lanes > topo.cube.hbm.capacity)
      throw ConfigError("{bytes} " + units::format_bytes(*bytes) + ": a PE's share (" +
                        units::format_bytes(*bytes / lanes) + ") exceeds its HBM channel (" +
                        units::format_bytes(topo.cube.hbm.capacity) + ")");
    q.bytes = *bytes;
    q.cols = cols_for(*bytes / 4 / lanes);
    c.check = v.on("check");
    if (c.check && !setup.data) throw ConfigError("{check} needs {data} (data mode)", true);
    auto job = std::make_unique<CollectiveJob>(std::move(c), setup.devices);
    try {
      job->decide(topo);
    } catch (const std::invalid_argument& e) {
      throw ConfigError("{algorithm} " + ConfigError::literal(e.what()));
    }
    return job;
  }

  void derive(Result& r, const Topology&) const override {
    const double seconds = r.simulated_seconds;
    if (seconds <= 0) return;
    const double bytes = r.knobs.at("bytes").get<double>();
    const auto op = *cl::parse_op(r.knobs.at("op").get<std::string>());
    const double algbw = bytes / seconds / 1e9;
    const double busbw = algbw * cl::bus_factor(op, r.figure("ranks").get<std::uint32_t>());
    r.add("algbw_gbs", algbw, Merge::Derived);
    r.add("busbw_gbs", busbw, Merge::Derived);
    r.add("busbw_of_link_peak", busbw / r.number("link_peak_busbw_gbs"), Merge::Derived);
    r.add("busbw_of_algorithm_peak", busbw / r.number("algorithm_peak_busbw_gbs"), Merge::Derived);
  }

  std::string report(const Result& r, const Topology& topo) const override {
    (void)topo;
    report::Lines add;
    const std::string algorithm = r.figure("algorithm").get<std::string>();
    add("kernbench: collective on %s (%s), %s mode\n", r.topology_name.c_str(), r.topology_file.c_str(),
        r.mode.c_str());
    add("  collective      %s of %s per rank, %u ranks (%s) of %u PEs each, by %s%s%s\n",
        r.knobs.at("op").get<std::string>().c_str(), units::format_bytes(r.knobs.at("bytes")).c_str(),
        r.figure("ranks").get<std::uint32_t>(), r.knobs.at("ranks").get<std::string>().c_str(),
        r.figure("lanes").get<std::uint32_t>(), algorithm.c_str(),
        r.knobs.at("algorithm") == "auto" ? " (auto)" : "",
        r.has("across") ? (" across SIPs by " + r.figure("across").get<std::string>()).c_str() : "");
    report::simulated_line(add, r);
    add("  cost model      %llu cycles estimated (%+.1f%% simulated against it)\n",
        static_cast<unsigned long long>(r.count("estimate_cycles")),
        100.0 * (static_cast<double>(r.simulated_cycles) / r.number("estimate_cycles") - 1));
    add("  algbw           %.2f GB/s\n", r.number("algbw_gbs"));
    add("  busbw           %.2f GB/s: %.1f%% of link_peak_busbw %.1f GB/s, %.1f%% of algorithm_peak_busbw %.1f GB/s\n",
        r.number("busbw_gbs"), 100 * r.number("busbw_of_link_peak"), r.number("link_peak_busbw_gbs"),
        100 * r.number("busbw_of_algorithm_peak"), r.number("algorithm_peak_busbw_gbs"));
    return add.text();
  }
};

}  // namespace

const Workload& collective_workload() { return instance<Collective>(); }

}  // namespace kb::workloads
