#include "workloads/models/layer_placement.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <tuple>

#include "kernels/nn/linear.h"
#include "kernels/nn/rope.h"
#include "workloads/models/weight_slices.h"

namespace kb::workloads {

namespace {

std::uint32_t ceil_div(std::uint64_t a, std::uint64_t b) { return static_cast<std::uint32_t>((a + b - 1) / b); }
std::int64_t i64(std::uint64_t v) { return static_cast<std::int64_t>(v); }

// A group's feature f of [Q | K | V] as (matrix, row) of the model's projections.
std::pair<const char*, std::int64_t> qkv_feature(const ModelPreset& m, std::uint32_t kv_head, std::int64_t f) {
  const std::int64_t d = m.head_dim, gd = i64(m.heads_q / m.heads_kv) * d;
  if (f < gd) return {"q_proj", kv_head * gd + f};
  if (f < gd + d) return {"k_proj", kv_head * d + f - gd};
  if (f < gd + 2 * d) return {"v_proj", kv_head * d + f - gd - d};
  return {nullptr, 0};
}

}  // namespace

layer::Block block_of(const ModelPreset& m) {
  layer::Block b;
  b.layer_norm = m.norm == NormKind::Layer;
  b.parallel = m.block == BlockKind::Parallel;
  b.qkv_bias = m.qkv_bias;
  b.act = m.mlp == MlpKind::SwiGlu ? nn::Activation::Silu : nn::Activation::Gelu;
  b.gated = m.mlp != MlpKind::Gelu;
  b.eps = static_cast<float>(m.norm_eps);
  return b;
}

layer::LayerForm form_of(const StepConfig& c, const Geometry& geo, const Topology& topo) {
  const ModelPreset& m = c.model;
  layer::LayerForm f;
  f.hidden = m.hidden;
  f.head_dim = m.head_dim;
  f.g = m.heads_q / m.heads_kv;
  f.batch = c.batch();
  // Split the inputs (in powers of two dividing the ranks and h) until a rank's slice is as
  // wide as the weights the HBM gives a cycle (bf16: 32 at 64 B/cycle).
  const std::uint64_t features = std::uint64_t{f.g + 2} * m.head_dim, wide = topo.cube.hbm.bytes_per_cycle / 2;
  f.qkv_cols = ceil_div(features, geo.ranks);
  while (f.qkv_cols < wide && geo.ranks % (2 * f.qkv_splits) == 0 && m.hidden % (2 * f.qkv_splits) == 0) {
    f.qkv_splits *= 2;
    f.qkv_cols = ceil_div(features, geo.ranks / f.qkv_splits);
  }
  f.o_cols = ceil_div(std::uint64_t{f.g} * m.head_dim, geo.ranks);
  static_cast<layer::Block&>(f) = block_of(m);
  // What the all-reduces leave the DMA to preload (bf16 weights), in the TCM the MLP
  // leaves: its up and gate streams' staging, the next attention norm's weights (4 bytes
  // a hidden feature a row) and, a request, x, the partial sums and the norm's
  // temporaries (22 bytes a hidden feature) and the features up, gate, activated and their
  // temporaries (18 an intermediate one). A preloaded byte saves its streaming
  // time only while the stream is slower than its GEMMs (a row of up to gemm.cols weights a
  // cycle, for 16 requests): the next layer's QKV weights up to that, then the MLP's two
  // streams, each up to that, share the rest; W_o's, taken back before the MLP, as much.
  const std::uint32_t ic = mlp_cols(c, geo.sip_pes * static_cast<std::uint32_t>(c.devices.size()));
  const std::uint64_t tcm = topo.pe.tcm_bytes, streams = (f.gated ? 2 : 1) * nn::stream_stage_bytes(topo, ic, DType::bf16);
  const std::uint64_t held =
      streams + (f.layer_norm ? 8 : 4) * std::uint64_t{f.hidden} + f.batch * (22 * std::uint64_t{f.hidden} + 18 * std::uint64_t{ic}) +
      16 * 1024;
  const std::uint64_t free = held < tcm ? tcm - held : 0;
  auto past_gemm = [&](std::uint64_t rows, std::uint64_t cols) {  // a stream's bytes beyond its GEMMs'
    const std::uint64_t gemm = ceil_div(cols, topo.pe.gemm.cols) * ceil_div(f.batch, topo.pe.gemm.rows);
    const std::uint64_t row = 2 * cols, during = gemm * topo.cube.hbm.bytes_per_cycle;
    return row > during ? rows * (row - during) : 0;
  };
  f.qkv_ahead = std::min(past_gemm(f.hidden / f.qkv_splits, f.qkv_cols), free / 4);
  const std::uint64_t half_rest = (free - std::min(free, qkv_stage_bytes(f, topo))) / 2;
  f.mlp_ahead = std::min(past_gemm(f.hidden, ic), half_rest);
  f.o_ahead = std::min(past_gemm(f.o_cols, f.hidden), half_rest);  // freed before the MLP's
  // The attention plans its tiles beside the stages it keeps: they give way, W_o's first,
  // where its tiles would not fit.
  for (std::uint64_t* ahead : {&f.o_ahead, &f.qkv_ahead}) {
    try {
      gqa::validate(attention_config(c, geo, f, topo), topo);
      break;
    } catch (const ConfigError&) {
      *ahead = 0;
    }
  }
  return f;
}

std::uint64_t qkv_stage_bytes(const layer::LayerForm& f, const Topology& topo) {
  if (!f.qkv_ahead) return 0;
  const bool all = f.qkv_ahead >= std::uint64_t{f.hidden} / f.qkv_splits * f.qkv_cols * 2;
  return f.qkv_ahead + (all ? 0 : nn::stream_stage_bytes(topo, f.qkv_cols, DType::bf16));  // the rest's stream
}

std::uint32_t mlp_cols(const StepConfig& c, std::uint32_t pes) { return ceil_div(c.model.intermediate, pes); }

layer::LayerWeights place_layer(RuntimeContext& rt, const StepConfig& c, const Geometry& geo, const layer::LayerForm& f,
                                std::uint32_t di, SipId sip, std::uint32_t index, const LayerValues* values) {
  const Topology& topo = rt.system().topology();
  const ModelPreset& m = c.model;
  const DPPolicy every = DPPolicy::replicate(topo.cubes_per_sip(), geo.cube_pes);
  const DPPolicy dealt = DPPolicy::shard2d(topo.cubes_per_sip(), geo.cube_pes);
  const std::uint32_t ic = mlp_cols(c, geo.sip_pes * static_cast<std::uint32_t>(c.devices.size()));
  const std::int64_t h = m.hidden, pes = geo.sip_pes, norm_rows = f.layer_norm ? 2 : 1;
  const std::string at = "w.L" + std::to_string(index) + ".";
  auto put = [&](const std::string& name, const Shape& shape, DType dtype, const DPPolicy& p,
                 const std::function<HostTensor()>& host) {
    return values ? rt.from_host(at + name, host(), dtype, p, sip) : rt.empty(at + name, shape, dtype, p, sip);
  };
  auto norm = [&](const std::string& name) {
    return put(name, {norm_rows, h}, DType::fp32, every, [&] {
      std::vector<HostTensor> rows{values->weights.at(name)};
      if (f.layer_norm) rows.push_back(values->weights.at(name + ".bias"));
      return stacked(rows);
    });
  };
  // Per shard: the group features of its rank (qkv, o), or its run-wide MLP features.
  auto per_shard = [&](const std::function<HostTensor(std::uint32_t)>& shard) {
    std::vector<HostTensor> parts;
    for (std::uint32_t i = 0; i < geo.sip_pes; ++i) parts.push_back(shard(i));
    return stacked(parts);
  };
  auto group_features = [&](std::uint32_t i, std::uint32_t cols) -> std::optional<std::pair<std::uint32_t, std::vector<std::int64_t>>> {
    const auto role = geo.role(topo.mesh(), i);
    if (!role) return std::nullopt;
    return std::pair{di * geo.heads.groups_per_sip + role->first, run_of(i64(role->second) * cols, cols)};
  };
  layer::LayerWeights w;
  w.attn_norm = norm("input_layernorm");
  if (!f.parallel) w.mlp_norm = norm("post_attention_layernorm");
  // A rank's QKV columns: its block's features over its part of the inputs.
  const std::int64_t inputs = h / f.qkv_splits;
  auto qkv_block = [&](std::uint32_t i) -> std::optional<std::tuple<std::uint32_t, std::vector<std::int64_t>, std::int64_t>> {
    const auto role = geo.role(topo.mesh(), i);
    if (!role) return std::nullopt;
    return std::tuple{di * geo.heads.groups_per_sip + role->first,
                      run_of(i64(role->second / f.qkv_splits) * f.qkv_cols, f.qkv_cols),
                      i64(role->second % f.qkv_splits) * inputs};
  };
  w.qkv_t = put("qkv_t", {pes * inputs, f.qkv_cols}, DType::bf16, dealt, [&] {
    return per_shard([&](std::uint32_t i) {
      HostTensor t;
      t.shape = {inputs, f.qkv_cols};
      t.data.assign(static_cast<std::size_t>(inputs) * f.qkv_cols, 0.0f);
      if (const auto g = qkv_block(i)) {
        const auto& [head, features, first] = *g;
        for (std::uint32_t j = 0; j < f.qkv_cols; ++j)
          if (const auto [matrix, row] = qkv_feature(m, head, features[j]); matrix) {
            const HostTensor col = columns_of(values->weights.at(matrix), {row});
            for (std::int64_t k = 0; k < inputs; ++k) t.data[k * f.qkv_cols + j] = col.data[first + k];
          }
      }
      return t;
    });
  });
  if (f.qkv_bias)
    w.qkv_bias = put("qkv_bias", {pes, f.qkv_cols}, DType::fp32, dealt, [&] {
      return per_shard([&](std::uint32_t i) {
        HostTensor t;
        t.shape = {1, f.qkv_cols};
        t.data.assign(f.qkv_cols, 0.0f);
        if (const auto g = qkv_block(i); g && std::get<2>(*g) == 0)  // the bias once: on the first part
          for (std::uint32_t j = 0; j < f.qkv_cols; ++j)
            if (const auto [matrix, row] = qkv_feature(m, std::get<0>(*g), std::get<1>(*g)[j]); matrix)
              t.data[j] = values->weights.at(std::string(matrix) + ".bias").data[row];
        return t;
      });
    });
  w.o_t = put("o_t", {pes * f.o_cols, h}, DType::bf16, dealt, [&] {
    return per_shard([&](std::uint32_t i) {
      std::vector<std::int64_t> cols(f.o_cols, values->weights.at("o_proj").shape[1]);  // none: zero rows
      if (const auto g = group_features(i, f.o_cols)) {
        const std::int64_t gd = i64(f.g) * m.head_dim;
        for (std::uint32_t j = 0; j < f.o_cols; ++j)
          if (g->second[j] < gd) cols[j] = g->first * gd + g->second[j];
      }
      return rows_of_columns(values->weights.at("o_proj"), cols);
    });
  });
  auto features = [&](std::uint32_t i) { return run_of((i64(di) * pes + i) * ic, ic); };
  if (f.gated)
    w.gate_t = put("gate_t", {pes * h, ic}, DType::bf16, dealt,
                   [&] { return per_shard([&](std::uint32_t i) { return columns_of(values->weights.at("gate_proj"), features(i)); }); });
  w.up_t = put("up_t", {pes * h, ic}, DType::bf16, dealt,
               [&] { return per_shard([&](std::uint32_t i) { return columns_of(values->weights.at("up_proj"), features(i)); }); });
  w.down_t = put("down_t", {pes * ic, h}, DType::bf16, dealt, [&] {
    return per_shard([&](std::uint32_t i) { return rows_of_columns(values->weights.at("down_proj"), features(i)); });
  });
  return w;
}

gqa::BatchConfig attention_config(const StepConfig& c, const Geometry& geo, const layer::LayerForm& f,
                                  const Topology& topo) {
  gqa::BatchConfig a;
  a.h_q = c.model.heads_q;
  a.h_kv = c.model.heads_kv;
  a.d = c.model.head_dim;
  a.t_q = 1;
  a.s = *std::max_element(c.lens.begin(), c.lens.end());
  a.model = c.model.name;
  a.lens = c.lens;
  a.page_rows = c.page_rows;
  a.cubes = geo.heads.cubes;
  a.pes = geo.heads.pes;
  a.devices = c.devices;
  a.o_every_rank = true;
  // Through the attention a PE keeps x (fp32), its normalised copy (bf16) and the group's
  // Q, K and V in their few forms, with the RoPE tables, beside the next layer's QKV stage
  // and W_o's.
  const std::uint64_t b = c.batch(), h = c.model.hidden, d = c.model.head_dim;
  const std::uint64_t o_stage = f.o_ahead ? f.o_ahead + nn::stream_stage_bytes(topo, f.hidden, DType::bf16) : 0;
  a.tcm_reserved = b * (6 * h + 16 * std::uint64_t{a.g() + 2} * d + 8 * d) + 16 * 1024 + qkv_stage_bytes(f, topo) + o_stage;
  return a;
}

gqa::BatchInputs cache_inputs(const StepConfig& c, const LayerValues& v) {
  const ModelPreset& m = c.model;
  const std::uint64_t total = std::accumulate(c.lens.begin(), c.lens.end(), std::uint64_t{0});
  gqa::BatchInputs in;
  in.q.shape = {c.batch(), m.heads_q, 1, m.head_dim};
  in.q.data.assign(in.q.elements(), 0.0f);
  auto varlen = [&](const std::vector<HostTensor>& caches) {
    HostTensor t;
    t.shape = {m.heads_kv, i64(total), m.head_dim};
    t.data.assign(t.elements(), 0.0f);
    std::uint64_t first = 0;
    for (std::uint32_t r = 0; r < c.batch(); ++r) {
      const std::uint64_t held = c.lens[r] - 1;
      for (std::uint32_t hk = 0; hk < m.heads_kv; ++hk)
        std::copy_n(caches[r].data.begin() + static_cast<std::ptrdiff_t>(hk * held * m.head_dim), held * m.head_dim,
                    t.data.begin() + static_cast<std::ptrdiff_t>((hk * total + first) * m.head_dim));
      first += c.lens[r];
    }
    return t;
  };
  in.k = varlen(v.k_cache);
  in.v = varlen(v.v_cache);
  return in;
}

void plan_collectives(layer::StepPlan& s, const Topology& topo, const Geometry& geo, const std::vector<SipId>& devices) {
  const layer::LayerForm& f = s.form;
  for (const SipId sip : devices)
    for (const std::uint32_t start : geo.starts) {
      const gqa::GroupGeometry g = gqa::GroupGeometry::of(start, geo.heads.cubes, topo.mesh());
      layer::GroupPlan plan{sip, start, {}, {}};
      // Two levels, one_shot each: among a cube's PEs on its block of the buffer, and among
      // the cubes (a rank a cube, its PEs the lanes) on all of it; `cols` features a rank.
      auto level = [&](collectives::Op op, std::uint32_t cols, std::uint32_t tag) {
        layer::TwoLevel two;
        collectives::Request q;
        q.op = op;
        q.algorithm = collectives::Algorithm::OneShot;
        q.cols = f.batch;
        q.bytes = std::uint64_t{geo.heads.pes} * cols * f.batch * 4;
        for (std::uint32_t i = 0; i < g.cubes(); ++i) {
          q.ranks.clear();
          for (std::uint32_t p = 0; p < geo.heads.pes; ++p) q.ranks.push_back({PeCoord{sip, g.cube_at(i), PeId(p)}});
          two.in_cube.push_back(collectives::make_plan(topo, q));
          two.in_cube.back().tag = tag;
        }
        q.ranks.clear();
        for (std::uint32_t i = 0; i < g.cubes(); ++i) {
          q.ranks.emplace_back();
          for (std::uint32_t p = 0; p < geo.heads.pes; ++p) q.ranks.back().push_back(PeCoord{sip, g.cube_at(i), PeId(p)});
        }
        q.bytes = std::uint64_t{geo.heads.pes} * geo.ranks * cols * f.batch * 4;
        two.across = collectives::make_plan(topo, q);
        two.across.tag = tag + 200;
        return two;
      };
      plan.gather_qkv = level(collectives::Op::AllGather, f.qkv_cols, 1000);
      plan.scatter_o = level(collectives::Op::ReduceScatter, f.o_cols, 2000);
      s.groups.push_back(std::move(plan));
    }
  collectives::Request all;
  all.ranks = collectives::ranks_of_pes(topo, devices);
  all.bytes = std::uint64_t{f.batch} * f.hidden * 4;
  all.cols = 64;
  s.all_reduce = collectives::make_plan(topo, all);
  s.all_reduce.tag = 3000;
}

layer::Ends place_ends(RuntimeContext& rt, const StepConfig& c, const Geometry& geo, const layer::LayerForm& f) {
  const Topology& topo = rt.system().topology();
  const DPPolicy every = DPPolicy::replicate(topo.cubes_per_sip(), geo.cube_pes);
  const DPPolicy dealt = DPPolicy::shard2d(topo.cubes_per_sip(), geo.cube_pes);
  const auto ranks = static_cast<std::uint32_t>(c.devices.size()) * geo.sip_pes;
  const std::int64_t pes = geo.sip_pes, h = f.hidden, b = f.batch;
  layer::Ends e;
  e.vocab_rows = ceil_div(c.model.vocab, ranks);
  const std::uint32_t sips = topo.system.sips;
  for (auto* v : {&e.embed, &e.final_norm, &e.head_t, &e.picks, &e.rank_index, &e.next}) v->resize(sips);
  e.first_pe.assign(sips, 0);
  HostTensor index;
  index.shape = {b, ranks};
  for (std::int64_t r = 0; r < b; ++r)
    for (std::uint32_t i = 0; i < ranks; ++i) index.data.push_back(static_cast<float>(i));
  for (std::uint32_t di = 0; di < c.devices.size(); ++di) {
    const SipId sip = c.devices[di];
    const std::uint32_t i = sip.value;
    e.first_pe[i] = di * geo.sip_pes;
    if (!c.prefill)  // a prefill embeds its prompts through its own table (prefill_placement)
      e.embed[i] = rt.empty("w.embed", {pes * i64(e.vocab_rows), h}, DType::bf16, dealt, sip);
    e.final_norm[i] = rt.empty("w.final_norm", {f.layer_norm ? 2 : 1, h}, DType::fp32, every, sip);
    e.head_t[i] = rt.empty("w.lm_head_t", {pes * h, i64(e.vocab_rows)}, DType::bf16, dealt, sip);
    e.picks[i] = rt.empty("picks", {pes * ranks * b, 2}, DType::fp32, dealt, sip);
    e.rank_index[i] = rt.from_host("rank_index", index, DType::fp32, every, sip);
    e.next[i] = rt.empty("next_tokens", {b, 1}, DType::fp32, every, sip);
  }
  collectives::Request q;
  q.op = collectives::Op::AllGather;
  q.ranks = collectives::ranks_of_pes(topo, c.devices);
  q.bytes = std::uint64_t{ranks} * f.batch * 2 * 4;
  q.cols = 2;
  e.gather_picks = collectives::make_plan(topo, q);
  e.gather_picks.tag = 4000;
  // The step's tokens: any ids, spread over the vocabulary.
  for (std::uint32_t r = 0; r < f.batch; ++r) e.tokens.push_back((std::uint64_t{r} * 7919 + 17) % c.model.vocab);
  return e;
}

}  // namespace kb::workloads
