#include "kernels/gqa/decode_run.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include "kernels/gqa/helpers.h"
#include "kernels/gqa/placement.h"

namespace kb::gqa {
namespace {

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument(what); }

}  // namespace

reference::AttentionShape reference_shape(const DecodeConfig& c) {
  return {c.h_q, c.h_kv, c.t_q, c.d, c.s, c.causal, 1.0 / std::sqrt(static_cast<double>(c.d))};
}

void validate(const DecodeConfig& c, const Topology& topo) {
  if (c.h_kv == 0 || c.h_q == 0) bad("--heads-q and --heads-kv must be at least 1");
  if (c.h_q % c.h_kv != 0)
    bad("--heads-q " + std::to_string(c.h_q) + " is not a multiple of --heads-kv " + std::to_string(c.h_kv) +
        "; GQA needs H_q = G * H_kv");
  if (c.d == 0 || c.d > 512) bad("--head-dim " + std::to_string(c.d) + " is not supported; allowed: 1 to 512");
  if (c.s == 0) bad("--seq-len 0: the context needs at least one position");
  if (c.t_q == 0 || c.t_q > c.s)
    bad("--q-len " + std::to_string(c.t_q) + " is not allowed; allowed: 1 to the context length " + std::to_string(c.s));
  if (c.pes == 0 || c.pes > topo.cube.pes)
    bad("--pes " + std::to_string(c.pes) + " is not allowed; a cube of this topology has " +
        std::to_string(topo.cube.pes) + " PEs");
  const GroupShape g = group_shape(c.cubes);
  if (c.cubes == 0 || g.w > topo.sip.mesh_x || g.h > topo.sip.mesh_y || topo.sip.mesh_x % g.w != 0 ||
      topo.sip.mesh_y % g.h != 0)
    bad("--cubes-per-group " + std::to_string(c.cubes) + " is a " + std::to_string(g.w) + "x" + std::to_string(g.h) +
        " group, which does not tile the " + std::to_string(topo.sip.mesh_x) + "x" + std::to_string(topo.sip.mesh_y) +
        " cube mesh");
  if (c.stream_rows == 0) bad("the composite streaming tile must have at least one row");
  const auto devices = run_devices(c.devices, topo);
  const std::uint32_t per_sip = topo.cubes_per_sip() / c.cubes;
  if (static_cast<std::uint64_t>(devices.size()) * per_sip < c.h_kv)
    bad(std::to_string(c.h_kv) + " KV heads in groups of " + std::to_string(c.cubes) + " cubes need " +
        std::to_string((c.h_kv + per_sip - 1) / per_sip) + " SIP(s); the run has " + std::to_string(devices.size()));
  for (const SipId s : devices)
    if (s.value >= topo.system.sips) bad("device " + std::to_string(s.value) + " does not exist");
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

AttentionInputs AttentionInputs::random(const DecodeConfig& c, std::uint32_t seed) {
  auto fill = [](Shape shape, std::uint32_t sd) {
    HostTensor h;
    h.shape = std::move(shape);
    h.data.resize(h.elements());
    std::mt19937 gen(sd);
    std::normal_distribution<float> d(0.0f, 1.0f);
    for (auto& v : h.data) v = d(gen);
    return h;
  };
  const auto s = static_cast<std::int64_t>(c.s);
  return {fill({c.h_q, c.t_q, c.d}, seed), fill({c.h_kv, s, c.d}, seed + 1), fill({c.h_kv, s, c.d}, seed + 2)};
}

AttentionInputs AttentionInputs::from_npy(const std::string& dir, const DecodeConfig& c) {
  AttentionInputs in{read_npy(dir + "/q.npy"), read_npy(dir + "/k.npy"), read_npy(dir + "/v.npy")};
  const auto s = static_cast<std::int64_t>(c.s);
  const std::pair<const HostTensor*, Shape> want[] = {
      {&in.q, {c.h_q, c.t_q, c.d}}, {&in.k, {c.h_kv, s, c.d}}, {&in.v, {c.h_kv, s, c.d}}};
  const char* names[] = {"q.npy", "k.npy", "v.npy"};
  for (int i = 0; i < 3; ++i)
    if (want[i].first->shape != want[i].second)
      throw std::invalid_argument(dir + "/" + names[i] + ": shape " + shape_text(want[i].first->shape) +
                                  " does not match the run's " + shape_text(want[i].second) +
                                  " ([H_q, T_q, d] for q, [H_kv, S, d] for k and v)");
  return in;
}

NumericCheck check_attention(const DecodeConfig& c, const AttentionInputs& in, const HostTensor& o) {
  const auto shape = reference_shape(c);
  const auto exact = reference::attention(shape, in.q.data, in.k.data, in.v.data);
  const auto naive = reference::attention_naive(shape, in.q.data, in.k.data, in.v.data, c.dtype);
  std::vector<float> naive_f(naive.begin(), naive.end());
  NumericCheck r;
  r.error = reference::max_abs_error(o.data, exact);
  r.naive_error = reference::max_abs_error(naive_f, exact);
  r.tolerance = 2 * r.naive_error + 1e-5;  // FlashAttention style: twice the naive error, plus an atol
  r.pass = r.error <= r.tolerance;
  return r;
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

  auto& params = plan.params;
  params.resize(plan.devices.size());
  for (auto& p : params) {
    p = std::make_shared<DecodeParams>();
    p->g = g;
    p->t_q = c.t_q;
    p->d = c.d;
    p->s = c.s;
    p->causal = c.causal;
    p->scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.d)));
    p->cubes = c.cubes;
    p->pes = c.pes;
    p->variant = c.variant;
    p->tile_rows = plan.tile_rows;
    p->stream_rows = std::min(c.stream_rows, plan.tile_rows);
    p->dtype = c.dtype;
  }
  for (std::uint32_t h = 0; h < c.h_kv; ++h) {
    const std::uint32_t dev = h / plan.groups_per_sip, gi = h % plan.groups_per_sip;
    const SipId sip = plan.devices[dev];
    if (!simulates(c.simulate, sip)) continue;
    const std::uint32_t start = group_start(topo, c.cubes, gi);
    const GroupGeometry geo = GroupGeometry::of(start, c.cubes, topo.sip.mesh_x);
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
  if (rt.data_mode() && inputs == nullptr) throw std::invalid_argument("data mode needs inputs");
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
    if ((r.kind == "composite" || r.kind == "flash_tile") &&
        (r.tensor.rfind("k.", 0) == 0 || r.tensor.rfind("v.", 0) == 0))
      res.kv_bytes += r.bytes;
    ++res.issued_ops;
  }
  const std::uint64_t esz = dtype_bytes(c.dtype);
  const double pes_used = static_cast<double>(c.h_kv) * c.cubes * c.pes;
  res.roofline_cycles = 2.0 * static_cast<double>(c.s) * c.h_kv * c.d * esz /
                        (pes_used * static_cast<double>(topo.cube.hbm.bytes_per_cycle));
  // Closed-form model (seed §9): the Q load, then max(KV DMA, GEMMs) per rank and the
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
