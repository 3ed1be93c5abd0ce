// gqa_decode_batch as a workload: its knobs, the result's figures and the report.
#include <algorithm>
#include <numeric>
#include <optional>

#include "base/units.h"
#include "workloads/attention/placement.h"
#include "workloads/gqa_decode_batch/batch_run.h"
#include "workloads/gqa_decode_batch/batch_spec.h"
#include "workloads/report.h"

namespace kb::workloads {
namespace {

using gqa::BatchConfig;

const KnobSet& reduce_knobs() {
  static const KnobSet set{
      "batch reduce",
      {{"reduce", "auto",
        "how a request's partial states merge: auto (a gather over its ranks; decode's 2-level reduce when it is on "
        "every rank) or two-level (decode's reduce for every request: the measured alternative)"}}};
  return set;
}

// What the data knobs ask of a batch: inputs (random or read), O checked and written.
struct BatchData {
  bool data = false, check = false;
  std::string outputs;
  std::optional<gqa::BatchInputs> inputs;
};

class BatchJob : public Job {
 public:
  BatchJob(BatchConfig c, BatchData data, const Topology& topo)
      : c_(std::move(c)), data_(std::move(data)), topo_(topo) {}
  bool data_mode(bool) const override { return data_.data; }
  std::vector<std::uint32_t> cube_groups() const override { return gqa::cube_groups(topo_, c_.cubes); }
  Result run(RuntimeContext& rt) override {
    const gqa::BatchResult b = gqa::run_decode_batch(rt, c_, data_.inputs ? &*data_.inputs : nullptr);
    Result r = gqa::attention_result("gqa_decode_batch", c_, data_.data, b.devices, b.cycles, topo_);
    r.knobs["cubes_per_group"] = c_.cubes;
    r.knobs["pes"] = c_.pes;
    r.knobs["page_rows"] = c_.page_rows;
    r.knobs["tile_rows"] = b.tile_rows;
    r.knobs["batch"] = c_.lens.size();
    r.knobs["reduce"] = c_.two_level ? "two-level" : "auto";
    r.add("requests.tokens", static_cast<std::uint64_t>(c_.lens.size()) * c_.t_q, Merge::Same);
    r.add("requests.context", std::accumulate(c_.lens.begin(), c_.lens.end(), std::uint64_t{0}), Merge::Same);
    r.add("kv_bytes", b.kv_bytes, Merge::Sum);
    r.add("roofline_cycles", b.roofline_cycles, Merge::Same);
    r.add("imbalance", b.imbalance, Merge::Same);
    r.add("pages", b.pages, Merge::Same);
    r.add("page_fill", b.fill, Merge::Same);
    if (b.o) {
      r.numerics = gqa::check_batch(c_, *data_.inputs, *b.o);
      r.numerics->enforced = data_.check;
      if (!data_.outputs.empty()) write_npy(data_.outputs + "/o.npy", *b.o);
    }
    return r;
  }

 private:
  BatchConfig c_;
  BatchData data_;
  const Topology& topo_;
};

class GqaDecodeBatch : public Workload {
 public:
  std::string name() const override { return "gqa_decode_batch"; }
  std::string summary() const override {
    return "batched GQA decode: requests of ragged lengths from a paged KV cache, pages dealt evenly over every PE";
  }
  std::vector<const KnobSet*> knobs() const override {
    return {&model_knobs(), &gqa::shape_knobs(), &q_len_knobs(), &gqa::placement_knobs(), &gqa::batch_knobs(), &reduce_knobs(),
            &gqa::data_knobs(), &outputs_knobs(), &check_knobs(), &storage_knobs()};
  }

  bool splits_by_sip() const override { return true; }

  std::unique_ptr<Job> configure(const Values& v, const Setup& setup) const override {
    BatchConfig c;
    static_cast<gqa::AttentionShape&>(c) = gqa::shape_of(v, 1, false);
    const gqa::AttentionData checked(v, setup.data);  // the data knobs' own checks
    BatchData data;
    data.data = checked.data();
    data.check = v.on("check");
    data.outputs = v.text("outputs");
    const std::string dir = v.text("inputs");
    if (!dir.empty()) {
      if (v.given("batch")) throw ConfigError("{batch} and {inputs} both give the lengths: lens.npy of {inputs} does", true);
      data.inputs = gqa::BatchInputs::from_npy(dir, c);
    } else {
      c.lens = gqa::parse_batch(v.given("batch") ? v.text("batch") : "random:64:1024-32768:7");
    }
    c.s = *std::max_element(c.lens.begin(), c.lens.end());
    c.page_rows = v.count32("page_rows", 1, 1u << 16);
    const std::string reduce = v.text("reduce");
    if (reduce != "auto" && reduce != "two-level")
      throw ConfigError("{reduce} '" + ConfigError::literal(reduce) + "': allowed values: auto, two-level", true);
    c.two_level = reduce == "two-level";
    c.devices = setup.devices;
    c.simulate = setup.simulate;
    const gqa::HeadPlacement p = gqa::place_heads(c.h_kv, gqa::run_devices(c.devices, *setup.topo).size(), *setup.topo,
                                                  false, gqa::placement_count(v, "cubes_per_group"),
                                                  gqa::placement_count(v, "pes"));
    c.cubes = p.cubes;
    c.pes = p.pes;
    gqa::validate(c, *setup.topo);
    if (data.data && !data.inputs) data.inputs = gqa::BatchInputs::random(c, seed_of(v));
    return std::make_unique<BatchJob>(std::move(c), std::move(data), *setup.topo);
  }

  void derive(Result& r, const Topology&) const override {
    const double cycles = static_cast<double>(r.simulated_cycles);
    r.add("roofline_efficiency", r.number("roofline_cycles") / cycles, Merge::Derived);
    r.add("tokens_per_second", r.number("requests.tokens") / r.simulated_seconds, Merge::Derived);
  }

  std::string report(const Result& r, const Topology& topo) const override {
    (void)topo;
    const nlohmann::json& k = r.knobs;
    report::Lines add;
    add("kernbench: gqa_decode_batch on %s (%s), %s mode\n", r.topology_name.c_str(), r.topology_file.c_str(),
        r.mode.c_str());
    add("  batch           %u requests, %llu context rows in all (the longest %llu), T_q %u\n",
        k.at("batch").get<std::uint32_t>(), static_cast<unsigned long long>(r.count("requests.context")),
        static_cast<unsigned long long>(k.at("seq_len").get<std::uint64_t>()), k.at("q_len").get<std::uint32_t>());
    add("  placement       C %u cubes x P %u PEs per KV head, devices %s; pages of %u rows (%llu per head, %.1f%% "
        "filled), tiles of %u rows\n",
        k.at("cubes_per_group").get<std::uint32_t>(), k.at("pes").get<std::uint32_t>(), devices_text(r.devices).c_str(),
        k.at("page_rows").get<std::uint32_t>(), static_cast<unsigned long long>(r.count("pages")),
        100 * r.number("page_fill"), k.at("tile_rows").get<std::uint32_t>());
    report::simulated_line(add, r);
    add("  throughput      %.4g tokens/s\n", r.number("tokens_per_second"));
    add("  bytes           K/V read %s\n", units::format_bytes(r.count("kv_bytes")).c_str());
    add("  roofline        %.0f cycles (KV bytes over the HBM bandwidth of every PE of the run's SIPs): efficiency "
        "%.1f%%\n",
        r.number("roofline_cycles"), 100 * r.number("roofline_efficiency"));
    add("  balance         max / mean KV rows of a rank = %.3f\n", r.number("imbalance"));
    return add.text();
  }
};

}  // namespace

const Workload& gqa_decode_batch_workload() { return instance<GqaDecodeBatch>(); }

}  // namespace kb::workloads
