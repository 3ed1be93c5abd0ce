#include "workloads/gqa_prefill/prefill_run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "base/units.h"
#include "workloads/gqa_prefill/prefill_model.h"
#include "kernels/gqa/helpers.h"
#include "models/common/clock.h"

namespace kb::gqa {
namespace {

using workloads::ConfigError;

}  // namespace

AttentionShape PrefillConfig::shape() const {
  AttentionShape a = *this;
  a.t_q = q_len();
  return a;
}

PrefillSetup validate(const PrefillConfig& c, const Topology& topo) {
  validate_shape(c.shape());
  if (c.q_tile == 0) throw ConfigError("{q_tile} 0: a query tile needs at least one row");
  if (c.cubes > 1 && c.cubes % 2 != 0)
    throw ConfigError("{cubes_per_group} " + std::to_string(c.cubes) +
                      ": the ring needs a Hamiltonian cycle of the group, so an even number of cubes (or one)");
  const std::vector<SipId> devices = run_devices(c.devices, topo);
  PrefillSetup s;
  s.placement = place_heads(c.h_kv, devices.size(), topo, true, c.cubes ? std::optional(c.cubes) : std::nullopt,
                            c.pes ? std::optional(c.pes) : std::nullopt);
  validate_groups(c, s.placement.cubes, s.placement.pes, "{cubes_per_group} " + std::to_string(s.placement.cubes),
                  devices, topo);
  PrefillShape& ps = s.plan_shape;
  ps.g = c.g();
  ps.d = c.d;
  ps.t_q = c.q_len();
  ps.s = c.s;
  ps.dtype = c.dtype;
  ps.cubes = s.placement.cubes;
  ps.pes = s.placement.pes;
  ps.replicas = s.placement.replicas;
  ps.layout = c.layout;
  ps.q_tile = c.q_tile;
  ps.variant = c.variant;
  // The chunk: as asked, or the largest of 256, 128, ... 16 rows whose buffers fit.
  const std::uint64_t tcm = topo.pe.tcm_bytes;
  auto fit = [&](Ring ring) {
    PrefillShape f = ps;
    f.ring = ring;
    f.chunk_rows = c.chunk_rows ? c.chunk_rows : 256;
    while (!c.chunk_rows && f.chunk_rows > 16 && PrefillPlan::geometry(f).tcm_bytes() > tcm) f.chunk_rows /= 2;
    return f;
  };
  auto fits = [&](const PrefillShape& f) { return PrefillPlan::geometry(f).tcm_bytes() <= tcm; };
  if (c.ring) {
    ps = fit(*c.ring);
    s.ring_reason = "asked for";
    s.model = prefill_model(ps, c.causal, topo);
  } else {
    // auto: the ring the model says is faster (of those whose buffers fit).
    const PrefillShape kv = fit(Ring::KV), q = fit(Ring::Q);
    const PrefillModel mk = prefill_model(kv, c.causal, topo), mq = prefill_model(q, c.causal, topo);
    const bool pick_q = fits(q) && (!fits(kv) || mq.cycles < mk.cycles);
    ps = pick_q ? q : kv;
    s.model = pick_q ? mq : mk;
    char why[160];
    std::snprintf(why, sizeof why, "auto: the model gives pass-Q %.3g cycles (%s-bound), pass-KV %.3g (%s-bound)",
                  mq.cycles, mq.bound.c_str(), mk.cycles, mk.bound.c_str());
    s.ring_reason = why;
  }
  const PrefillPlan plan = PrefillPlan::geometry(ps);
  if (plan.tcm_bytes() > tcm)
    throw ConfigError("the prefill buffers (chunks of " + std::to_string(ps.chunk_rows) + " KV rows, tiles of " +
                      std::to_string(plan.tile_rows()) + " query rows, d " + std::to_string(c.d) + ") need " +
                      units::format_bytes(plan.tcm_bytes()) + " of TCM per PE; a PE has " + units::format_bytes(tcm) +
                      ": give a smaller {chunk} or {q_tile}");
  return s;
}

PrefillPlacement plan_prefill(RuntimeContext& rt, const PrefillConfig& c, const AttentionInputs* inputs,
                              const TensorRegions& at) {
  const Topology& topo = rt.system().topology();
  PrefillPlacement out;
  out.setup = validate(c, topo);
  const HeadPlacement& pl = out.setup.placement;
  out.plan = std::make_shared<const PrefillPlan>(PrefillPlan::of(out.setup.plan_shape));
  const PrefillPlan& plan = *out.plan;
  const std::uint32_t g = c.g(), t_q = c.q_len(), cubes = pl.cubes, pes = pl.pes;
  const std::vector<SipId> all = run_devices(c.devices, topo);
  out.devices.assign(all.begin(), all.begin() + pl.sips);
  PrefillParams proto;
  static_cast<AttentionParams&>(proto) = attention_params(c.shape(), pes);
  proto.plan = out.plan;
  for (std::size_t i = 0; i < out.devices.size(); ++i) out.params.push_back(std::make_shared<PrefillParams>(proto));
  const auto s = static_cast<std::int64_t>(c.s), rows = static_cast<std::int64_t>(cubes * pes * plan.stride);
  for (std::uint32_t h = 0; h < c.h_kv; ++h)
    for (std::uint32_t r = 0; r < pl.replicas; ++r) {
      const std::uint32_t dev = pl.device_of(h, r);
      const SipId sip = out.devices[dev];
      if (!simulates(c.simulate, sip, pl.slot_of(h, r))) continue;
      const std::uint32_t start = group_start(topo, cubes, pl.slot_of(h, r));
      auto name = [h, r, &pl](const char* what) { return head_tensor(what, h, pl.replicas > 1 ? r : ~0u); };
      PrefillGroup grp;
      grp.cube_start = start;
      grp.replica = r;
      const DPPolicy kv = DPPolicy::shard2d(cubes, pes, start);
      if (inputs) {
        grp.k = rt.from_host(name("k"), host_rows(inputs->k, h * c.s, c.s, c.d, {s, c.d}), c.dtype, kv, sip, at.k);
        grp.v = rt.from_host(name("v"), host_rows(inputs->v, h * c.s, c.s, c.d, {s, c.d}), c.dtype, kv, sip, at.v);
        HostTensor q;
        q.shape = {rows, c.d};
        q.data.assign(static_cast<std::size_t>(rows) * c.d, 0.0f);
        for_each_row(plan, r, [&](std::uint64_t row, std::uint32_t head, std::uint64_t pos) {
          const std::uint64_t from = ((static_cast<std::uint64_t>(h) * g + head) * t_q + pos) * c.d;
          std::copy_n(inputs->q.data.begin() + static_cast<long>(from), c.d, q.data.begin() + static_cast<long>(row * c.d));
        });
        grp.q = rt.from_host(name("q"), q, c.dtype, kv, sip, at.q);
      } else {
        grp.k = rt.empty(name("k"), {s, c.d}, c.dtype, kv, sip, at.k);
        grp.v = rt.empty(name("v"), {s, c.d}, c.dtype, kv, sip, at.v);
        grp.q = rt.empty(name("q"), {rows, c.d}, c.dtype, kv, sip, at.q);
      }
      grp.o = rt.empty(name("o"), {rows, c.d}, c.dtype, kv, sip, at.o);
      if (plan.shape.ring == Ring::KV)
        grp.state = rt.empty(name("state"), {rows, c.d + 2}, DType::fp32, kv, sip, at.state);
      out.placed.push_back({h, grp});
      out.params[dev]->groups.push_back(grp);
    }
  return out;
}

void launch_prefill(RuntimeContext& rt, const PrefillPlacement& p) {
  for (std::size_t dev = 0; dev < p.devices.size(); ++dev)
    if (!p.params[dev]->groups.empty())
      rt.launch(p.devices[dev], "gqa_prefill", gqa_prefill, std::shared_ptr<const PrefillParams>(p.params[dev]));
}

PrefillResult run_prefill(RuntimeContext& rt, const PrefillConfig& c, const AttentionInputs* inputs) {
  const Topology& topo = rt.system().topology();
  if (rt.data_mode() && inputs == nullptr) {
    validate(c, topo);
    throw ConfigError("data mode needs inputs");
  }
  const PrefillPlacement placement = plan_prefill(rt, c, inputs);
  const PrefillSetup& setup = placement.setup;
  const HeadPlacement& pl = setup.placement;
  const PrefillPlan& plan = *placement.plan;
  const std::uint32_t g = c.g(), t_q = c.q_len(), cubes = pl.cubes;
  PrefillResult res;
  res.placement = pl;
  res.placement_given = c.cubes && c.pes;
  res.chunk_rows = plan.shape.chunk_rows;
  res.tile_heads = plan.tile_heads;
  res.tile_positions = plan.tile_positions;
  res.ring = plan.shape.ring;
  res.ring_reason = setup.ring_reason;
  res.model = setup.model;
  res.devices = placement.devices;
  launch_prefill(rt, placement);
  const std::vector<std::uint32_t> group_of = cube_groups(topo, cubes);
  rt.separate_groups(group_of);
  std::map<PeCoord, sc_core::sc_time> busy_before;
  for (const SipId sip : res.devices)
    for (std::uint32_t cube = 0; cube < topo.cubes_per_sip(); ++cube)
      for (std::uint32_t pe = 0; pe < topo.cube.pes; ++pe) {
        const PeCoord at{sip, CubeId(cube), PeId(pe)};
        if (simulates(c.simulate, sip, group_of[cube])) busy_before[at] = rt.system().pe(at).gemm.busy();
      }
  {
    const OpLog::Listening listening = rt.op_log().listen([&](const OpRecord& r) {
      if (r.engine == "gemm") res.gemm_flops += static_cast<double>(r.flops);
      // The ring's messages: pass-KV's slices on the ring and shared in the cube, pass-Q's
      // query tiles and states; those with a mesh hop crossed a link between cubes.
      if (r.kind == "send" && r.tag >= kTagRingK && r.tag <= kTagRingState) {
        ++res.ring_transfers;
        res.ring_bytes += r.bytes;
        if (r.hops > 0) res.ring_link_bytes += r.bytes;
      }
    });
    rt.run();
  }
  res.cycles = rt.last_run_cycles();

  // The work that must be done: every (query, visible key) pair, 4d FLOPs (Q.K^T and P.V).
  double pairs = 0;
  for (std::uint32_t t = 0; t < t_q; ++t) pairs += c.causal ? static_cast<double>(c.s - t_q + t + 1) : static_cast<double>(c.s);
  res.flops = 4.0 * c.d * c.h_q * pairs;
  const double pes_used = static_cast<double>(res.devices.size()) * topo.pes_per_sip();
  res.roofline_cycles = res.flops / (pes_used * 2.0 * topo.pe.gemm.rows * topo.pe.gemm.cols);
  // GEMM busy per PE, from the engines (the work each did in this run). Sums of whole
  // cycles are exact in any order, so a partitioned run merges to the same means.
  for (const auto& [pe, before] : busy_before) {
    const double busy = std::round((rt.system().pe(pe).gemm.busy() - before) / cycle_time(topo));
    res.busy_max = std::max(res.busy_max, busy);
    res.busy_total += busy;
  }
  res.pes_measured = busy_before.size();
  if (rt.data_mode()) {
    HostTensor o;
    o.shape = {c.h_q, t_q, c.d};
    o.data.assign(static_cast<std::size_t>(c.h_q) * t_q * c.d, 0.0f);
    for (const PrefillPlacement::Placed& p : placement.placed) {
      const HostTensor part = rt.read(p.group.o);
      for_each_row(plan, p.group.replica, [&](std::uint64_t row, std::uint32_t head, std::uint64_t pos) {
        const std::uint64_t to = ((static_cast<std::uint64_t>(p.head) * g + head) * t_q + pos) * c.d;
        std::copy_n(part.data.begin() + static_cast<long>(row * c.d), c.d, o.data.begin() + static_cast<long>(to));
      });
    }
    res.o = std::move(o);
  }
  return res;
}

}  // namespace kb::gqa
