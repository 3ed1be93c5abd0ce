#include "workloads/gqa_prefill/prefill_run.h"
#include "models/common/clock.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "kernels/gqa/helpers.h"
#include "workloads/attention/placement.h"

namespace kb::gqa {
namespace {

// Whether a PE of the run's device number `dev` belongs to one of the groups the run
// uses (heads fill the groups in order, device by device).
bool geo_has(const Topology& topo, const PrefillConfig& c, std::uint32_t groups_per_sip, std::uint32_t dev,
             const PeCoord& at) {
  const GroupShape shape = group_shape(c.g());
  const MeshPos pos = topo.mesh().pos(at.cube);
  const std::uint32_t group = (pos.y / shape.h) * (topo.sip.mesh_x / shape.w) + pos.x / shape.w;
  return at.pe.value < c.pes && group < groups_per_sip && dev * groups_per_sip + group < c.h_kv;
}

}  // namespace

AttentionShape PrefillConfig::shape() const {
  AttentionShape a = *this;
  a.t_q = q_len();
  return a;
}

void validate(const PrefillConfig& c, const Topology& topo) {
  if (c.h_kv == 0 || c.h_q == 0 || c.h_q % c.h_kv != 0)
    throw workloads::ConfigError("{heads_q} " + std::to_string(c.h_q) + " must be a positive multiple of {heads_kv} " +
                                 std::to_string(c.h_kv));
  if (c.g() % 2 != 0 && c.g() != 1)
    throw workloads::ConfigError("prefill runs one query head per cube (C = G = " + std::to_string(c.g()) +
                                 "); the ring needs an even number of cubes (or one)");
  if (c.chunk_rows == 0 || c.q_tile == 0) throw workloads::ConfigError("{chunk} and {q_tile} rows must be at least 1");
  validate_shape(c.shape());
  validate_groups(c, c.g(), c.pes, "the group of C = G = " + std::to_string(c.g()) + " cubes",
                  run_devices(c.devices, topo), topo);
}

PrefillResult run_prefill(RuntimeContext& rt, const PrefillConfig& c, const AttentionInputs* inputs) {
  const Topology& topo = rt.system().topology();
  validate(c, topo);
  if (rt.data_mode() && inputs == nullptr) throw workloads::ConfigError("data mode needs inputs");
  const std::uint32_t g = c.g(), t_q = c.q_len();
  PrefillResult res;
  res.devices = run_devices(c.devices, topo);
  res.groups_per_sip = topo.cubes_per_sip() / g;

  std::uint64_t rows_per_pe = t_q;
  if (t_q >= c.pes) {
    rows_per_pe = 0;
    for (std::uint32_t pe = 0; pe < c.pes; ++pe) {
      std::uint64_t n = 0;
      for (const RowRange& r : query_rows(c.layout, t_q, pe, c.pes)) n += r.count;
      rows_per_pe = std::max(rows_per_pe, n);
    }
  }
  PrefillParams proto;
  static_cast<AttentionParams&>(proto) = attention_params(c.shape(), c.pes);
  proto.cubes = g;
  proto.layout = c.layout;
  proto.chunk_rows = c.chunk_rows;
  proto.q_tile = c.q_tile;
  std::vector<std::shared_ptr<PrefillParams>> params;
  for (std::size_t i = 0; i < res.devices.size(); ++i) params.push_back(std::make_shared<PrefillParams>(proto));
  std::vector<std::vector<DeviceTensor>> outputs(c.h_kv);
  const auto s = static_cast<std::int64_t>(c.s);
  for (std::uint32_t h = 0; h < c.h_kv; ++h) {
    const std::uint32_t dev = h / res.groups_per_sip, gi = h % res.groups_per_sip;
    const SipId sip = res.devices[dev];
    if (!simulates(c.simulate, sip)) continue;
    const std::uint32_t start = group_start(topo, g, gi);
    const GroupGeometry geo = GroupGeometry::of(start, g, topo.mesh());
    auto name = [h](const char* what, std::uint32_t i = ~0u) { return head_tensor(what, h, i); };
    PrefillGroup grp;
    grp.cube_start = start;
    const DPPolicy kv = DPPolicy::shard2d(g, c.pes, start);
    if (inputs) {
      grp.k = rt.from_host(name("k"), host_rows(inputs->k, h * c.s, c.s, c.d, {s, c.d}), c.dtype, kv, sip);
      grp.v = rt.from_host(name("v"), host_rows(inputs->v, h * c.s, c.s, c.d, {s, c.d}), c.dtype, kv, sip);
    } else {
      grp.k = rt.empty(name("k"), {s, c.d}, c.dtype, kv, sip);
      grp.v = rt.empty(name("v"), {s, c.d}, c.dtype, kv, sip);
    }
    grp.state = rt.empty(name("state"), {static_cast<std::int64_t>(g * c.pes * rows_per_pe), c.d + 2}, DType::fp32,
                         kv, sip);
    for (std::uint32_t i = 0; i < g; ++i) {
      const DPPolicy rows{Placement::Replicate, Placement::RowWise, geo.cube_at(i).value, 1, c.pes};
      const std::uint32_t head = h * g + i;
      if (inputs)
        grp.q.push_back(rt.from_host(name("q", i), host_rows(inputs->q, static_cast<std::uint64_t>(head) * t_q, t_q, c.d,
                                                           {t_q, c.d}),
                                     c.dtype, rows, sip));
      else
        grp.q.push_back(rt.empty(name("q", i), {t_q, c.d}, c.dtype, rows, sip));
      grp.o.push_back(rt.empty(name("o", i), {t_q, c.d}, c.dtype, rows, sip));
    }
    outputs[h] = grp.o;
    params[dev]->groups.push_back(grp);
  }
  for (std::size_t dev = 0; dev < res.devices.size(); ++dev)
    if (!params[dev]->groups.empty())
      rt.launch(res.devices[dev], "gqa_prefill", gqa_prefill, std::shared_ptr<const PrefillParams>(params[dev]));
  const std::size_t first = rt.op_log().size();
  std::map<PeCoord, sc_core::sc_time> busy_before;
  for (std::uint32_t dev = 0; dev < res.devices.size(); ++dev)
    for (std::uint32_t cube = 0; cube < topo.cubes_per_sip(); ++cube)
      for (std::uint32_t pe = 0; pe < c.pes; ++pe) {
        const PeCoord at{res.devices[dev], CubeId(cube), PeId(pe)};
        if (simulates(c.simulate, at.sip) && geo_has(topo, c, res.groups_per_sip, dev, at)) busy_before[at] = rt.system().pe(at).gemm.busy();
      }
  rt.run();
  res.cycles = rt.last_run_cycles();

  // The work that must be done: every (query, visible key) pair, 4d FLOPs (Q.K^T and P.V).
  double pairs = 0;
  for (std::uint32_t t = 0; t < t_q; ++t) pairs += c.causal ? static_cast<double>(c.s - t_q + t + 1) : static_cast<double>(c.s);
  res.flops = 4.0 * c.d * c.h_q * pairs;
  const double pes_used = static_cast<double>(c.h_kv) * g * c.pes;
  res.roofline_cycles = res.flops / (pes_used * 2.0 * topo.pe.gemm.rows * topo.pe.gemm.cols);
  const OpLog& log = rt.op_log();
  for (std::size_t i = first; i < log.size(); ++i) {
    const OpRecord& r = log.records()[i];
    if (r.engine == "gemm") res.gemm_flops += static_cast<double>(r.flops);
    if (r.kind == "send" && (r.tag == kTagRingK || r.tag == kTagRingV)) {
      ++res.ring_transfers;
      res.ring_bytes += r.bytes;
    }
  }
  // GEMM busy per PE of the groups, from the engines (the work each did in this run).
  // Sums of whole cycles are exact in any order, so a partitioned run merges to the same means.
  for (const auto& [pe, before] : busy_before) {
    const double busy = std::round((rt.system().pe(pe).gemm.busy() - before) / cycle_time(topo));
    res.busy_max = std::max(res.busy_max, busy);
    res.busy_total += busy;
  }
  res.pes_measured = busy_before.size();
  if (rt.data_mode()) {
    std::vector<DeviceTensor> all;
    for (const auto& heads : outputs) all.insert(all.end(), heads.begin(), heads.end());
    res.o = gather(rt, all, {c.h_q, t_q, c.d});
  }
  return res;
}

}  // namespace kb::gqa
