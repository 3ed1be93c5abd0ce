#include "workloads/gqa_decode/decode_run.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include "kernels/gqa/helpers.h"
#include "workloads/attention/placement.h"

namespace kb::gqa {
void validate(const DecodeConfig& c, const Topology& topo) {
  validate_shape(c);
  validate_groups(c, c.cubes, c.pes, "{cubes_per_group} " + std::to_string(c.cubes), run_devices(c.devices, topo),
                  topo);
  if (c.stream_rows == 0) throw workloads::ConfigError("the composite streaming tile must have at least one row");
}

std::uint32_t auto_tile_rows(const DecodeConfig& c, const Topology& topo) {
  (void)topo;
  const std::uint32_t m = (c.h_q / c.h_kv) * c.t_q;
  const std::uint64_t per_rank = (c.s + static_cast<std::uint64_t>(c.cubes) * c.pes - 1) / (c.cubes * c.pes);
  // S tiles of at most 4096 scores keep the per-tile buffers small; at least two tiles
  // per rank let the pipelined sweep overlap.
  std::uint64_t t = std::clamp<std::uint64_t>(4096 / std::max<std::uint32_t>(m, 1), 16, 512);
  t = std::min<std::uint64_t>(t, std::max<std::uint64_t>(16, (per_rank + 1) / 2));
  return static_cast<std::uint32_t>(t);
}

DecodePlan plan_decode(RuntimeContext& rt, const DecodeConfig& c, const AttentionInputs* inputs) {
  const Topology& topo = rt.system().topology();
  validate(c, topo);
  DecodePlan plan;
  plan.devices = run_devices(c.devices, topo);
  plan.groups_per_sip = topo.cubes_per_sip() / c.cubes;
  plan.tile_rows = c.tile_rows ? c.tile_rows : auto_tile_rows(c, topo);
  const std::uint32_t g = c.h_q / c.h_kv, m_rows = g * c.t_q;
  const auto s = static_cast<std::int64_t>(c.s);

  DecodeParams proto;
  static_cast<AttentionParams&>(proto) = attention_params(c, c.pes);
  proto.g = g;
  proto.cubes = c.cubes;
  proto.variant = c.variant;
  proto.tile_rows = plan.tile_rows;
  proto.stream_rows = std::min(c.stream_rows, plan.tile_rows);
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
    const DPPolicy root{Placement::Replicate, Placement::Replicate, geo.cube_at(geo.root_index()).value, 1, 1};
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
  const GroupShape shape = group_shape(c.cubes);
  const std::uint32_t m_rows = (c.h_q / c.h_kv) * c.t_q;
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
  for (std::size_t i = first_record; i < log.size(); ++i) {
    const OpRecord& r = log.records()[i];
    if (r.engine == "phase") continue;  // annotations, not ops
    if (r.kind == "composite" || r.kind == "flash_tile") widen(res.breakdown.sweep, r.start, r.end);
    if (r.kind == "send" || r.kind == "recv")
      widen(r.tag >= kTagLevel1 ? res.breakdown.level1 : res.breakdown.level2, r.start, r.end);
    if (r.kind == "store") widen(res.breakdown.store, r.start, r.end);
    // The kernel streams K and V, and nothing else, through its composites.
    if (r.kind == "composite" || r.kind == "flash_tile") res.kv_bytes += r.bytes;
    ++res.issued_ops;
  }
  const std::uint64_t esz = dtype_bytes(c.dtype);
  const double pes_used = static_cast<double>(c.h_kv) * c.cubes * c.pes;
  res.roofline_cycles = 2.0 * static_cast<double>(c.s) * c.h_kv * c.d * esz /
                        (pes_used * static_cast<double>(topo.cube.hbm.bytes_per_cycle));
  // Closed-form model (docs/gqa_decode.md): the Q load, then max(KV DMA, GEMMs) per rank and the
  // GEMM of the last streamed tile, then the two reduce levels and the store.
  const double per_rank = std::ceil(static_cast<double>(c.s) / (c.cubes * c.pes));
  const double hbm_bw = static_cast<double>(topo.cube.hbm.bytes_per_cycle);
  const double q_load = topo.cube.hbm.latency_cycles + m_rows * c.d * esz / hbm_bw;
  const double t_dma = 2 * per_rank * c.d * esz / hbm_bw + topo.cube.hbm.latency_cycles;
  const double stream = std::min<double>(c.stream_rows, res.tile_rows);
  const double last_gemm = std::ceil(m_rows / double(topo.pe.gemm.rows)) * std::ceil(c.d / double(topo.pe.gemm.cols)) *
                               stream + topo.pe.gemm.rows + topo.pe.gemm.cols;
  const double tiles = std::ceil(per_rank / res.tile_rows);
  const double gemm_tile = std::ceil(m_rows / double(topo.pe.gemm.rows)) *
                           (std::ceil(res.tile_rows / double(topo.pe.gemm.cols)) * c.d +
                            std::ceil(c.d / double(topo.pe.gemm.cols)) * res.tile_rows) +
                           2.0 * (topo.pe.gemm.rows + topo.pe.gemm.cols);
  const double state_bytes = m_rows * (c.d + 2.0) * 4;
  const double l2 = binomial_rounds(c.pes) * (topo.cube.fabric.latency_cycles + state_bytes / topo.cube.fabric.bytes_per_cycle);
  const double l1 = center_rounds(shape.w, shape.h) * (topo.sip.noc.latency_cycles + state_bytes / topo.sip.noc.bytes_per_cycle);
  const double store = topo.cube.hbm.latency_cycles + m_rows * c.d * esz / hbm_bw;
  res.model_cycles = q_load + std::max(t_dma, tiles * gemm_tile) + last_gemm + l2 + l1 + store;

  if (rt.data_mode()) res.o = gather(rt, plan.outputs, {c.h_q, c.t_q, c.d});
  return res;
}

}  // namespace kb::gqa
