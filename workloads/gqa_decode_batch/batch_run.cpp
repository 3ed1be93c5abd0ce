#include "workloads/gqa_decode_batch/batch_run.h"

#include <algorithm>
#include <numeric>
#include <set>

#include "base/units.h"
#include "kernels/tl/ctx.h"
#include "workloads/attention/placement.h"
#include "workloads/attention/decode_tiling.h"
#include "workloads/gqa_decode_batch/batch_spec.h"

namespace kb::gqa {

using workloads::ConfigError;

namespace {

// The runs of one request's pages on each rank, as rows of the rank's shard of K and V.
std::vector<std::vector<BatchPiece>> pieces_of(const PagedKv& kv, std::uint64_t rank_rows) {
  std::vector<std::vector<BatchPiece>> out(kv.ranks.size());
  for (std::uint32_t r = 0; r < kv.ranks.size(); ++r)
    for (std::uint32_t slot = 0; slot < kv.ranks[r].size(); ++slot) {
      const Page& page = kv.ranks[r][slot];
      auto& mine = out[r];
      if (!mine.empty() && mine.back().request == page.request) {
        mine.back().rows.count += page.rows;  // the request's pages fill whole slots but its last
        continue;
      }
      mine.push_back({page.request, {kv.cache_row(page.request, page.row0, rank_rows), page.rows}, page.row0});
    }
  return out;
}

std::uint64_t rank_rows_of(const PagedKv& kv) {
  std::size_t most = 1;
  for (const auto& r : kv.ranks) most = std::max(most, r.size());
  return most * kv.page_rows;
}

// The decode sweep's cut for the batch (decode_tiling.h): all G x T_q query rows of a
// request at once, tiles of whole pages. Throws ConfigError when its buffers overflow TCM.
struct BatchTiling {
  DecodeConfig sweep;  // decode's view: S = the largest rank's rows x ranks
  std::uint32_t tile_rows = 0;
  bool prefetch_v = false;
};
BatchTiling batch_tiling(const BatchConfig& c, const PagedKv& kv, const Topology& machine) {
  Topology topo = machine;  // with the TCM the caller leaves
  if (c.tcm_reserved >= topo.pe.tcm_bytes)
    throw ConfigError("batched decode: the caller holds " + units::format_bytes(c.tcm_reserved) + " of the " +
                      units::format_bytes(topo.pe.tcm_bytes) + " TCM");
  topo.pe.tcm_bytes -= c.tcm_reserved;
  BatchTiling t;
  static_cast<AttentionShape&>(t.sweep) = c;
  t.sweep.cubes = c.cubes;
  t.sweep.pes = c.pes;
  t.sweep.s = rank_rows_of(kv) * c.cubes * c.pes;
  const std::uint32_t m = c.g() * c.t_q;
  t.tile_rows = std::max(auto_tile_rows(t.sweep, m, topo) / c.page_rows * c.page_rows, c.page_rows);
  t.prefetch_v = prefetch_v(t.sweep, m, t.tile_rows, topo);
  // Decode's buffers, and three more states in turn (gqa_decode_batch.cpp); a request's
  // gather receives at most log2(C x P) <= log2 P + 4 states, as decode's reduce counts.
  const std::uint64_t bytes =
      decode_tcm_bytes(t.sweep, m, t.tile_rows, std::min(t.sweep.stream_rows, t.tile_rows), t.prefetch_v, false) +
      3 * tl::tcm_bytes({static_cast<std::int64_t>(m), static_cast<std::int64_t>(c.d) + 2}, DType::fp32);
  if (bytes > topo.pe.tcm_bytes)
    throw ConfigError("batched decode needs " + units::format_bytes(bytes) + " of TCM per PE (G x T_q = " +
                      std::to_string(m) + " query rows at once, tiles of " + std::to_string(t.tile_rows) +
                      " KV rows, whole pages of {page_rows} " + std::to_string(c.page_rows) + "); a PE has " +
                      units::format_bytes(topo.pe.tcm_bytes) +
                      (c.tcm_reserved ? " beside the " + units::format_bytes(c.tcm_reserved) + " its caller holds" : "") +
                      ": give a smaller {page_rows} or {q_len}");
  return t;
}

// The first row of each request in the varlen layout.
std::vector<std::uint64_t> offsets(const std::vector<std::uint64_t>& lens) {
  std::vector<std::uint64_t> out(lens.size(), 0);
  for (std::size_t q = 1; q < lens.size(); ++q) out[q] = out[q - 1] + lens[q - 1];
  return out;
}

}  // namespace

BatchInputs BatchInputs::random(const BatchConfig& c, std::uint32_t seed) {
  const auto b = static_cast<std::int64_t>(c.lens.size());
  const auto rows = static_cast<std::int64_t>(std::accumulate(c.lens.begin(), c.lens.end(), std::uint64_t{0}));
  return {random_normal({b, c.h_q, c.t_q, c.d}, seed), random_normal({c.h_kv, rows, c.d}, seed + 1),
          random_normal({c.h_kv, rows, c.d}, seed + 2)};
}

BatchInputs BatchInputs::from_npy(const std::string& dir, BatchConfig& c) {
  const std::string where = ConfigError::literal(dir) + "/";
  c.lens.clear();
  for (const std::int64_t len : read_npy_int64(dir + "/lens.npy")) {
    if (len <= 0)
      throw ConfigError(where + "lens.npy: a length of " + std::to_string(len) + "; every request needs at least 1 position");
    c.lens.push_back(static_cast<std::uint64_t>(len));
  }
  if (c.lens.empty()) throw ConfigError(where + "lens.npy: no requests");
  if (c.lens.size() > kMaxRequests)
    throw ConfigError(where + "lens.npy: " + std::to_string(c.lens.size()) + " requests; a batch holds at most " +
                      std::to_string(kMaxRequests));
  BatchInputs in{read_npy(dir + "/q.npy"), read_npy(dir + "/k.npy"), read_npy(dir + "/v.npy")};
  const auto b = static_cast<std::int64_t>(c.lens.size());
  const auto rows = static_cast<std::int64_t>(std::accumulate(c.lens.begin(), c.lens.end(), std::uint64_t{0}));
  const std::pair<const HostTensor*, Shape> want[] = {
      {&in.q, {b, c.h_q, c.t_q, c.d}}, {&in.k, {c.h_kv, rows, c.d}}, {&in.v, {c.h_kv, rows, c.d}}};
  const char* names[] = {"q.npy", "k.npy", "v.npy"};
  for (int i = 0; i < 3; ++i)
    if (want[i].first->shape != want[i].second)
      throw ConfigError(where + names[i] + ": shape " + shape_text(want[i].first->shape) + " does not match " +
                        shape_text(want[i].second) + " ([B, H_q, T_q, d] for q, [H_kv, sum of lens.npy, d] for k and v)");
  return in;
}

workloads::Numerics check_batch(const BatchConfig& c, const BatchInputs& in, const HostTensor& o) {
  const std::vector<std::uint64_t> off = offsets(c.lens);
  const std::uint64_t q_elems = static_cast<std::uint64_t>(c.h_q) * c.t_q * c.d;
  const std::uint64_t all_rows = in.k.shape[1];
  workloads::Numerics worst;
  worst.pass = true;
  double nearest = -1;
  for (std::size_t q = 0; q < c.lens.size(); ++q) {
    AttentionShape a = c;
    a.s = c.lens[q];
    AttentionInputs one;
    one.q.shape = {c.h_q, c.t_q, c.d};
    one.q.data.assign(in.q.data.begin() + static_cast<std::ptrdiff_t>(q * q_elems),
                      in.q.data.begin() + static_cast<std::ptrdiff_t>((q + 1) * q_elems));
    for (auto [from, to] : {std::pair{&in.k, &one.k}, std::pair{&in.v, &one.v}}) {
      to->shape = {c.h_kv, static_cast<std::int64_t>(a.s), c.d};
      for (std::uint32_t h = 0; h < c.h_kv; ++h) {
        const auto first = from->data.begin() + static_cast<std::ptrdiff_t>((h * all_rows + off[q]) * c.d);
        to->data.insert(to->data.end(), first, first + static_cast<std::ptrdiff_t>(a.s * c.d));
      }
    }
    HostTensor mine;
    mine.shape = one.q.shape;
    mine.data.assign(o.data.begin() + static_cast<std::ptrdiff_t>(q * q_elems),
                     o.data.begin() + static_cast<std::ptrdiff_t>((q + 1) * q_elems));
    const workloads::Numerics n = check_attention(a, one, mine);
    worst.error = std::max(worst.error, n.error);
    worst.pass = worst.pass && n.pass;
    if (n.error / n.tolerance > nearest) {
      nearest = n.error / n.tolerance;
      worst.naive_error = n.naive_error;
      worst.tolerance = n.tolerance;
    }
  }
  return worst;
}

PagedKv validate(const BatchConfig& c, const Topology& topo) {
  if (c.lens.empty()) throw ConfigError("{batch} is empty: a batch needs at least one request", true);
  validate_shape(c);
  const std::uint64_t shortest = *std::min_element(c.lens.begin(), c.lens.end());
  if (c.t_q > shortest)
    throw ConfigError("{q_len} " + std::to_string(c.t_q) + " is over the shortest request's length " +
                      std::to_string(shortest) + ": each request's T_q queries are the last T_q of its context");
  validate_groups(c, c.cubes, c.pes, "{cubes_per_group} " + std::to_string(c.cubes), run_devices(c.devices, topo), topo);
  PagedKv kv = allocate_checked(c.lens, c.page_rows, c.cubes * c.pes,
                                static_cast<std::uint64_t>(c.page_rows) * c.d * dtype_bytes(c.dtype), topo);
  batch_tiling(c, kv, topo);
  return kv;
}

BatchPlan plan_decode_batch(RuntimeContext& rt, const BatchConfig& c, const BatchInputs* inputs,
                            const TensorRegions& at) {
  const Topology& topo = rt.system().topology();
  BatchPlan plan;
  plan.kv = validate(c, topo);
  const PagedKv& kv = plan.kv;
  const std::uint32_t ranks = c.cubes * c.pes, g = c.g(), m_rows = g * c.t_q;
  const auto b = static_cast<std::uint32_t>(c.lens.size());
  const std::uint64_t rank_rows = plan.rank_rows = rank_rows_of(kv);
  const BatchTiling tiling = batch_tiling(c, kv, topo);
  plan.tile_rows = tiling.tile_rows;

  DecodeBatchParams proto;
  static_cast<AttentionParams&>(proto) = attention_params(c, c.pes);
  proto.g = g;
  proto.cubes = c.cubes;
  proto.tile_rows = plan.tile_rows;
  proto.stream_rows = std::min(tiling.sweep.stream_rows, plan.tile_rows);
  proto.row_block = m_rows;
  proto.prefetch_v = tiling.prefetch_v;
  proto.segment_rows = segment_rows(tiling.sweep, topo);
  proto.pieces = pieces_of(kv, rank_rows);
  for (std::uint32_t q = 0; q < b; ++q) {
    BatchRequest req{c.lens[q], {}, false};
    for (const PageRef& page : kv.tables[q])
      if (req.ranks.empty() || req.ranks.back() != page.rank) req.ranks.push_back(page.rank);
    req.whole_group = req.ranks.size() == ranks || b == 1 || c.two_level;
    proto.requests.push_back(std::move(req));
  }

  plan.devices = run_devices(c.devices, topo);
  const std::uint32_t groups_per_sip = topo.cubes_per_sip() / c.cubes;
  auto& params = plan.params;
  const std::vector<std::uint64_t> off = offsets(c.lens);
  for (std::size_t i = 0; i < plan.devices.size(); ++i) params.push_back(std::make_shared<DecodeBatchParams>(proto));
  const auto rows = static_cast<std::int64_t>(rank_rows * ranks);
  for (std::uint32_t h = 0; h < c.h_kv; ++h) {
    const std::uint32_t dev = h / groups_per_sip;
    const SipId sip = plan.devices[dev];
    if (!simulates(c.simulate, sip, h % groups_per_sip)) continue;
    const std::uint32_t start = group_start(topo, c.cubes, h % groups_per_sip);
    auto name = [h](const char* what) { return head_tensor(what, h); };
    DecodeGroup grp;
    grp.cube_start = start;
    const GroupGeometry geo = GroupGeometry::of(start, c.cubes, topo.mesh());
    // O row-wise over the root cube's PEs, as decode places it (a request on every rank
    // stores its rows from there).
    const DPPolicy root{Placement::Replicate, Placement::RowWise, geo.cube_at(geo.root_index()).value, 1, c.pes};
    const Shape q_shape{static_cast<std::int64_t>(b) * m_rows, c.d}, kv_shape{rows, c.d};
    if (inputs) {
      // Q: request-major, then the group's G heads, then the T_q positions.
      HostTensor q;
      q.shape = q_shape;
      for (std::uint32_t r = 0; r < b; ++r)
        for (std::uint32_t j = 0; j < g; ++j) {
          const auto first = inputs->q.data.begin() +
                             static_cast<std::ptrdiff_t>(((static_cast<std::uint64_t>(r) * c.h_q + h * g + j) * c.t_q) * c.d);
          q.data.insert(q.data.end(), first, first + static_cast<std::ptrdiff_t>(c.t_q * c.d));
        }
      // K and V: each page's rows at its slot of its rank's shard.
      auto paged = [&](const HostTensor& from) {
        HostTensor t;
        t.shape = kv_shape;
        t.data.assign(static_cast<std::size_t>(rows) * c.d, 0.0f);
        const std::uint64_t all = from.shape[1];
        for (std::uint32_t r = 0; r < ranks; ++r)
          for (std::uint32_t slot = 0; slot < kv.ranks[r].size(); ++slot) {
            const Page& page = kv.ranks[r][slot];
            const auto src = from.data.begin() +
                             static_cast<std::ptrdiff_t>((h * all + off[page.request] + page.row0) * c.d);
            std::copy(src, src + static_cast<std::ptrdiff_t>(page.rows * c.d),
                      t.data.begin() + static_cast<std::ptrdiff_t>((r * rank_rows + slot * c.page_rows) * c.d));
          }
        return t;
      };
      grp.q = rt.from_host(name("q"), q, c.dtype, DPPolicy::replicate(c.cubes, c.pes, start), sip, at.q);
      grp.k = rt.from_host(name("k"), paged(inputs->k), c.dtype, DPPolicy::shard2d(c.cubes, c.pes, start), sip, at.k);
      grp.v = rt.from_host(name("v"), paged(inputs->v), c.dtype, DPPolicy::shard2d(c.cubes, c.pes, start), sip, at.v);
    } else {
      grp.q = rt.empty(name("q"), q_shape, c.dtype, DPPolicy::replicate(c.cubes, c.pes, start), sip, at.q);
      grp.k = rt.empty(name("k"), kv_shape, c.dtype, DPPolicy::shard2d(c.cubes, c.pes, start), sip, at.k);
      grp.v = rt.empty(name("v"), kv_shape, c.dtype, DPPolicy::shard2d(c.cubes, c.pes, start), sip, at.v);
    }
    grp.o = rt.empty(name("o"), q_shape, c.dtype, c.o_every_rank ? DPPolicy::replicate(c.cubes, c.pes, start) : root,
                     sip, at.o);
    plan.outputs.push_back(grp.o);
    params[dev]->groups.push_back(grp);
  }
  return plan;
}

void launch_decode_batch(RuntimeContext& rt, const BatchPlan& plan) {
  for (std::size_t dev = 0; dev < plan.devices.size(); ++dev)
    if (!plan.params[dev]->groups.empty())
      rt.launch(plan.devices[dev], "gqa_decode_batch", gqa_decode_batch,
                std::shared_ptr<const DecodeBatchParams>(plan.params[dev]));
}

BatchResult run_decode_batch(RuntimeContext& rt, const BatchConfig& c, const BatchInputs* inputs) {
  const Topology& topo = rt.system().topology();
  if (rt.data_mode() && inputs == nullptr) {
    validate(c, topo);
    throw ConfigError("data mode needs inputs");
  }
  const BatchPlan plan = plan_decode_batch(rt, c, inputs);
  const std::uint32_t g = c.g(), m_rows = g * c.t_q;
  const auto b = static_cast<std::uint32_t>(c.lens.size());
  BatchResult res;
  res.devices = plan.devices;
  res.tile_rows = plan.tile_rows;
  res.imbalance = plan.kv.imbalance();
  res.pages = plan.kv.pages();
  const std::uint64_t total = std::accumulate(c.lens.begin(), c.lens.end(), std::uint64_t{0});
  res.fill = static_cast<double>(total) / static_cast<double>(res.pages * c.page_rows);
  rt.separate_groups(cube_groups(topo, c.cubes));
  std::set<std::string> kv_names;
  for (const auto& params : plan.params)
    for (const DecodeGroup& grp : params->groups) kv_names.insert({grp.k.name(), grp.v.name()});
  launch_decode_batch(rt, plan);
  {
    const OpLog::Listening listening = rt.op_log().listen([&](const OpRecord& r) {
      if ((r.kind == "composite" || r.kind == "load") && kv_names.count(r.tensor)) res.kv_bytes += r.bytes;
    });
    rt.run();
  }
  res.cycles = rt.last_run_cycles();
  const double pes_all = static_cast<double>(res.devices.size()) * topo.pes_per_sip();
  res.roofline_cycles = 2.0 * static_cast<double>(total) * c.h_kv * c.d * dtype_bytes(c.dtype) /
                        (pes_all * static_cast<double>(topo.cube.hbm.bytes_per_cycle));
  if (rt.data_mode()) {
    // Per head [B * G * T_q, d] -> [B, H_q, T_q, d].
    const HostTensor heads = gather(rt, plan.outputs, {c.h_kv, static_cast<std::int64_t>(b) * m_rows, c.d});
    HostTensor o;
    o.shape = {b, c.h_q, c.t_q, c.d};
    o.data.resize(heads.data.size());
    const std::uint64_t block = static_cast<std::uint64_t>(c.t_q) * c.d;  // one query head's rows
    for (std::uint32_t h = 0; h < c.h_kv; ++h)
      for (std::uint32_t r = 0; r < b; ++r)
        for (std::uint32_t j = 0; j < g; ++j) {
          const auto src = heads.data.begin() +
                           static_cast<std::ptrdiff_t>(((static_cast<std::uint64_t>(h) * b + r) * g + j) * block);
          std::copy(src, src + static_cast<std::ptrdiff_t>(block),
                    o.data.begin() + static_cast<std::ptrdiff_t>(((static_cast<std::uint64_t>(r) * c.h_q) + h * g + j) * block));
        }
    res.o = std::move(o);
  }
  return res;
}

}  // namespace kb::gqa
