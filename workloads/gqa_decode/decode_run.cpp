#include "workloads/gqa_decode/decode_run.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <stdexcept>

#include "base/units.h"
#include "kernels/gqa/helpers.h"
#include "workloads/attention/placement.h"
#include "workloads/gqa_decode/sp_table.h"

namespace kb::gqa {
std::uint64_t decode_tcm_bytes(const DecodeConfig& c, std::uint32_t rows, std::uint32_t tile_rows,
                               std::uint32_t stream_rows, bool prefetch_v, bool split) {
  using tl::tcm_bytes;
  const DType f = DType::fp32, dt = c.dtype;
  const std::int64_t m = rows, t = tile_rows, d = c.d;
  const std::uint64_t scores = tcm_bytes({m * t, 1}, f), p = tcm_bytes({m * t, 1}, dt), o_rows = tcm_bytes({m, d}, f),
                      col = tcm_bytes({m, 1}, f), stage = tcm_bytes({4 * static_cast<std::int64_t>(stream_rows), d}, dt);
  // Q and the running state, then each variant's buffers (gqa_decode.cpp) with the most
  // a tile allocates in its scope: scaled scores, the mask and the masked scores, P; the
  // softmax columns; O rescaled.
  std::uint64_t b = tcm_bytes({m, d}, dt) + tcm_bytes({m, d + 2}, f);
  const std::uint64_t tile_scratch = 4 * scores + 4 * col + o_rows;
  switch (c.variant) {
    case Variant::Pipelined:
      b += 2 * (scores + p + o_rows + col + stage) + tile_scratch;
      if (split) b += 2 * tcm_bytes({static_cast<std::int64_t>(kv_rows_per_rank(c)), d}, dt);  // K and V kept
      else b += prefetch_v ? 3 * tcm_bytes({t, d}, dt) : 2 * stage;
      break;
    case Variant::Fused: b += 3 * (scores + p + o_rows + 3 * col + 2 * stage); break;
    case Variant::Naive:
      b += col + tile_scratch + scores + p + o_rows + 2 * tcm_bytes({2 * static_cast<std::int64_t>(stream_rows), d}, dt);
      break;
  }
  // After the sweep: at the root cube O (fp32 and stored), and the reduce's received
  // states with each merge's columns: log2 P halving messages (P - 1 segments when P is
  // not a power of two, fewer bytes) and up to 4 Level-1 segments, each at most a state.
  const std::uint64_t children = binomial_rounds(c.pes) + 4;
  return b + o_rows + tcm_bytes({m, d}, dt) + children * (tcm_bytes({m, d + 2}, f) + 3 * col);
}

bool gemm_bound(const DecodeConfig& c, std::uint32_t rows, const Topology& topo) {
  // Per KV row: its two GEMMs (Q.K^T over d, P.V into d columns) against its K and V bytes.
  // Both sides times the GEMM's columns, to stay in integers.
  const auto& g = topo.pe.gemm;
  const std::uint64_t gemm = (rows + g.rows - 1) / g.rows * (c.d + (c.d + g.cols - 1) / g.cols * g.cols);
  return gemm * topo.cube.hbm.bytes_per_cycle > 2ull * c.d * dtype_bytes(c.dtype) * g.cols;
}

bool prefetch_v(const DecodeConfig& c, std::uint32_t rows, std::uint32_t tile_rows, const Topology& topo) {
  if (c.variant != Variant::Pipelined) return false;
  // A V tile streamed by its P.V composite starts only once P is ready, and pays the HBM
  // latency where the DMA has nothing else queued; loaded ahead, its P.V is one GEMM
  // over the whole tile, longer than a streamed tile's last chunk by g (t - s) cycles.
  const auto& g = topo.pe.gemm;
  const std::uint64_t per_row = (rows + g.rows - 1) / g.rows * ((c.d + g.cols - 1) / g.cols);
  const std::uint64_t extra = per_row * (tile_rows - std::min(c.stream_rows, tile_rows));
  return gemm_bound(c, rows, topo) || extra < topo.cube.hbm.latency_cycles;
}

std::uint64_t kv_rows_per_rank(const DecodeConfig& c) {
  return (c.s + static_cast<std::uint64_t>(c.cubes) * c.pes - 1) / (static_cast<std::uint64_t>(c.cubes) * c.pes);
}

std::uint32_t split_rows(const DecodeConfig& c, std::uint32_t rows, const Topology& topo) {
  // All but the last GEMM row pass, in whole heads: the last pass's GEMMs then hide the
  // first block's reduce. One pass, or rows that do not split into whole heads: none.
  const std::uint32_t array = topo.pe.gemm.rows, passes = (rows + array - 1) / array;
  if (c.variant != Variant::Pipelined || passes < 2 || !gemm_bound(c, rows, topo)) return 0;
  return (passes - 1) * array / c.t_q * c.t_q;
}

double merge_cycles(double rows, std::uint32_t d, const Topology& topo) {
  // tl.merge_state's MATH steps: max, two exp_diffs and the copy of m per row; O and l
  // scaled twice and added.
  const auto& math = topo.pe.math;
  auto cost = [&](const char* op) { return static_cast<double>(math.cycles.at(op)); };
  return std::ceil(rows / math.lanes) * (cost("max") + 2 * cost("exp") + cost("copy")) +
         std::ceil(rows * (d + 1) / math.lanes) * (2 * cost("mul") + cost("add"));
}

std::uint32_t segment_rows(const DecodeConfig& c, const Topology& topo) {
  // The fewest rows whose transfer over a PE's fabric port (the narrowest link a state
  // crosses) takes at least as long as their merge and the CPU's issue of the send and
  // the merge: smaller segments would leave the port idle while the MATH engine or the
  // CPU catches up.
  const auto& cpu = topo.pe.cpu.issue_cycles;
  const double issue = static_cast<double>(cpu.at("send") + cpu.at("recv") + cpu.at("composite") + 3 * cpu.at("alloc"));
  const double row = (c.d + 2.0) * 4 / static_cast<double>(topo.cube.fabric.bytes_per_cycle);
  std::uint32_t rows = 1;
  while (rows * row < std::max(merge_cycles(rows, c.d, topo), issue)) ++rows;
  return rows;
}

DecodeTiling decode_tiling(const DecodeConfig& c, const Topology& topo) {
  const std::uint32_t g = c.h_q / c.h_kv;
  std::vector<std::uint32_t> candidates;  // whole heads x T_q, largest first, then runs of one head's positions
  for (std::uint32_t heads = g; heads >= 1; --heads) candidates.push_back(heads * c.t_q);
  for (std::uint32_t n = c.t_q / 2; n >= 1; n /= 2) candidates.push_back(n);
  DecodeTiling t;
  for (const std::uint32_t rows : candidates) {
    t.row_block = rows;
    t.tile_rows = c.tile_rows ? c.tile_rows : auto_tile_rows(c, rows, topo);
    t.prefetch_v = prefetch_v(c, rows, t.tile_rows, topo);
    const std::uint32_t stream = std::min(c.stream_rows, t.tile_rows);
    if (rows == g * c.t_q && (t.split_rows = split_rows(c, rows, topo)) > 0) {
      t.tcm_bytes = decode_tcm_bytes(c, rows, t.tile_rows, stream, t.prefetch_v, true);
      if (t.tcm_bytes <= topo.pe.tcm_bytes) return t;
      t.split_rows = 0;  // K and V do not fit beside the rest: one block, V tiles
    }
    t.tcm_bytes = decode_tcm_bytes(c, rows, t.tile_rows, stream, t.prefetch_v, false);
    if (t.tcm_bytes <= topo.pe.tcm_bytes) return t;
  }
  throw workloads::ConfigError("decode needs " + units::format_bytes(t.tcm_bytes) +
                               " of TCM per PE even one query row at a time (d " + std::to_string(c.d) +
                               ", sweep tiles of " + std::to_string(t.tile_rows) + " rows); a PE has " +
                               units::format_bytes(topo.pe.tcm_bytes) + ": give a smaller {tile} or {head_dim}");
}

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

std::uint32_t auto_tile_rows(const DecodeConfig& c, std::uint32_t m, const Topology& topo) {
  const std::uint64_t per_rank = kv_rows_per_rank(c);
  // Tiles of at most 16K scores keep the per-tile buffers small (64 KiB of fp32), in
  // whole GEMM column blocks so that no Q.K^T pays for columns it does not fill; two
  // tiles per rank let the pipelined sweep overlap, but not below one column block: a
  // rank of at most 64 keys sweeps one tile (two would pay two GEMM fills in a row for
  // nothing to overlap: S = 4K, 1,574 -> 1,381 cycles).
  const std::uint64_t cols = topo.pe.gemm.cols;
  std::uint64_t t = std::clamp<std::uint64_t>(16384 / std::max<std::uint32_t>(m, 1), 16, 512);
  if (t >= cols) t = t / cols * cols;
  t = std::min<std::uint64_t>(t, std::max<std::uint64_t>(cols, (per_rank + 1) / 2));
  return static_cast<std::uint32_t>(t);
}

DecodePlan plan_decode(RuntimeContext& rt, const DecodeConfig& c, const AttentionInputs* inputs) {
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
    if (!simulates(c.simulate, sip)) continue;
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
                           c.dtype, everywhere, sip);
      grp.k = rt.from_host(name("k"), host_rows(inputs->k, h * c.s, c.s, c.d, {s, c.d}), c.dtype, kv, sip);
      grp.v = rt.from_host(name("v"), host_rows(inputs->v, h * c.s, c.s, c.d, {s, c.d}), c.dtype, kv, sip);
    } else {
      grp.q = rt.empty(name("q"), {m_rows, c.d}, c.dtype, everywhere, sip);
      grp.k = rt.empty(name("k"), {s, c.d}, c.dtype, kv, sip);
      grp.v = rt.empty(name("v"), {s, c.d}, c.dtype, kv, sip);
    }
    grp.o = rt.empty(name("o"), {m_rows, c.d}, c.dtype, root, sip);
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
  launch_decode(rt, plan);
  const std::size_t first_record = rt.op_log().size();
  rt.run();
  res.cycles = rt.last_run_cycles();

  // What the op log says.
  const OpLog& log = rt.op_log();
  auto widen = [](Phase& p, std::uint64_t b, std::uint64_t e) {
    p.begin = p.end == 0 ? b : std::min(p.begin, b);
    p.end = std::max(p.end, e);
  };
  std::set<std::string> kv_names;
  for (const auto& params : plan.params)
    for (const DecodeGroup& g : params->groups) kv_names.insert({g.k.name(), g.v.name()});
  for (std::size_t i = first_record; i < log.size(); ++i) {
    const OpRecord& r = log.records()[i];
    if (r.engine == "phase") continue;  // annotations, not ops
    if (r.kind == "composite" || r.kind == "flash_tile") widen(res.breakdown.sweep, r.start, r.end);
    if (r.kind == "send" || r.kind == "recv")
      widen(r.tag >= kTagLevel1 ? res.breakdown.level1 : res.breakdown.level2, r.start, r.end);
    if (r.kind == "store") widen(res.breakdown.store, r.start, r.end);
    // K and V reach a PE through the composites that stream them or (V loaded ahead) loads.
    if ((r.kind == "composite" || r.kind == "flash_tile" || r.kind == "load") && kv_names.count(r.tensor))
      res.kv_bytes += r.bytes;
    ++res.issued_ops;
  }
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
  auto merge = [&](double rows) { return merge_cycles(rows, c.d, topo); };
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
                           math("exp", m) + math("mul", m) + math("add", n, last_cols) + math("add", m) +
                           math("copy", m) + math("copy", n) + static_cast<double>(issue.at("composite"));
    const double o_update = math("add", m * c.d);
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
    // The store: the last segment's divide by l (and cast), its issue, and its write.
    const double store = math("div", r * c.d) + (c.dtype == DType::fp32 ? 0 : math("copy", r * c.d)) +
                         static_cast<double>(issue.at("store")) + hbm_lat + r * c.d * esz / hbm_bw;
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
