// gqa_decode as a workload: its knobs, the SP table's choice of C and P, the result's
// figures and the report.
#include <cmath>
#include <optional>

#include "base/units.h"
#include "workloads/attention/placement.h"
#include "workloads/gqa_decode/decode_run.h"
#include "workloads/report.h"

namespace kb::workloads {
namespace {

using gqa::DecodeConfig;

const KnobSet& decode_knobs() {
  static const KnobSet set{
      "decode",
      {{"sp_table", KERNBENCH_SP_TABLE,
        "the SP table an auto placement uses when it matches the shape and topology (written by kernbench bench "
        "gqa_llama70b)"},
       {"tile", "0", "KV rows per sweep tile (0: auto)"}}};
  return set;
}

class DecodeJob : public Job {
 public:
  DecodeJob(DecodeConfig c, gqa::AttentionData data, const Topology& topo, std::vector<std::string> notes)
      : c_(std::move(c)), data_(std::move(data)), topo_(topo), notes_(std::move(notes)) {}
  std::vector<std::string> notes() const override { return notes_; }
  bool data_mode(bool) const override { return data_.data(); }
  std::vector<std::uint32_t> cube_groups() const override { return gqa::cube_groups(topo_, c_.cubes); }
  Result run(RuntimeContext& rt) override {
    const gqa::DecodeResult d = gqa::run_decode(rt, c_, data_.inputs());
    Result r = gqa::attention_result("gqa_decode", c_, data_.data(), d.devices, d.cycles, topo_);
    r.knobs["cubes_per_group"] = c_.cubes;
    r.knobs["pes"] = c_.pes;
    r.knobs["placement"] = c_.placement;
    r.knobs["variant"] = gqa::variant_name(c_.variant);
    r.knobs["tile_rows"] = d.tile_rows;
    r.knobs["row_block"] = d.row_block;
    r.knobs["split_rows"] = d.split_rows;
    r.knobs["segment_rows"] = d.segment_rows;
    r.knobs["v_tiles"] = d.split_rows > 0 ? "kept" : d.prefetch_v ? "prefetched" : "streamed";
    auto span = [](const gqa::Phase& p) { return nlohmann::json{{"begin", p.begin}, {"end", p.end}}; };
    r.add("groups_per_sip", d.groups_per_sip, Merge::Same);
    r.add("breakdown.kv_sweep", span(d.breakdown.sweep), Merge::Widen);
    r.add("breakdown.level2_reduce", span(d.breakdown.level2), Merge::Widen);
    r.add("breakdown.level1_reduce", span(d.breakdown.level1), Merge::Widen);
    r.add("breakdown.store", span(d.breakdown.store), Merge::Widen);
    r.add("kv_bytes", d.kv_bytes, Merge::Sum);
    r.add("roofline_cycles", d.roofline_cycles, Merge::Same);
    r.add("roofline_bound", d.bound, Merge::Same);
    r.add("flops", d.flops, Merge::Same);
    r.add("hbm_bytes", c_.hbm_bytes(), Merge::Same);
    r.add("model_cycles", d.model_cycles, Merge::Same);
    r.add("issued_ops", d.issued_ops, Merge::Sum);
    if (d.o) data_.finish(c_, *d.o, r);
    return r;
  }

 private:
  DecodeConfig c_;
  gqa::AttentionData data_;
  const Topology& topo_;
  std::vector<std::string> notes_;
};

class GqaDecode : public Workload {
 public:
  std::string name() const override { return "gqa_decode"; }
  std::string summary() const override {
    return "GQA decode: KV sharded over C cubes x P PEs per KV head, online softmax, two-level reduce";
  }
  std::vector<const KnobSet*> knobs() const override {
    return {&model_knobs(), &gqa::shape_knobs(), &q_len_knobs(), &gqa::context_knobs(), &gqa::placement_knobs(), &gqa::variant_knobs(), &decode_knobs(), &gqa::data_knobs(), &outputs_knobs(), &check_knobs(),
            &storage_knobs()};
  }
  bool splits_by_sip() const override { return true; }

  std::unique_ptr<Job> configure(const Values& v, const Setup& setup) const override {
    DecodeConfig c;
    static_cast<gqa::AttentionShape&>(c) = gqa::shape_of(v, 1);
    const std::optional<std::uint32_t> cubes = gqa::placement_count(v, "cubes_per_group"),
                                       pes = gqa::placement_count(v, "pes");
    c.tile_rows = v.count32("tile", 0, 1u << 16);
    c.variant = gqa::variant_of(v, true);
    gqa::AttentionData data(v, setup.data);
    std::vector<std::string> notes;
    c.devices = setup.devices;
    if (!cubes || !pes) notes.push_back(gqa::choose_placement(c, v.text("sp_table"), cubes, pes, *setup.topo));
    else {
      c.cubes = *cubes;
      c.pes = *pes;
    }
    c.simulate = setup.simulate;
    gqa::validate(c, *setup.topo);
    data.prepare(c);
    return std::make_unique<DecodeJob>(std::move(c), std::move(data), *setup.topo, std::move(notes));
  }

  void derive(Result& r, const Topology&) const override {
    r.add("roofline_efficiency", r.number("roofline_cycles") / static_cast<double>(r.simulated_cycles),
          Merge::Derived);
  }

  std::string report(const Result& r, const Topology& topo) const override {
    (void)topo;
    const nlohmann::json& k = r.knobs;
    const std::uint32_t cubes = k.at("cubes_per_group"), pes = k.at("pes");
    report::Lines add;
    add("kernbench: gqa_decode (%s) on %s (%s), %s mode\n", k.at("variant").get<std::string>().c_str(),
        r.topology_name.c_str(), r.topology_file.c_str(), r.mode.c_str());
    report::shape_line(add, k);
    const std::uint32_t split = k.at("split_rows");
    const std::string blocks = split > 0 ? "query rows in two blocks, " + std::to_string(split) + " then " +
                                               std::to_string(k.at("row_block").get<std::uint32_t>() - split) +
                                               ", the first reducing under the second's GEMMs, K and V kept in TCM"
                                         : std::to_string(k.at("row_block").get<std::uint32_t>()) + " query rows at a time";
    add("  placement       C %u cubes x P %u PEs per KV head (%s), %u group(s) per SIP, devices %s; sweep tiles of %u "
        "rows (V %s), %s\n",
        cubes, pes, k.at("placement").get<std::string>().c_str(), r.figure("groups_per_sip").get<std::uint32_t>(), devices_text(r.devices).c_str(),
        k.at("tile_rows").get<std::uint32_t>(), k.at("v_tiles").get<std::string>().c_str(), blocks.c_str());
    report::simulated_line(add, r);
    add("  breakdown       KV sweep %s, Level-2 reduce %s, Level-1 reduce %s, store %s (cycles)\n",
        report::span_text(r.figure("breakdown.kv_sweep")).c_str(),
        report::span_text(r.figure("breakdown.level2_reduce")).c_str(),
        report::span_text(r.figure("breakdown.level1_reduce")).c_str(),
        report::span_text(r.figure("breakdown.store")).c_str());
    add("  bytes           K/V read %s\n", units::format_bytes(r.count("kv_bytes")).c_str());
    const bool hbm = r.figure("roofline_bound").get<std::string>() == "hbm";
    add("  roofline        %.0f cycles (%s of every PE of the %zu SIP(s) used; the larger of the two bounds): "
        "efficiency %.1f%%\n",
        r.number("roofline_cycles"), hbm ? "KV bytes over the HBM bandwidth" : "FLOPs over the GEMM peak",
        r.devices.size(), 100.0 * r.number("roofline_efficiency"));
    const double model = r.number("model_cycles");
    const double dev = (static_cast<double>(r.simulated_cycles) - model) / model;
    const std::uint32_t rows = (k.at("heads_q").get<std::uint32_t>() / k.at("heads_kv").get<std::uint32_t>()) *
                               k.at("q_len").get<std::uint32_t>();
    // Where the model is off by more than 5%, the part of the schedule it does not follow.
    const std::string variant = k.at("variant").get<std::string>();
    const char* why =
        variant == "naive"   ? "the model is of the pipelined schedule, while naive waits for each tile's GEMMs and "
                               "softmax in turn"
        : variant == "fused" ? "the model is of the pipelined schedule, while fused updates each tile's state only "
                               "after the previous tile's (a serial step)"
        : k.at("row_block").get<std::uint32_t>() < rows
            ? "the model adds the query-row blocks one after another, while the kernel sweeps a block as the "
              "previous one reduces"
        : k.at("split_rows").get<std::uint32_t>() > 0
            ? "the model runs the two row blocks' reduces one after the other, while the kernel interleaves "
              "them on the PEs' fabric ports"
            : "the model leaves out the CPU's issue costs and messages queueing behind each other at a port, "
              "which weigh most when each rank holds few KV rows";
    add("  model           %.0f cycles (closed form: max(Q and KV DMA, Q load + GEMMs) + the last tile's softmax "
        "and P.V + Level-2 rounds + Level-1 levels in segments + store, per block of query rows); simulated "
        "%+.1f%%%s%s\n",
        model, 100 * dev, std::abs(dev) <= 0.05 ? "" : " - over 5%: ", std::abs(dev) <= 0.05 ? "" : why);
    add("  ops             %llu tl ops issued\n", static_cast<unsigned long long>(r.count("issued_ops")));
    return add.text();
  }
};

}  // namespace

const Workload& gqa_decode_workload() { return instance<GqaDecode>(); }

}  // namespace kb::workloads
