#include "workloads/models/prefill_placement.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>

#include "base/units.h"
#include "kernels/gqa/helpers.h"
#include "kernels/nn/rope.h"
#include "workloads/models/weight_slices.h"
#include "workloads/workload.h"

namespace kb::workloads {

namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return (a + b - 1) / b;
}
std::int64_t i64(std::uint64_t v) {
  return static_cast<std::int64_t>(v);
}

// A run's positions and a block's rows at most (the kernel's choices, not the machine's).
constexpr std::uint64_t kMaxRunRows = 64, kMaxBlockRows = 256;

// The rows of a GEMM block within five eighths of the TCM (the weight streams' staging
// takes at most a quarter) in either sweep of the MLP: two chunks of the activations (bf16)
// with a pass's up and gate (fp32), the activation's four fp32 temporaries and its result
// (bf16); then every pass's features (bf16) with a chunk of the partial sum (fp32). At
// most kMaxBlockRows, whole groups of the GEMM array's rows.
std::uint64_t block_rows_of(const StepConfig& c, const Topology& topo, std::uint64_t chunk,
                            std::uint64_t features, std::uint32_t passes) {
  const std::uint64_t pass = features / passes, gated = c.model.mlp != MlpKind::Gelu ? 2 : 1;
  const std::uint64_t first = 4 * chunk + 4 * gated * pass + 16 * pass + 2 * pass,
                      second = 2 * features + 4 * chunk;
  const std::uint64_t fit = topo.pe.tcm_bytes * 5 / 8 / std::max(first, second);
  const std::uint64_t r = topo.pe.gemm.rows;
  return std::clamp<std::uint64_t>(fit / r * r, r, kMaxBlockRows);
}

// The form of the prefill layer and the runs of the prompts over the lanes.
struct Dealt {
  layer::PrefillForm form;
  std::vector<std::vector<layer::TokenRun>> lanes;
  std::vector<layer::PromptKeys> prompts;
  std::uint64_t part_rows = 0;   // K and V rows a group rank projects, the most of any
  std::uint64_t cache_rows = 0;  // a group's cache: every request's context
};

Dealt deal(const StepConfig& c, const Topology& topo, const Geometry& geo) {
  const ModelPreset& m = c.model;
  Dealt out;
  layer::PrefillForm& f = out.form;
  const std::uint32_t pes = topo.cube.pes, group = geo.heads.cubes;
  const std::uint64_t gemm_rows = topo.pe.gemm.rows;
  const auto cubes = static_cast<std::uint32_t>(c.devices.size()) * topo.cubes_per_sip();
  f.hidden = m.hidden;
  f.head_dim = m.head_dim;
  f.chunks = pes;
  f.heads = static_cast<std::uint32_t>(ceil_div(m.heads_q / m.heads_kv, group));
  // The MLP's features in passes: the fewest blocks of a lane's rows (a block streams the
  // cube's weights once; more passes leave more room for its rows), then the fewest GEMM
  // cycles (its blocks' groups of the array's rows times each pass's groups of columns:
  // 448 features in 7 passes fill the array's 64 columns, in 8 they leave 8 idle).
  const std::uint64_t features = ceil_div(m.intermediate, cubes),
                      tokens = ceil_div(ceil_div(c.tokens(), pes), gemm_rows) * gemm_rows;
  std::pair<std::uint64_t, std::uint64_t> best{~0ull, ~0ull};
  for (std::uint32_t passes = 1; passes <= 8; ++passes) {
    const std::uint64_t padded = ceil_div(features, passes) * passes,
                        rows = block_rows_of(c, topo, m.hidden / pes, padded, passes);
    const std::uint64_t row_groups =
        tokens / rows * (rows / gemm_rows) + ceil_div(tokens % rows, gemm_rows);
    const std::pair<std::uint64_t, std::uint64_t> cost{
        ceil_div(tokens, rows), row_groups * passes * ceil_div(padded / passes, topo.pe.gemm.cols)};
    if (cost >= best) continue;
    best = cost;
    f.mlp_passes = passes;
    f.mlp_cols = static_cast<std::uint32_t>(padded);
    f.block_rows = static_cast<std::uint32_t>(rows);
  }
  static_cast<layer::Block&>(f) = block_of(m);
  // Runs of at most kMaxRunRows positions (whole groups of the GEMM array's rows), two a
  // lane where the prompts allow, none longer than a block.
  const std::uint64_t per_lane = ceil_div(c.tokens(), 2ull * pes);
  f.run_rows = static_cast<std::uint32_t>(
      std::clamp<std::uint64_t>(ceil_div(per_lane, gemm_rows) * gemm_rows, gemm_rows, kMaxRunRows));
  f.run_rows = std::min(f.run_rows, f.block_rows);
  // Every request's runs, dealt to the lanes in rounds, forward and backward by turns, so
  // every lane has runs from all over the prompts (their causal work alike).
  std::vector<layer::TokenRun> all;
  for (std::uint32_t r = 0; r < c.batch(); ++r) {
    const std::uint64_t cached = c.lens[r] - c.news(r);
    out.prompts.push_back({out.cache_rows, cached, {}});
    for (std::uint64_t p = cached; p < c.lens[r]; p += f.run_rows)
      all.push_back({r, p, std::min<std::uint64_t>(f.run_rows, c.lens[r] - p), 0, 0});
    out.cache_rows += c.lens[r];
  }
  out.lanes.resize(pes);
  for (std::size_t i = 0; i < all.size(); ++i) {
    const std::size_t round = i / pes, k = i % pes;
    std::vector<layer::TokenRun>& lane = out.lanes[round % 2 == 0 ? k : pes - 1 - k];
    layer::TokenRun r = all[i];
    r.row = lane.empty() ? 0 : lane.back().row + lane.back().count;
    lane.push_back(r);
  }
  // A lane's run i is projected to K and V by the group's cube i % C: rank (i % C) * P + p
  // of the group's all-gather, its rows one after another in its part.
  std::vector<std::uint64_t> held(std::size_t{group} * pes, 0);
  for (std::uint32_t p = 0; p < pes; ++p)
    for (std::size_t i = 0; i < out.lanes[p].size(); ++i) {
      layer::TokenRun& r = out.lanes[p][i];
      std::uint64_t& rows = held[(i % group) * pes + p];
      r.kv_row = rows;  // within the part, until the parts' size is known
      rows += r.count;
    }
  out.part_rows = std::max<std::uint64_t>(1, *std::max_element(held.begin(), held.end()));
  for (std::uint32_t p = 0; p < pes; ++p) {
    for (std::size_t i = 0; i < out.lanes[p].size(); ++i) {
      layer::TokenRun& r = out.lanes[p][i];
      r.kv_row += ((i % group) * pes + p) * out.part_rows;
      out.prompts[r.request].runs.push_back(r);
      f.lane_rows =
          std::max<std::uint32_t>(f.lane_rows, static_cast<std::uint32_t>(r.row + r.count));
    }
  }
  for (layer::PromptKeys& k : out.prompts)
    std::sort(k.runs.begin(), k.runs.end(),
              [](const auto& a, const auto& b) { return a.pos0 < b.pos0; });
  f.lane_rows = std::max<std::uint32_t>(f.lane_rows, 1);
  f.block_rows =
      std::max(f.run_rows,
               std::min(f.block_rows,
                        static_cast<std::uint32_t>(ceil_div(f.lane_rows, gemm_rows) * gemm_rows)));
  return out;
}

// Per lane: the step's token (its row of x, request by request) of each of the lane's rows.
std::vector<std::vector<std::uint64_t>> lane_tokens(const StepConfig& c,
                                                    const layer::PrefillPlan& s) {
  std::vector<std::uint64_t> first;  // per request: its first new token's index in the step
  for (std::uint32_t r = 0; r < c.batch(); ++r)
    first.push_back(r == 0 ? 0 : first.back() + c.news(r - 1));
  std::vector<std::vector<std::uint64_t>> tokens(s.lanes.size());
  for (std::size_t p = 0; p < s.lanes.size(); ++p)
    for (const layer::TokenRun& r : s.lanes[p])
      for (std::uint64_t i = 0; i < r.count; ++i)
        tokens[p].push_back(first[r.request] + r.pos0 + i - s.prompts[r.request].cached);
  return tokens;
}

// The group slots of SIP di (its index among the run's) that hold a KV head: the last
// SIP's may be fewer than the placement's slots.
std::uint32_t held_slots(const StepConfig& c, const Geometry& geo, std::uint32_t di) {
  const std::uint32_t first = di * geo.heads.groups_per_sip;
  return first >= c.model.heads_kv
             ? 0
             : std::min<std::uint32_t>(geo.heads.groups_per_sip, c.model.heads_kv - first);
}

// A cube's place: the group slot it is in (if any), its index there, its global KV head
// and its query heads.
struct CubeRole {
  std::optional<std::uint32_t> slot;
  std::uint32_t index = 0, kv_head = 0, head0 = 0, heads = 0;
};
CubeRole role_of(const StepConfig& c, const Topology& topo, const Geometry& geo, std::uint32_t di,
                 std::uint32_t cube) {
  const std::uint32_t g = c.model.heads_q / c.model.heads_kv, group = geo.heads.cubes;
  for (std::uint32_t slot = 0; slot < held_slots(c, geo, di); ++slot)
    if (const auto i =
            gqa::GroupGeometry::of(geo.starts[slot], group, topo.mesh()).index_of(CubeId(cube))) {
      const std::uint32_t head0 = *i * g / group, end = (*i + 1) * g / group;
      return {slot, *i, di * geo.heads.groups_per_sip + slot, head0, end - head0};
    }
  return {};  // a cube the groups leave over: MLP features only
}

// The model's ends (model_step): the embedding dealt over the cubes, the prompts' tokens
// (any ids, spread over the vocabulary), where each prompt ends, and decode's end.
layer::PrefillEnds place_ends(RuntimeContext& rt, const StepConfig& c, const Geometry& geo,
                              const layer::PrefillPlan& s) {
  const Topology& topo = rt.system().topology();
  const ModelPreset& m = c.model;
  const std::uint32_t pes = topo.cube.pes, cubes = topo.cubes_per_sip();
  layer::LayerForm f;
  f.hidden = m.hidden;
  f.batch = c.batch();
  static_cast<layer::Block&>(f) = block_of(m);
  layer::PrefillEnds e;
  e.head = workloads::place_ends(rt, c, geo, f);
  e.cube_vocab_rows = ceil_div(m.vocab, std::uint64_t{cubes} * c.devices.size());
  e.first_cube.assign(topo.system.sips, 0);
  e.embed.resize(topo.system.sips);
  for (std::uint32_t di = 0; di < c.devices.size(); ++di) {
    const SipId sip = c.devices[di];
    e.first_cube[sip.value] = di * cubes;
    e.embed[sip.value] = rt.empty("w.embed", {i64(cubes * e.cube_vocab_rows), m.hidden},
                                  DType::bf16, DPPolicy::cube_rows(cubes, pes), sip);
    for (std::uint32_t cube = 0; cube < cubes; ++cube) {
      collectives::Request q;
      for (std::uint32_t p = 0; p < pes; ++p)
        q.ranks.push_back({PeCoord{sip, CubeId(cube), PeId(p)}});
      q.bytes = std::uint64_t{c.batch()} * m.hidden * 4;
      q.cols = 64;
      e.cube_sum.push_back(collectives::make_plan(topo, q));
      e.cube_sum.back().tag = 5000;
    }
  }
  e.tokens = lane_tokens(c, s);
  for (std::vector<std::uint64_t>& lane : e.tokens)
    for (std::uint64_t& t : lane) t = (t * 7919 + 17) % m.vocab;
  e.last.resize(c.batch());
  for (std::uint32_t p = 0; p < pes; ++p)
    for (const layer::TokenRun& r : s.lanes[p])
      if (r.pos0 + r.count == c.lens[r.request]) e.last[r.request] = {p, r.row + r.count - 1};
  return e;
}

}  // namespace

void check_prefill(const StepConfig& c, const Topology& topo, const TpPlan& tp) {
  const ModelPreset& m = c.model;
  if (m.hidden % topo.cube.pes != 0)
    throw ConfigError("model " + ConfigError::literal(m.name) + ": hidden size " +
                      std::to_string(m.hidden) + " is not a multiple of a cube's " +
                      std::to_string(topo.cube.pes) +
                      " PEs: a prefill deals each token's features to them in equal chunks");
  // A PE's activations in HBM: per lane row x, the norm's output and the partial sums (10
  // bytes a feature), the MLP's features (bf16), Q and O of the cube's heads (bf16); and
  // every new token's K and V gathered (fp32). A lane holds about 1 / P of the tokens and
  // a run more.
  const std::uint64_t cubes = std::uint64_t{tp.sips} * topo.cubes_per_sip(), tokens = c.tokens();
  const std::uint64_t row = 10ull * m.hidden + 2 * ceil_div(m.intermediate, cubes) +
                            4ull * (ceil_div(m.heads_q, cubes) + 1) * m.head_dim;
  const std::uint64_t lane = ceil_div(tokens, topo.cube.pes) + kMaxRunRows;
  const std::uint64_t need = lane * row + tokens * 8ull * m.head_dim;
  const std::uint64_t kv = tp.kv_bytes_per_token *
                           std::accumulate(c.lens.begin(), c.lens.end(), std::uint64_t{0}) / tp.pes;
  const std::uint64_t used = tp.weight_bytes_per_channel + kv;
  const std::uint64_t left = tp.channel_capacity > used ? tp.channel_capacity - used : 0;
  if (need > left)
    throw ConfigError("{batch}: a prefill of " + std::to_string(tokens) + " new tokens keeps " +
                      units::format_bytes(need) +
                      " of activations in each HBM channel, beside the weights and KV "
                      "cache, which leave " +
                      units::format_bytes(left) + "; prefill the prompts in chunks ({q_len})");
}

PrefillStep place_prefill(RuntimeContext& rt, const StepConfig& c, const Geometry& geo,
                          const StepValues* values) {
  const Topology& topo = rt.system().topology();
  const ModelPreset& m = c.model;
  Dealt dealt = deal(c, topo, geo);
  PrefillStep step;
  layer::PrefillPlan& s = step.plan;
  s.form = dealt.form;
  s.lanes = dealt.lanes;
  s.prompts = dealt.prompts;
  const layer::PrefillForm& f = s.form;
  const std::uint32_t pes = topo.cube.pes, cubes = topo.cubes_per_sip(), shards = cubes * pes,
                      sips = topo.system.sips;
  const std::uint32_t chunk = f.chunk_cols(), d = m.head_dim, hd = f.heads * d,
                      group = geo.heads.cubes;
  const std::int64_t h = m.hidden, lr = f.lane_rows, ranks = std::int64_t{group} * pes;
  const DPPolicy every = DPPolicy::replicate(cubes, pes);
  const DPPolicy per_pe = DPPolicy::shard2d(cubes, pes);
  // A lane's rows: the step's token of each, and its position.
  const std::vector<std::vector<std::uint64_t>> token = lane_tokens(c, s);
  std::vector<std::vector<std::int64_t>> position(pes);
  for (std::uint32_t p = 0; p < pes; ++p)
    for (const layer::TokenRun& r : s.lanes[p])
      for (std::uint64_t i = 0; i < r.count; ++i) position[p].push_back(i64(r.pos0 + i));
  // Per shard (cube c, PE p): a host tensor from its cube and lane, stacked.
  auto per_shard = [&](const std::function<HostTensor(std::uint32_t, std::uint32_t)>& shard) {
    std::vector<HostTensor> parts;
    for (std::uint32_t i = 0; i < shards; ++i) parts.push_back(shard(i / pes, i % pes));
    return stacked(parts);
  };
  for (auto* v :
       {&s.x, &s.a, &s.sums, &s.q, &s.o, &s.rope_cos, &s.rope_sin, &s.kv_gather, &s.hidden})
    v->resize(sips);
  for (const SipId sip : c.devices) {
    const std::uint32_t i = sip.value;
    if (values) {
      // x chunk-major: chunk k of lane p's rows on every cube's PE p.
      const HostTensor x = per_shard([&](std::uint32_t, std::uint32_t p) {
        std::vector<HostTensor> chunks;
        for (std::uint32_t k = 0; k < pes; ++k) {
          HostTensor t;
          t.shape = {lr, chunk};
          t.data.assign(static_cast<std::size_t>(lr) * chunk, 0.0f);
          for (std::size_t r = 0; r < token[p].size(); ++r)
            std::copy_n(values->x.data.begin() + i64(token[p][r]) * h + k * chunk, chunk,
                        t.data.begin() + i64(r) * chunk);
          chunks.push_back(std::move(t));
        }
        return stacked(chunks);
      });
      s.x[i] = rt.from_host("x", x, DType::fp32, per_pe, sip);
    } else {
      s.x[i] = rt.empty("x", {shards * pes * lr, chunk}, DType::fp32, per_pe, sip);
    }
    s.a[i] = rt.empty("normalized", {shards * pes * lr, chunk}, DType::bf16, per_pe, sip);
    s.sums[i] = rt.empty("partial_sums", {shards * pes * lr, chunk}, DType::fp32, per_pe, sip);
    s.q[i] = rt.empty("q", {std::int64_t{shards} * f.heads * lr, d}, DType::bf16, per_pe, sip);
    s.o[i] = rt.empty("o", {std::int64_t{shards} * f.heads * lr, d}, DType::bf16, per_pe, sip);
    for (const bool sine : {false, true}) {
      const HostTensor table = per_shard([&](std::uint32_t, std::uint32_t p) {
        std::vector<std::int64_t> pos = position[p];
        pos.resize(static_cast<std::size_t>(lr), 0);
        const nn::RopeTables t = nn::rope_tables(pos, d, m.rope_theta, m.rope_scaling);
        return sine ? t.sin : t.cos;
      });
      (sine ? s.rope_sin : s.rope_cos)[i] =
          rt.from_host(sine ? "rope_sin" : "rope_cos", table, DType::fp32, per_pe, sip);
    }
    s.hidden[i] =
        rt.empty("hidden", {std::int64_t{shards} * f.mlp_passes * lr, f.mlp_cols / f.mlp_passes},
                 DType::bf16, per_pe, sip);
    s.kv_gather[i] = rt.empty("kv_gather", {shards * ranks * i64(dealt.part_rows), 2 * d},
                              DType::fp32, per_pe, sip);
  }
  // The collectives: the all-reduce of the partial sums, a rank a cube whose lanes are its
  // PEs (PE p of every cube adds lane p's rows); per group, the all-gather of K and V over
  // its PEs.
  collectives::Request all;
  all.ranks = collectives::ranks_of_cubes(topo, c.devices);
  all.bytes = std::uint64_t{pes} * pes * f.lane_rows * chunk * 4;
  all.cols = chunk;
  s.all_reduce = collectives::make_plan(topo, all);
  s.all_reduce.tag = 3000;
  for (std::uint32_t di = 0; di < c.devices.size(); ++di)
    for (std::uint32_t slot = 0; slot < held_slots(c, geo, di); ++slot) {
      const SipId sip = c.devices[di];
      const gqa::GroupGeometry g = gqa::GroupGeometry::of(geo.starts[slot], group, topo.mesh());
      collectives::Request q;
      q.op = collectives::Op::AllGather;
      for (std::uint32_t ci = 0; ci < g.cubes(); ++ci)
        for (std::uint32_t p = 0; p < pes; ++p)
          q.ranks.push_back({PeCoord{sip, g.cube_at(ci), PeId(p)}});
      q.bytes = std::uint64_t(ranks) * dealt.part_rows * 2 * d * 4;
      q.cols = 2 * d;
      // A ring (measured: 4 MiB over a SIP's 128 PEs, ring 392,176 cycles, one_shot 990,460; the
      // cost model's all-gather estimate for many ranks is far off, so auto is not asked).
      q.algorithm = collectives::Algorithm::Ring;
      s.gather_kv.push_back(collectives::make_plan(topo, q));
      s.gather_kv.back().tag = 1000;
    }
  // Each layer's weights, dealt over each cube's PEs, and its groups' caches.
  const auto& w = values ? values->layer.weights : std::map<std::string, HostTensor>{};
  for (std::uint32_t l = 0; l < c.layers; ++l) {
    step.layers.emplace_back(sips);
    const std::string at = "w.L" + std::to_string(l) + ".";
    for (std::uint32_t di = 0; di < c.devices.size(); ++di) {
      const SipId sip = c.devices[di];
      layer::PrefillWeights& lw = step.layers.back()[sip.value];
      auto put = [&](const std::string& name, const Shape& shape, DType dtype,
                     const DPPolicy& policy,
                     const std::function<HostTensor(std::uint32_t, std::uint32_t)>& shard) {
        return values ? rt.from_host(at + name, per_shard(shard), dtype, policy, sip)
                      : rt.empty(at + name, shape, dtype, policy, sip);
      };
      // The cube's query features (q_proj's rows; past the model's: none) and its MLP features.
      auto q_features = [&](std::uint32_t cube) {
        const CubeRole r = role_of(c, topo, geo, di, cube);
        std::vector<std::int64_t> rows(hd, i64(m.heads_q) * d);
        const std::uint32_t g = m.heads_q / m.heads_kv;
        for (std::uint32_t j = 0; j < r.heads * d; ++j)
          rows[j] = i64(r.kv_head * g + r.head0) * d + j;
        return rows;
      };
      auto kv_features = [&](std::uint32_t cube) {
        return run_of(i64(role_of(c, topo, geo, di, cube).kv_head) * d, d);
      };
      auto mlp_features = [&](std::uint32_t cube) {
        return run_of(i64(di * cubes + cube) * f.mlp_cols, f.mlp_cols);
      };
      const std::int64_t norm_rows = f.layer_norm ? 2 : 1;
      auto replicated = [&](const std::string& name) {
        return values ? rt.from_host(
                            at + name,
                            [&] {
                              std::vector<HostTensor> rows{w.at(name)};
                              if (f.layer_norm) rows.push_back(w.at(name + ".bias"));
                              return stacked(rows);
                            }(),
                            DType::fp32, every, sip)
                      : rt.empty(at + name, {norm_rows, h}, DType::fp32, every, sip);
      };
      lw.attn_norm = replicated("input_layernorm");
      if (!f.parallel) lw.mlp_norm = replicated("post_attention_layernorm");
      // Column-parallel: rows chunk p of the cube's columns of W^T.
      auto rows_chunk = [&](const HostTensor& t, std::uint32_t p) {
        return block_of(t, i64(p) * chunk, chunk, 0, t.shape[1]);
      };
      auto cols_chunk = [&](const HostTensor& t, std::uint32_t p) {
        return block_of(t, 0, t.shape[0], i64(p) * chunk, chunk);
      };
      lw.wq = put("wq", {std::int64_t{shards} * chunk, hd}, DType::bf16, per_pe,
                  [&](std::uint32_t cube, std::uint32_t p) {
                    return rows_chunk(columns_of(w.at("q_proj"), q_features(cube)), p);
                  });
      lw.wkv = put("wkv", {std::int64_t{shards} * chunk, 2 * i64(d)}, DType::bf16, per_pe,
                   [&](std::uint32_t cube, std::uint32_t p) {
                     return rows_chunk(side_by_side(columns_of(w.at("k_proj"), kv_features(cube)),
                                                    columns_of(w.at("v_proj"), kv_features(cube))),
                                       p);
                   });
      if (f.qkv_bias) {
        auto bias = [&](const std::string& name, const std::vector<std::int64_t>& rows) {
          HostTensor t;
          t.shape = {1, i64(rows.size())};
          for (const std::int64_t r : rows)
            t.data.push_back(r < w.at(name).shape[1] ? w.at(name).data[r] : 0.0f);
          return t;
        };
        lw.q_bias = put("q_bias", {shards, hd}, DType::fp32, per_pe,
                        [&](std::uint32_t cube, std::uint32_t) {
                          return bias("q_proj.bias", q_features(cube));
                        });
        lw.kv_bias = put("kv_bias", {shards, 2 * i64(d)}, DType::fp32, per_pe,
                         [&](std::uint32_t cube, std::uint32_t) {
                           return side_by_side(bias("k_proj.bias", kv_features(cube)),
                                               bias("v_proj.bias", kv_features(cube)));
                         });
      }
      lw.wo = put("wo", {std::int64_t{shards} * hd, chunk}, DType::bf16, per_pe,
                  [&](std::uint32_t cube, std::uint32_t p) {
                    return cols_chunk(rows_of_columns(w.at("o_proj"), q_features(cube)), p);
                  });
      // Gate and up side by side (gate first): pass j's columns of rows chunk p, pass after
      // pass, so one GEMM streams both.
      const std::int64_t pass = f.mlp_cols / f.mlp_passes;
      auto passes = [&](std::uint32_t cube, std::uint32_t p) {
        auto rows = [&](const char* name) {
          return rows_chunk(columns_of(w.at(name), mlp_features(cube)), p);
        };
        const HostTensor up = rows("up_proj"), gate = f.gated ? rows("gate_proj") : HostTensor{};
        std::vector<HostTensor> parts;
        for (std::uint32_t j = 0; j < f.mlp_passes; ++j) {
          HostTensor u = block_of(up, 0, chunk, j * pass, pass);
          parts.push_back(f.gated ? side_by_side(block_of(gate, 0, chunk, j * pass, pass), u) : u);
        }
        return stacked(parts);
      };
      lw.gate_up =
          put("gate_up", {std::int64_t{shards} * f.mlp_passes * chunk, (f.gated ? 2 : 1) * pass},
              DType::bf16, per_pe, passes);
      lw.down = put("down", {std::int64_t{shards} * f.mlp_cols, chunk}, DType::bf16, per_pe,
                    [&](std::uint32_t cube, std::uint32_t p) {
                      return cols_chunk(rows_of_columns(w.at("down_proj"), mlp_features(cube)), p);
                    });
      // The groups' caches: the cached positions' rows from the values, the new ones empty.
      std::vector<std::pair<DeviceTensor, DeviceTensor>> caches;
      for (std::uint32_t slot = 0; slot < held_slots(c, geo, di); ++slot) {
        const std::uint32_t kv_head = di * geo.heads.groups_per_sip + slot;
        const DPPolicy rows = DPPolicy::shard2d(group, pes, geo.starts[slot]);
        auto cache = [&](const char* name, const std::vector<HostTensor>* held) {
          const std::string label =
              std::string(name) + ".h" + std::to_string(kv_head) + ".L" + std::to_string(l);
          if (!held) return rt.empty(label, {i64(dealt.cache_rows), d}, DType::bf16, rows, sip);
          HostTensor t;
          t.shape = {i64(dealt.cache_rows), d};
          t.data.assign(dealt.cache_rows * d, 0.0f);
          for (std::uint32_t r = 0; r < c.batch(); ++r) {
            const HostTensor& part = (*held)[r];
            const std::uint64_t cached = dealt.prompts[r].cached;
            std::copy_n(part.data.begin() + i64(kv_head * cached * d), cached * d,
                        t.data.begin() + i64(dealt.prompts[r].cache_row * d));
          }
          return rt.from_host(label, t, DType::bf16, rows, sip);
        };
        caches.emplace_back(cache("k", values ? &values->layer.k_cache : nullptr),
                            cache("v", values ? &values->layer.v_cache : nullptr));
      }
      for (std::uint32_t cube = 0; cube < cubes; ++cube) {
        const CubeRole r = role_of(c, topo, geo, di, cube);
        if (r.slot)
          lw.cubes.push_back(
              {r.heads, r.index, group, r.kv_head, caches[*r.slot].first, caches[*r.slot].second});
        else
          lw.cubes.push_back({0, 0, 0, layer::CubeAttention::kNone, {}, {}});
      }
    }
  }
  if (c.ends) step.ends = place_ends(rt, c, geo, step.plan);
  return step;
}

LayerOutputs read_prefill(RuntimeContext& rt, const StepConfig& c, const Geometry& geo,
                          const PrefillStep& step) {
  const Topology& topo = rt.system().topology();
  const ModelPreset& m = c.model;
  const layer::PrefillPlan& s = step.plan;
  const std::uint32_t pes = topo.cube.pes, chunk = s.form.chunk_cols(), d = m.head_dim;
  const SipId first = c.devices.front();
  LayerOutputs out;
  const auto tokens = i64(c.tokens());
  out.y.shape = {tokens, m.hidden};
  out.y.data.assign(static_cast<std::size_t>(tokens * m.hidden), 0.0f);
  out.k_new.shape = out.v_new.shape = {tokens, m.heads_kv, d};
  out.k_new.data.assign(static_cast<std::size_t>(tokens) * m.heads_kv * d, 0.0f);
  out.v_new.data = out.k_new.data;
  // y: cube 0's PE p holds lane p's rows of x, chunk-major.
  const HostTensor x = rt.read(s.x.at(first.value));
  const std::uint64_t per = static_cast<std::uint64_t>(x.shape[0]) / (topo.cubes_per_sip() * pes);
  const std::vector<std::vector<std::uint64_t>> token = lane_tokens(c, s);
  for (std::uint32_t p = 0; p < pes; ++p)
    for (std::size_t row = 0; row < token[p].size(); ++row)
      for (std::uint32_t k = 0; k < pes; ++k)
        std::copy_n(x.data.begin() + i64((p * per + k * s.form.lane_rows + row) * chunk), chunk,
                    out.y.data.begin() + i64(token[p][row] * m.hidden + k * chunk));
  // K and V: each KV head's group cache, at its requests' new rows.
  for (std::uint32_t di = 0; di < c.devices.size(); ++di) {
    const layer::PrefillWeights& w = step.layers.back()[c.devices[di].value];
    for (std::uint32_t slot = 0; slot < held_slots(c, geo, di); ++slot) {
      const std::uint32_t kv_head = di * geo.heads.groups_per_sip + slot;
      const auto it = std::find_if(w.cubes.begin(), w.cubes.end(),
                                   [&](const auto& cube) { return cube.group == kv_head; });
      const HostTensor k = rt.read(it->k), v = rt.read(it->v);
      for (std::uint32_t r = 0, t = 0; r < c.batch(); ++r)
        for (std::uint64_t j = 0; j < c.news(r); ++j, ++t) {
          const std::uint64_t row = s.prompts[r].cache_row + s.prompts[r].cached + j;
          std::copy_n(k.data.begin() + i64(row * d), d,
                      out.k_new.data.begin() + i64((t * m.heads_kv + kv_head) * d));
          std::copy_n(v.data.begin() + i64(row * d), d,
                      out.v_new.data.begin() + i64((t * m.heads_kv + kv_head) * d));
        }
    }
  }
  return out;
}

}  // namespace kb::workloads
