// The tl example kernels as workloads: tiled_gemm and row_softmax on seeded random
// inputs placed over every PE of each chosen SIP.
#include <random>

#include "kernels/examples/examples.h"
#include "workloads/report.h"
#include "workloads/workload.h"

namespace kb::workloads {
namespace {

const KnobSet& rows_knobs() {
  static const KnobSet set{"example rows", {{"rows", "256", "rows per PE"},
                                            {"k", "128", "tiled_gemm: K; row_softmax: row length"},
                                            {"m_tile", "64", "rows per tile of the sweep"}}};
  return set;
}

const KnobSet& gemm_knobs() {
  static const KnobSet set{"tiled_gemm", {{"n", "128", "N"}, {"k_tile", "64", "rows of B per streamed tile"}}};
  return set;
}

struct ExampleConfig {
  std::uint32_t rows_per_pe = 256;  // rows of A (or X) each PE holds
  std::uint32_t k = 128, n = 128;   // GEMM: A [rows, k] x B [k, n]; softmax rows have k columns
  std::uint32_t m_tile = 64;        // rows per tile of the kernel's sweep
  std::uint32_t k_tile = 64;        // rows of B per composite tile
  DType dtype = DType::bf16;
  std::uint32_t seed = 1;
};

HostTensor random(const Shape& shape, std::uint32_t seed) {
  HostTensor h;
  h.shape = shape;
  h.data.resize(h.elements());
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (auto& v : h.data) v = d(gen);
  return h;
}

// Host data is only needed when values are simulated.
DeviceTensor input(RuntimeContext& rt, const std::string& name, const Shape& shape, DType dtype,
                   const DPPolicy& policy, SipId sip, std::uint32_t seed) {
  if (!rt.data_mode()) return rt.empty(name, shape, dtype, policy, sip);
  return rt.from_host(name, random(shape, seed), dtype, policy, sip);
}

class ExampleJob : public Job {
 public:
  ExampleJob(std::string kernel, ExampleConfig c, std::vector<SipId> devices)
      : kernel_(std::move(kernel)), c_(c), devices_(std::move(devices)) {}
  bool reads_op_log() const override { return true; }  // its result carries the log's hash
  Result run(RuntimeContext& rt) override {
    const Topology& topo = rt.system().topology();
    const DPPolicy rows = DPPolicy::shard2d(topo.cubes_per_sip(), topo.cube.pes);
    const DPPolicy every = DPPolicy::replicate(topo.cubes_per_sip(), topo.cube.pes);
    const std::int64_t total_rows = static_cast<std::int64_t>(c_.rows_per_pe) * topo.pes_per_sip();
    for (const SipId s : devices_) {
      const std::uint32_t seed = c_.seed * 1000 + s.value;
      if (kernel_ == "tiled_gemm") {
        const DeviceTensor a = input(rt, "a", {total_rows, c_.k}, c_.dtype, rows, s, seed);
        const DeviceTensor b = input(rt, "b", {c_.k, c_.n}, c_.dtype, every, s, seed + 500);
        const DeviceTensor out = rt.empty("c", {total_rows, c_.n}, c_.dtype, rows, s);
        rt.launch(s, kernel_, kernels::tiled_gemm, a, b, out, c_.m_tile, c_.k_tile);
      } else {
        const DeviceTensor x = input(rt, "x", {total_rows, c_.k}, c_.dtype, rows, s, seed);
        const DeviceTensor y = rt.empty("y", {total_rows, c_.k}, c_.dtype, rows, s);
        rt.launch(s, kernel_, kernels::row_softmax, x, y, c_.m_tile);
      }
    }
    rt.run();
    Result r = Result::of(kernel_, devices_, rt.last_run_cycles(), topo);
    r.mode = rt.data_mode() ? "data" : "timing";
    r.knobs = {{"rows_per_pe", c_.rows_per_pe}, {"k", c_.k}, {"m_tile", c_.m_tile}, {"dtype", dtype_name(c_.dtype)},
               {"seed", c_.seed}};
    if (kernel_ == "tiled_gemm") {
      r.knobs["n"] = c_.n;
      r.knobs["k_tile"] = c_.k_tile;
    }
    r.add("pes", static_cast<std::uint32_t>(devices_.size()) * topo.pes_per_sip(), Merge::Sum);
    r.add("op_log.records", rt.op_log().size(), Merge::Sum);
    r.add("op_log.hash", rt.op_log().hash(), Merge::Same);
    return r;
  }

 private:
  std::string kernel_;
  ExampleConfig c_;
  std::vector<SipId> devices_;
};

class Example : public Workload {
 public:
  Example(std::string name, std::string summary, std::vector<const KnobSet*> knobs)
      : name_(std::move(name)), summary_(std::move(summary)), knobs_(std::move(knobs)) {}
  std::string name() const override { return name_; }
  std::string summary() const override { return summary_; }
  std::vector<const KnobSet*> knobs() const override { return knobs_; }

  std::unique_ptr<Job> configure(const Values& v, const Setup& setup) const override {
    ExampleConfig c;
    c.rows_per_pe = v.count32("rows", 1, 1u << 20);
    c.k = v.count32("k", 1, 1u << 16);
    c.m_tile = v.count32("m_tile", 1, 1u << 16);
    if (name_ == "tiled_gemm") {
      c.n = v.count32("n", 1, 1u << 16);
      c.k_tile = v.count32("k_tile", 1, 1u << 16);
    }
    c.seed = seed_of(v);
    c.dtype = dtype_of(v);
    return std::make_unique<ExampleJob>(name_, c, setup.devices);
  }

  std::string report(const Result& r, const Topology& topo) const override {
    (void)topo;
    report::Lines add;
    add("kernbench: %s on %s (%s), %s mode, %u PEs\n", name_.c_str(), r.topology_name.c_str(),
        r.topology_file.c_str(), r.mode.c_str(), r.figure("pes").get<std::uint32_t>());
    add("  knobs           %s\n", r.knobs.dump().c_str());
    report::simulated_line(add, r);
    add("  op log          %llu records, hash %016llx\n", static_cast<unsigned long long>(r.count("op_log.records")),
        static_cast<unsigned long long>(r.count("op_log.hash")));
    return add.text();
  }

 private:
  std::string name_, summary_;
  std::vector<const KnobSet*> knobs_;
};

struct TiledGemm : Example {
  TiledGemm()
      : Example("tiled_gemm", "tl example: a tiled GEMM, B streamed from HBM",
                {&rows_knobs(), &gemm_knobs(), &storage_knobs()}) {}
};

struct RowSoftmax : Example {
  RowSoftmax() : Example("row_softmax", "tl example: softmax over the rows of a matrix", {&rows_knobs(), &storage_knobs()}) {}
};

}  // namespace

const Workload& tiled_gemm_workload() { return instance<TiledGemm>(); }
const Workload& row_softmax_workload() { return instance<RowSoftmax>(); }

}  // namespace kb::workloads
