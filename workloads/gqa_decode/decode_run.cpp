#include "workloads/gqa_decode/decode_run.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <stdexcept>

#include "kernels/gqa/helpers.h"
#include "workloads/attention/placement.h"
#include "workloads/gqa_decode/sp_table.h"

namespace kb::gqa {

void validate(const DecodeConfig& c, const Topology& topo) {
  validate_shape(c);
  validate_groups(c, c.cubes, c.pes, "{cubes_per_group} " + std::to_string(c.cubes), run_devices(c.devices, topo),
                  topo);
  if (c.stream_rows == 0) throw workloads::ConfigError("the composite streaming tile must have at least one row");
  decode_tiling(c, topo);
}

std::string choose_placement(DecodeConfig& c, const std::string& file, std::optional<std::uint32_t> cubes,
                             std::optional<std::uint32_t> pes, const Topology& topo) {
  const std::size_t devices = run_devices(c.devices, topo).size();
  const std::string s = " for S = " + std::to_string(c.s);
  const SpTable table = SpTable::load(file);
  if (table.topology == topo.name && table.h_q == c.h_q && table.h_kv == c.h_kv && table.d == c.d &&
      table.t_q == c.t_q) {
    try {
      const auto [tc, tp] = table.choose(c.s, cubes, pes);
      if (static_cast<std::uint64_t>(devices) * (topo.cubes_per_sip() / tc) >= c.h_kv) {
        c.cubes = tc;
        c.pes = tp;
        c.placement = "SP table";
        return "placement: the SP table " + file + " picks C = " + std::to_string(tc) + ", P = " +
               std::to_string(tp) + s;
      }
    } catch (const std::invalid_argument&) {
      // no entry with the given C or P: the rule below decides
    }
  }
  const HeadPlacement p = place_heads(c.h_kv, devices, topo, false, cubes, pes);
  c.cubes = p.cubes;
  c.pes = p.pes;
  c.placement = "default rule";
  return "placement: the default rule picks C = " + std::to_string(p.cubes) + ", P = " + std::to_string(p.pes) +
         " (the largest group that places all " + std::to_string(c.h_kv) + " KV heads on the run's " +
         std::to_string(devices) + " SIP(s))";
}


DecodePlan plan_decode(RuntimeContext& rt, const DecodeConfig& c, const AttentionInputs* inputs,
                       const TensorRegions& at) {
  const Topology& topo = rt.system().topology();
  validate(c, topo);
  DecodePlan plan;
  plan.devices = run_devices(c.devices, topo);
  plan.groups_per_sip = topo.cubes_per_sip() / c.cubes;
  const DecodeTiling tiling = decode_tiling(c, topo);
  plan.tile_rows = tiling.tile_rows;
  plan.row_block = tiling.row_block;
  plan.split_rows = tiling.split_rows;
  const std::uint32_t g = c.h_q / c.h_kv, m_rows = g * c.t_q;
  const auto s = static_cast<std::int64_t>(c.s);

  DecodeParams proto;
  static_cast<AttentionParams&>(proto) = attention_params(c, c.pes);
  proto.g = g;
  proto.cubes = c.cubes;
  proto.variant = c.variant;
  proto.tile_rows = plan.tile_rows;
  proto.stream_rows = std::min(c.stream_rows, plan.tile_rows);
  proto.row_block = plan.row_block;
  proto.prefetch_v = tiling.prefetch_v;
  proto.split_rows = tiling.split_rows;
  proto.segment_rows = segment_rows(c, topo);
  auto& params = plan.params;
  for (std::size_t i = 0; i < plan.devices.size(); ++i) params.push_back(std::make_shared<DecodeParams>(proto));
  for (std::uint32_t h = 0; h < c.h_kv; ++h) {
    const std::uint32_t dev = h / plan.groups_per_sip, gi = h % plan.groups_per_sip;
    const SipId sip = plan.devices[dev];
    if (!simulates(c.simulate, sip, gi)) continue;
    const std::uint32_t start = group_start(topo, c.cubes, gi);
    const GroupGeometry geo = GroupGeometry::of(start, c.cubes, topo.mesh());
    auto name = [h](const char* what) { return head_tensor(what, h); };
    const DPPolicy everywhere = DPPolicy::replicate(c.cubes, c.pes, start);
    const DPPolicy kv = DPPolicy::shard2d(c.cubes, c.pes, start);
    // O row-wise over the root cube's PEs: with one block of rows, each reduce owner stores its own.
    const DPPolicy root{Placement::Replicate, Placement::RowWise, geo.cube_at(geo.root_index()).value, 1, c.pes};
    DecodeGroup grp;
    grp.cube_start = start;
    if (inputs) {
      grp.q = rt.from_host(name("q"), host_rows(inputs->q, static_cast<std::uint64_t>(h) * m_rows, m_rows, c.d, {m_rows, c.d}),
                           c.dtype, everywhere, sip, at.q);
      grp.k = rt.from_host(name("k"), host_rows(inputs->k, h * c.s, c.s, c.d, {s, c.d}), c.dtype, kv, sip, at.k);
      grp.v = rt.from_host(name("v"), host_rows(inputs->v, h * c.s, c.s, c.d, {s, c.d}), c.dtype, kv, sip, at.v);
    } else {
      grp.q = rt.empty(name("q"), {m_rows, c.d}, c.dtype, everywhere, sip, at.q);
      grp.k = rt.empty(name("k"), {s, c.d}, c.dtype, kv, sip, at.k);
      grp.v = rt.empty(name("v"), {s, c.d}, c.dtype, kv, sip, at.v);
    }
    grp.o = rt.empty(name("o"), {m_rows, c.d}, c.dtype, root, sip, at.o);
    plan.outputs.push_back(grp.o);
    params[dev]->groups.push_back(grp);
  }
  return plan;
}

void launch_decode(RuntimeContext& rt, const DecodePlan& plan) {
  for (std::size_t dev = 0; dev < plan.devices.size(); ++dev)
    if (!plan.params[dev]->groups.empty())
      rt.launch(plan.devices[dev], "gqa_decode", gqa_decode, std::shared_ptr<const DecodeParams>(plan.params[dev]));
}

DecodeResult run_decode(RuntimeContext& rt, const DecodeConfig& c, const AttentionInputs* inputs) {
  const Topology& topo = rt.system().topology();
  if (rt.data_mode() && inputs == nullptr) throw workloads::ConfigError("data mode needs inputs");
  const DecodePlan plan = plan_decode(rt, c, inputs);
  DecodeResult res;
  res.devices = plan.devices;
  res.groups_per_sip = plan.groups_per_sip;
  res.tile_rows = plan.tile_rows;
  res.row_block = plan.row_block;
  res.split_rows = plan.split_rows;
  res.prefetch_v = plan.params.front()->prefetch_v;
  res.segment_rows = plan.params.front()->segment_rows;
  const GroupShape shape = group_shape(c.cubes);
  rt.separate_groups(cube_groups(topo, c.cubes));
  launch_decode(rt, plan);
  // What the op log says, as its records close.
  auto widen = [](Phase& p, std::uint64_t b, std::uint64_t e) {
    p.begin = p.end == 0 ? b : std::min(p.begin, b);
    p.end = std::max(p.end, e);
  };
  std::set<std::string> kv_names;
  for (const auto& params : plan.params)
    for (const DecodeGroup& g : params->groups) kv_names.insert({g.k.name(), g.v.name()});
  {
    const OpLog::Listening listening = rt.op_log().listen([&](const OpRecord& r) {
      if (r.engine == "phase") return;  // annotations, not ops
      if (r.kind == "composite" || r.kind == "flash_tile") widen(res.breakdown.sweep, r.start, r.end);
      if (r.kind == "send" || r.kind == "recv")
        widen(r.tag >= kTagLevel1 ? res.breakdown.level1 : res.breakdown.level2, r.start, r.end);
      if (r.kind == "store") widen(res.breakdown.store, r.start, r.end);
      // K and V reach a PE through the composites that stream them or (V loaded ahead) loads.
      if ((r.kind == "composite" || r.kind == "flash_tile" || r.kind == "load") && kv_names.count(r.tensor))
        res.kv_bytes += r.bytes;
      ++res.issued_ops;
    });
    rt.run();
  }
  res.cycles = rt.last_run_cycles();
  const std::uint64_t esz = dtype_bytes(c.dtype);
  // The SIPs that hold a group; every PE of them counts, busy or not.
  const std::size_t used = (c.h_kv + plan.groups_per_sip - 1) / plan.groups_per_sip;
  res.devices.resize(std::min(res.devices.size(), used));
  const double pes_used = static_cast<double>(res.devices.size()) * topo.pes_per_sip();
  double pairs = 0;  // (query, visible key) pairs of one query head
  for (std::uint32_t t = 0; t < c.t_q; ++t)
    pairs += c.causal ? static_cast<double>(c.s - c.t_q + t + 1) : static_cast<double>(c.s);
  res.flops = 4.0 * c.d * c.h_q * pairs;
  const double hbm_cycles = 2.0 * static_cast<double>(c.s) * c.h_kv * c.d * esz /
                            (pes_used * static_cast<double>(topo.cube.hbm.bytes_per_cycle));
  const double gemm_cycles = res.flops / (pes_used * 2.0 * topo.pe.gemm.rows * topo.pe.gemm.cols);
  res.roofline_cycles = std::max(hbm_cycles, gemm_cycles);
  res.bound = hbm_cycles >= gemm_cycles ? "hbm" : "gemm";
  // Closed-form model (docs/gqa_decode.md, Model), per block of m query rows: the sweep
  // (Q and the KV on the DMA, or Q's load and the GEMMs when they are slower, then the
  // last tile's softmax and its P.V), the Level-2 rounds, the Level-1 levels in segments
  // and the store of one owner's rows.
  const auto per_rank = static_cast<double>(kv_rows_per_rank(c));
  const double hbm_bw = static_cast<double>(topo.cube.hbm.bytes_per_cycle);
  const double hbm_lat = static_cast<double>(topo.cube.hbm.latency_cycles);
  const double fabric_bw = static_cast<double>(topo.cube.fabric.bytes_per_cycle);
  const double noc_bw = static_cast<double>(topo.sip.noc.bytes_per_cycle);
  const double fabric_lat = static_cast<double>(topo.cube.fabric.latency_cycles);
  const double noc_lat = static_cast<double>(topo.sip.noc.latency_cycles);
  const double tile_rows = std::min<double>(res.tile_rows, std::max(per_rank, 1.0));  // a tile holds at most the rank
  const double stream = std::min<double>(c.stream_rows, tile_rows);
  const double tiles = std::ceil(per_rank / tile_rows);
  const double last_cols = per_rank - (tiles - 1) * tile_rows;
  const double row_bytes = (c.d + 2.0) * 4;  // a state row, fp32
  const auto& issue = topo.pe.cpu.issue_cycles;
  auto merge = [&](double rows) { return merge_cycles(rows, c.d, topo, c.variant); };
  auto math = [&](const char* op, double elements, double width = 0) {
    return static_cast<double>(topo.math_cycles(op, static_cast<std::uint64_t>(elements), static_cast<std::uint32_t>(width)));
  };
  struct BlockModel {
    double sweep, exposed, gemms, tail;  // exposed: the last tile's softmax and O update; tail: the reduce and the store
  };
  // `resident`: the block reads K and V from TCM (a split's second block).
  auto block_model = [&](double m, bool resident) {
    const double t_dma = resident ? 0.0 : (2 * per_rank + m) * c.d * esz / hbm_bw + hbm_lat;  // Q, K and V share the channel
    const double q_load = hbm_lat + m * c.d * esz / hbm_bw;
    const double last_gemm = std::ceil(m / double(topo.pe.gemm.rows)) * std::ceil(c.d / double(topo.pe.gemm.cols)) *
                                 stream + topo.pe.gemm.rows + topo.pe.gemm.cols;
    auto gemm_tile = [&](double cols) {  // a tile's Q.K^T and P.V
      return std::ceil(m / double(topo.pe.gemm.rows)) *
                 (std::ceil(cols / double(topo.pe.gemm.cols)) * c.d + std::ceil(c.d / double(topo.pe.gemm.cols)) * cols) +
             2.0 * (topo.pe.gemm.rows + topo.pe.gemm.cols);
    };
    const double tile_gemms = (tiles - 1) * gemm_tile(tile_rows) + gemm_tile(last_cols);
    // The last tile's softmax (gqa_decode.cpp softmax_update and P's copy) and the issue of
    // its P.V stand between its Q.K^T and its P.V; O's update follows the P.V.
    const double n = m * last_cols;
    const double softmax = math("mul", n) + math("max", n, last_cols) + math("max", m) + math("exp", n) +
                           math("exp", m) + math("add", n, last_cols) + math("fma", m) + math("copy", m) +
                           math("copy", n) + static_cast<double>(issue.at("composite"));
    const double o_update = math("fma", m * c.d);
    const double gemms = tile_gemms + last_gemm;
    const double sweep = std::max(t_dma, q_load + tile_gemms) + last_gemm;
    // GEMM-bound, the softmax runs under the previous tile's P.V; HBM-bound, the GEMM
    // engine has nothing else to do.
    const double prev_pv = tiles > 1 && q_load + tile_gemms > t_dma
                               ? std::ceil(m / double(topo.pe.gemm.rows)) * std::ceil(c.d / double(topo.pe.gemm.cols)) *
                                     tile_rows + topo.pe.gemm.rows + topo.pe.gemm.cols
                               : 0.0;
    // Level 2: log2 P rounds, each a message of the larger half of the rows still held and
    // its merge; P not a power of two: P - 1 messages of one segment from every PE.
    const double seg = std::ceil(m / c.pes);
    double l2 = 0;
    if ((c.pes & (c.pes - 1)) == 0) {
      for (double rows = m, half = c.pes / 2.0; half >= 1; half /= 2) {
        rows = std::ceil(rows / 2);
        l2 += fabric_lat + rows * row_bytes / fabric_bw + merge(rows);
      }
    } else {
      l2 = (c.pes - 1) * (2 * fabric_lat + seg * row_bytes / fabric_bw) + merge(seg);
    }
    // Level 1: an owner's rows in k segments of r rows down the center tree, each level a
    // mesh hop and a merge. The segments after the first trail it by the larger of an
    // owner's round trip per segment (a PE has one message in flight) and the mesh link's
    // time for every owner's segments (even and odd owners take different links unless
    // the group is a line).
    const double owners = std::min<double>(c.pes, m);
    const double per_link = shape.w > 1 && shape.h > 1 ? std::ceil(owners / 2) : owners;
    const double rounds = center_rounds(shape.w, shape.h);  // none with one cube: one segment
    const double k = rounds == 0 ? 1.0
                                 : static_cast<double>(std::max<std::size_t>(
                                       1, segments({0, static_cast<std::uint64_t>(seg)}, res.segment_rows).size()));
    const double r = std::ceil(seg / k);
    const double ser = std::ceil(r * row_bytes / noc_bw);
    const double l1 = rounds == 0 ? 0.0
                                  : rounds * (noc_lat + ser + merge(r)) +
                                        std::max((k - 1) * (2 * noc_lat + ser), (per_link * k - 1) * ser);
    // The store: the last segment's divide by l (into the storage dtype), its issue, and
    // its write.
    const double store = math("div", r * c.d) + static_cast<double>(issue.at("store")) + hbm_lat + r * c.d * esz / hbm_bw;
    return BlockModel{sweep, std::max(0.0, softmax - prev_pv) + o_update, gemms, l2 + l1 + store};
  };
  res.model_cycles = 0;
  const std::vector<RowBlock> blocks = row_blocks(c.h_q / c.h_kv, c.t_q, res.row_block, res.split_rows);
  if (res.split_rows > 0) {  // the second block's GEMMs (K and V in TCM) under the first's softmax and reduce
    const BlockModel a = block_model(static_cast<double>(blocks[0].rows.count), false),
                     b = block_model(static_cast<double>(blocks[1].rows.count), true);
    res.model_cycles = a.sweep + std::max(b.gemms, a.exposed + a.tail) + b.exposed + b.tail;
  } else {
    for (const RowBlock& b : blocks) {
      const BlockModel m = block_model(static_cast<double>(b.rows.count), false);
      res.model_cycles += m.sweep + m.exposed + m.tail;
    }
  }

  if (rt.data_mode()) res.o = gather(rt, plan.outputs, {c.h_q, c.t_q, c.d});
  return res;
}

}  // namespace kb::gqa
