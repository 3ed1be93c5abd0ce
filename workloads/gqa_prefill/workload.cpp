// gqa_prefill as a workload: its knobs, the result's figures and the report.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/units.h"
#include "workloads/attention/placement.h"
#include "workloads/gqa_prefill/prefill_run.h"
#include "workloads/report.h"

namespace kb::workloads {
namespace {

using gqa::PrefillConfig;

const KnobSet& prefill_knobs() {
  static const KnobSet set{"prefill",
                           {{"layout", "striped", "query positions of a rank: contiguous, zigzag or striped"},
                            {"ring", "auto", "what travels the ring: kv (K and V), q (queries and their state) or auto (the model's faster)"},
                            {"chunk", "auto", "KV rows per ring chunk; auto: the largest of 256, 128, ... 16 that fits TCM"},
                            {"q_tile", "64", "query rows per tile"}}};
  return set;
}

class PrefillJob : public Job {
 public:
  PrefillJob(PrefillConfig c, gqa::AttentionData data, const Topology& topo, std::vector<std::uint32_t> cube_groups)
      : c_(std::move(c)), data_(std::move(data)), topo_(topo), cube_groups_(std::move(cube_groups)) {}
  bool data_mode(bool) const override { return data_.data(); }
  std::vector<std::uint32_t> cube_groups() const override { return cube_groups_; }
  Result run(RuntimeContext& rt) override {
    const gqa::PrefillResult p = gqa::run_prefill(rt, c_, data_.inputs());
    Result r = gqa::attention_result("gqa_prefill", c_.shape(), data_.data(), p.devices, p.cycles, topo_);
    r.knobs["cubes_per_group"] = p.placement.cubes;
    r.knobs["pes"] = p.placement.pes;
    r.knobs["replicas"] = p.placement.replicas;
    r.knobs["placement"] = p.placement_given ? "given" : "default rule";
    r.knobs["variant"] = gqa::variant_name(c_.variant);
    r.knobs["layout"] = gqa::layout_name(c_.layout);
    r.knobs["ring"] = gqa::ring_name(p.ring);
    r.knobs["ring_reason"] = p.ring_reason;
    r.knobs["chunk_rows"] = p.chunk_rows;
    r.knobs["q_tile"] = c_.q_tile;
    r.knobs["tile"] = {{"heads", p.tile_heads}, {"positions", p.tile_positions}};
    r.add("groups_per_sip", p.placement.groups_per_sip, Merge::Same);
    r.add("flops", p.flops, Merge::Same);
    r.add("hbm_bytes", c_.shape().hbm_bytes(), Merge::Same);
    r.add("gemm_flops", p.gemm_flops, Merge::Sum);
    r.add("roofline_cycles", p.roofline_cycles, Merge::Same);
    r.add("gemm_busy.max", p.busy_max, Merge::Max);
    r.add("gemm_busy.total", p.busy_total, Merge::Sum);
    r.add("pes_measured", p.pes_measured, Merge::Sum);
    r.add("ring.transfers", p.ring_transfers, Merge::Sum);
    r.add("ring.bytes", p.ring_bytes, Merge::Sum);
    r.add("ring.link_bytes", p.ring_link_bytes, Merge::Sum);
    r.add("model_cycles", p.model.cycles, Merge::Same);
    r.add("model.gemm", p.model.gemm, Merge::Same);
    r.add("model.fabric", p.model.fabric, Merge::Same);
    r.add("model.hbm", p.model.hbm, Merge::Same);
    r.add("model.noc", p.model.noc, Merge::Same);
    r.add("model.fill_drain", p.model.fill + p.model.drain + p.model.exposed, Merge::Same);
    r.add("model.bound", p.model.bound, Merge::Same);
    if (p.o) data_.finish(c_.shape(), *p.o, r);
    return r;
  }

 private:
  PrefillConfig c_;
  gqa::AttentionData data_;
  const Topology& topo_;
  std::vector<std::uint32_t> cube_groups_;
};

class GqaPrefill : public Workload {
 public:
  std::string name() const override { return "gqa_prefill"; }
  std::string summary() const override {
    return "GQA prefill: KV chunks on a ring of each KV head's group, query positions over its PEs, G heads per tile";
  }
  std::vector<const KnobSet*> knobs() const override {
    return {&model_knobs(), &gqa::shape_knobs(), &q_len_knobs(), &gqa::context_knobs(), &gqa::placement_knobs(), &gqa::variant_knobs(), &prefill_knobs(), &gqa::data_knobs(), &outputs_knobs(), &check_knobs(), &storage_knobs()};
  }
  bool splits_by_sip() const override { return true; }

  std::unique_ptr<Job> configure(const Values& v, const Setup& setup) const override {
    PrefillConfig c;
    static_cast<gqa::AttentionShape&>(c) = gqa::shape_of(v, 0);
    c.cubes = gqa::placement_count(v, "cubes_per_group").value_or(0);
    c.pes = gqa::placement_count(v, "pes").value_or(0);
    c.chunk_rows = v.text("chunk") == "auto" ? 0 : v.count32("chunk", 1, 1u << 16);
    c.q_tile = v.count32("q_tile", 1, 1u << 16);
    c.variant = gqa::variant_of(v, false);
    const auto layout = gqa::parse_layout(v.text("layout"));
    if (!layout) throw ConfigError("{layout} '" + ConfigError::literal(v.text("layout")) + "': allowed values: contiguous, zigzag, striped", true);
    c.layout = *layout;
    if (v.text("ring") != "auto") {
      c.ring = gqa::parse_ring(v.text("ring"));
      if (!c.ring) throw ConfigError("{ring} '" + ConfigError::literal(v.text("ring")) + "': allowed values: kv, q, auto", true);
    }
    gqa::AttentionData data(v, setup.data);
    c.devices = setup.devices;
    c.simulate = setup.simulate;
    std::vector<std::uint32_t> groups = gqa::cube_groups(*setup.topo, gqa::validate(c, *setup.topo).placement.cubes);
    data.prepare(c.shape());
    return std::make_unique<PrefillJob>(std::move(c), std::move(data), *setup.topo, std::move(groups));
  }

  void derive(Result& r, const Topology&) const override {
    const double cycles = static_cast<double>(r.simulated_cycles);
    const double pes = r.number("pes_measured");
    const double busy_mean = pes > 0 ? r.number("gemm_busy.total") / pes : 0;
    r.add("roofline_efficiency", r.number("roofline_cycles") / cycles, Merge::Derived);
    r.add("gemm_busy.mean", busy_mean, Merge::Derived);
    r.add("imbalance", busy_mean > 0 ? r.number("gemm_busy.max") / busy_mean : 0.0, Merge::Derived);
  }

  std::string report(const Result& r, const Topology& topo) const override {
    (void)topo;
    const nlohmann::json& k = r.knobs;
    const std::uint32_t cubes = k.at("cubes_per_group"), pes = k.at("pes"), replicas = k.at("replicas");
    report::Lines add;
    add("kernbench: gqa_prefill (%s, %s) on %s (%s), %s mode\n", k.at("variant").get<std::string>().c_str(),
        k.at("layout").get<std::string>().c_str(),
        r.topology_name.c_str(), r.topology_file.c_str(), r.mode.c_str());
    report::shape_line(add, k);
    add("  placement       C %u cubes x P %u PEs per KV head (ring; %s), %u replica(s) per head, %u group(s) per SIP, "
        "devices %s; chunks of %u KV rows, tiles of %u head(s) x %u position(s)\n",
        cubes, pes, k.at("placement").get<std::string>().c_str(), replicas, r.figure("groups_per_sip").get<std::uint32_t>(), devices_text(r.devices).c_str(),
        k.at("chunk_rows").get<std::uint32_t>(), k.at("tile").at("heads").get<std::uint32_t>(),
        k.at("tile").at("positions").get<std::uint32_t>());
    report::simulated_line(add, r);
    add("  flops           %.4g (causal-aware attention); GEMMs did %.4g\n", r.number("flops"), r.number("gemm_flops"));
    add("  roofline        %.0f cycles (FLOPs over the GEMM peak of every PE of the %zu SIP(s) used): efficiency "
        "%.1f%%\n",
        r.number("roofline_cycles"), r.devices.size(), 100.0 * r.number("roofline_efficiency"));
    add("  balance         max / mean PE GEMM busy = %.3f (where the time goes: the critical path below)\n",
        r.number("imbalance"));
    const bool pass_q = k.at("ring") == "q";
    add("  ring            %s (%s): %llu %s messages, %s PE to PE, %s of them over links between cubes\n",
        pass_q ? "pass-Q" : "pass-KV", k.at("ring_reason").get<std::string>().c_str(),
        static_cast<unsigned long long>(r.count("ring.transfers")), pass_q ? "query-tile and state" : "KV slice",
        units::format_bytes(r.count("ring.bytes")).c_str(), units::format_bytes(r.count("ring.link_bytes")).c_str());
    const double model = r.number("model_cycles");
    const double dev = (static_cast<double>(r.simulated_cycles) - model) / model;
    const std::string bound = r.figure("model.bound").get<std::string>();
    // Named where the model is known to miss by more than 10% (docs/gqa_prefill.md, The model).
    char why[200];
    if (bound == "gemm") {
      // The next largest resource: the transfers the GEMMs should hide.
      const char* name = "fabric port";
      double share = r.number("model.fabric");
      if (r.number("model.noc") > share) {
        name = "ring link";
        share = r.number("model.noc");
      }
      std::snprintf(why, sizeof why,
                    " - over 10%%: the %s's transfers (%.0f%% of the GEMM time) are not all hidden: a pair's "
                    "Q.K^T waits for the chunk or state that arrives last",
                    name, 100 * share / r.number("model.gemm"));
    } else {
      std::snprintf(why, sizeof why,
                    " - over 10%%: the model overlaps the transfers with the pairs fully, but a state or chunk "
                    "leaves only once the pair before it is done");
    }
    add("  model           %.0f cycles (closed form: fill + the largest of GEMM %.0f, fabric port %.0f, HBM %.0f, "
        "ring link %.0f + drain %.0f; %s-bound); simulated %+.1f%%%s\n",
        model, r.number("model.gemm"), r.number("model.fabric"), r.number("model.hbm"), r.number("model.noc"),
        r.number("model.fill_drain"), bound.c_str(), 100 * dev, std::abs(dev) <= 0.10 ? "" : why);
    return add.text();
  }
};

}  // namespace

const Workload& gqa_prefill_workload() { return instance<GqaPrefill>(); }

}  // namespace kb::workloads
