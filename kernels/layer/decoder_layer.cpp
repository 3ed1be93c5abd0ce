#include "kernels/layer/decoder_layer.h"

#include <optional>

#include "kernels/gqa/helpers.h"
#include "kernels/nn/kv_cache.h"
#include "kernels/nn/linear.h"
#include "kernels/nn/norm.h"
#include "kernels/nn/rope.h"

namespace kb::layer {

namespace {

// This PE's place in a KV head's group: the group, its rank and the attention's tensors.
struct Role {
  const GroupPlan* group = nullptr;
  std::uint32_t rank = 0;
  const gqa::DecodeGroup* tensors = nullptr;
};

std::optional<Role> role_of(const tl::Ctx& tl, const StepPlan& s, const LayerWeights& w) {
  if (tl.pe().value >= s.pes) return std::nullopt;
  for (const GroupPlan& g : s.groups) {
    if (g.sip != tl.sip()) continue;
    const auto index = gqa::GroupGeometry::of(g.cube_start, s.cubes, tl.mesh()).index_of(tl.cube());
    if (!index) continue;
    for (const gqa::DecodeGroup& t : w.attention->groups)
      if (t.cube_start == g.cube_start) return Role{&g, *index * s.pes + tl.pe().value, &t};
  }
  return std::nullopt;
}

tl::Tensor load_mine(tl::Ctx& tl, const DeviceTensor& t) { return tl.load(t, tl.shard_rows(t)); }
tl::Tensor ref_mine(tl::Ctx& tl, const DeviceTensor& t) { return tl.ref(t, tl.shard_rows(t)); }

nn::MlpShare mlp_share(tl::Ctx& tl, const LayerWeights& w, const LayerForm& f) {
  nn::MlpShare m;
  m.up_t = ref_mine(tl, w.up_t);
  if (f.gated) m.gate_t = ref_mine(tl, w.gate_t);
  m.down_t = ref_mine(tl, w.down_t);
  m.act = f.act;
  m.eps = f.eps;
  return m;
}

// The gathered [Q | K | V]^T, [(G + 2) d, B]: the splits' parts added block by block.
tl::Tensor gathered_qkv(tl::Ctx& tl, const StepPlan& s, const tl::Tensor& gathered) {
  const LayerForm& f = s.form;
  const std::uint32_t features = (f.g + 2) * f.head_dim;
  if (f.qkv_splits == 1) return tl.rows(gathered, 0, features);
  const std::uint32_t blocks = s.cubes * s.pes / f.qkv_splits, block = f.qkv_cols * f.batch;
  const tl::Tensor parts = tl.view(gathered, {blocks, static_cast<std::int64_t>(f.qkv_splits) * block});
  tl::Tensor sum = tl.cols(parts, 0, block);
  for (std::uint32_t k = 1; k < f.qkv_splits; ++k) {
    const tl::Tensor next = tl.cols(parts, k * block, block);  // one op a statement
    sum = tl.add(sum, next);
  }
  return tl.rows(tl.view(sum, {static_cast<std::int64_t>(blocks) * f.qkv_cols, f.batch}), 0, features);
}

// Steps 1-4 on a rank of a KV head's group, from the normalised n [B, h] in the weights'
// dtype: its partial sum of the attention block's output, [B, h].
// `qkv_ahead`: its QKV weights' first tiles, preloaded, or none.
tl::Tensor attention(tl::Ctx& tl, const StepPlan& s, const LayerWeights& w, const Role& role, const tl::Tensor& n,
                     const nn::Preloaded* qkv_ahead) {
  const LayerForm& f = s.form;
  const std::uint32_t d = f.head_dim, gd = f.g * d, b = f.batch, sip = tl.sip().value;
  const gqa::DecodeGroup& t = *role.tensors;
  // W_o^T's first tiles load while the group's collectives run in the TCM, from the
  // gather of Q, K and V on (the DMA is idle there), into a stage kept through the attention.
  const tl::Tensor o_w = ref_mine(tl, w.o_t);
  nn::Preloaded o_ahead = nn::plan_preload(tl, o_w, f.o_ahead);
  if (o_ahead.rows) o_ahead.stage = tl.empty({o_ahead.stage_rows, o_w.cols()}, o_w.dtype(), "stage");
  {
    const auto scope = tl.scratch_scope();  // Q, K and V are in HBM when it ends
    tl.phase("qkv_proj");
    tl::Tensor bias;
    if (f.qkv_bias) bias = load_mine(tl, w.qkv_bias);
    const std::uint32_t inputs = f.hidden / f.qkv_splits;
    const tl::Tensor part = tl.cols(n, role.rank % f.qkv_splits * inputs, inputs);
    const tl::Tensor mine = nn::linear(tl, part, ref_mine(tl, w.qkv_t), f.qkv_bias ? &bias : nullptr, 0, qkv_ahead);
    tl.wait(mine);  // each phase's time is its own op's (the breakdown by op)
    // Each rank's columns go into its part of the group's buffer (in the TCM) transposed,
    // [qkv_cols, B], so the gathered buffer is, block by block, the splits' partial
    // [Q | K | V]^T.
    tl.phase("qkv_gather");
    // (RoPE's tables first: a load queues behind the DMA's earlier ones.)
    const tl::Tensor cos = load_mine(tl, s.rope_cos.at(sip));
    const tl::Tensor sin = load_mine(tl, s.rope_sin.at(sip));
    nn::preload_into(tl, o_w, o_ahead);
    const tl::Tensor gathered = tl.empty({s.cubes * s.pes * f.qkv_cols, b}, DType::fp32, "qkv_gather");
    const tl::Tensor own = tl.trans(mine);
    tl.copy(own, tl.rows(gathered, role.rank * f.qkv_cols, f.qkv_cols));
    {
      const std::uint32_t cube = role.rank / s.pes, block = s.pes * f.qkv_cols;
      {
        const auto in_cube = tl.scratch_scope();
        collectives::run_in_tcm(tl, role.group->gather_qkv.in_cube.at(cube), tl.rows(gathered, cube * block, block));
      }
      const auto across = tl.scratch_scope();
      collectives::run_in_tcm(tl, role.group->gather_qkv.across, gathered);
    }
    const tl::Tensor qkv = tl.trans(gathered_qkv(tl, s, gathered));  // [B, (G + 2) d]
    tl.phase("rope");
    const tl::Tensor q = tl.cast(nn::rope(tl, tl.cols(qkv, 0, gd), cos, sin, f.g, d), t.q.dtype());
    const tl::Tensor k = nn::rope(tl, tl.cols(qkv, gd, d), cos, sin, 1, d);
    const tl::Tensor v = tl.cols(qkv, gd + d, d);
    tl.store(t.q, {0, std::uint64_t{b} * f.g}, tl.view(q, {static_cast<std::int64_t>(b) * f.g, d}));
    tl.phase("kv_append");
    for (const Append& a : s.appends)
      if (a.rank == role.rank) {
        nn::kv_append(tl, tl.rows(k, a.request, 1), t.k, {a.row});
        nn::kv_append(tl, tl.rows(v, a.request, 1), t.v, {a.row});
      }
  }
  tl.phase("attention");
  {
    const auto frame = tl.persistent_scope();  // the kernel's softmax states, this layer's
    const auto scope = tl.scratch_scope();
    gqa::gqa_decode_batch(tl, w.attention);
  }
  // A rank's copy of O holds the rows it stored and zeros elsewhere: summed over the
  // group, each rank keeps its slice of the features, [o_cols, B].
  tl.phase("o_scatter");
  const tl::Tensor o_in = tl.load(t.o, {0, std::uint64_t{b} * f.g});
  const std::uint32_t rows = s.cubes * s.pes * f.o_cols;  // gd and the last rank's padding
  const tl::Tensor scattered = tl.empty({rows, b}, DType::fp32, "o_scatter");
  const tl::Tensor o = tl.cast(o_in, DType::fp32);
  const tl::Tensor o_t = tl.trans(tl.view(o, {b, gd}));
  tl.copy(o_t, tl.rows(scattered, 0, gd));
  if (rows > gd) tl.fill(tl.rows(scattered, gd, rows - gd), 0.0f);
  {
    const std::uint32_t cube = role.rank / s.pes, block = s.pes * f.o_cols;
    {
      const auto across = tl.scratch_scope();
      collectives::run_in_tcm(tl, role.group->scatter_o.across, scattered);
    }
    const auto in_cube = tl.scratch_scope();
    collectives::run_in_tcm(tl, role.group->scatter_o.in_cube.at(cube), tl.rows(scattered, cube * block, block));
  }
  const tl::Tensor slice = tl.trans(tl.rows(scattered, role.rank * f.o_cols, f.o_cols));
  tl.phase("o_proj");
  const tl::Tensor in = tl.cast(slice, w.o_t.dtype());  // one op a statement: arguments have no order
  return nn::linear(tl, in, o_w, nullptr, 0, &o_ahead);
}

tl::Tensor normalize(tl::Ctx& tl, const tl::Tensor& x, const tl::Tensor& norm, const LayerForm& f) {
  if (!f.layer_norm) return nn::rms_norm(tl, x, tl.rows(norm, 0, 1), f.eps);
  const tl::Tensor weight = tl.rows(norm, 0, 1);  // a view is an op too: one a statement
  return nn::layer_norm(tl, x, weight, tl.rows(norm, 1, 1), f.eps);
}

}  // namespace

tl::Tensor normalized(tl::Ctx& tl, const tl::Tensor& x, const DeviceTensor& norm, const LayerForm& f, DType dtype) {
  const tl::Tensor n = tl.empty(x.shape(), dtype, "normalized");
  const auto scope = tl.scratch_scope();  // the norm's temporaries
  tl.copy(normalize(tl, x, tl.load(norm, tl.shard_rows(norm)), f), n);
  return n;
}

namespace {

// The same with the norm's rows already loaded.
tl::Tensor normalized(tl::Ctx& tl, const tl::Tensor& x, const tl::Tensor& norm, const LayerForm& f, DType dtype) {
  const tl::Tensor n = tl.empty(x.shape(), dtype, "normalized");
  const auto scope = tl.scratch_scope();
  tl.copy(normalize(tl, x, norm, f), n);
  return n;
}

}  // namespace

void decoder_layer(tl::Ctx& tl, const StepPlan& s, const LayerWeights& w, const tl::Tensor& x, const QkvAhead* ahead) {
  const LayerForm& f = s.form;
  const auto layer = tl.scratch_scope();
  // A block's output, x plus every PE's partial sum, is all-reduced in place in x, in the
  // TCM: x holds the PE's partial (the first rank's plus x itself) until the sum replaces
  // it. Meanwhile the DMA loads the next op's first weights (a load queues behind the
  // DMA's earlier ones, so the next norm's weights go first).
  const Shape rows{static_cast<std::int64_t>(x.elements() / s.all_reduce.cols), s.all_reduce.cols};
  const bool first = tl.coord() == s.all_reduce.ranks.front().front();
  auto hand_in = [&](const tl::Tensor& partial) {
    tl.wait(partial);  // each phase's time is its own op's (the breakdown by op)
    if (first) tl.add(x, partial, &x);
    else tl.copy(partial, x);
  };
  auto add_up = [&](const char* phase) {
    tl.phase(phase);
    const auto scope = tl.scratch_scope();
    collectives::run_in_tcm(tl, s.all_reduce, tl.view(x, rows));
  };
  auto last_add_up = [&](const char* phase) {
    if (ahead && ahead->next) {
      const DeviceTensor& norm = ahead->next->attn_norm;
      tl.load(norm, tl.shard_rows(norm), &ahead->norm);
      nn::preload_into(tl, ref_mine(tl, ahead->next->qkv_t), ahead->stage);
    }
    add_up(phase);
  };
  const DType weights = w.down_t.dtype();
  const std::optional<Role> role = role_of(tl, s, w);
  {
    const auto scope = tl.scratch_scope();
    tl.phase("attn_norm");
    const bool preloaded = ahead && ahead->mine;
    const tl::Tensor n = preloaded ? normalized(tl, x, ahead->norm, f, weights) : normalized(tl, x, w.attn_norm, f, weights);
    // A PE outside every group (a placement that leaves cubes idle) adds nothing.
    const nn::Preloaded* qkv = preloaded ? &ahead->stage : nullptr;
    tl::Tensor partial = role ? attention(tl, s, w, *role, n, qkv) : tl.full(x.shape(), 0.0f);
    if (f.parallel) {
      partial = tl.add(partial, nn::mlp_partial(tl, n, mlp_share(tl, w, f)));
    }
    hand_in(partial);
  }
  if (f.parallel) return last_add_up("attn_all_reduce");
  {
    const auto scope = tl.scratch_scope();
    nn::MlpShare mlp = mlp_share(tl, w, f);
    const tl::Tensor hidden = nn::mlp_hidden(tl, x, mlp);
    {
      const auto stages = tl.scratch_scope();  // the preloaded stages, until the up projections used them
      const tl::Tensor mlp_norm = load_mine(tl, w.mlp_norm);
      const nn::Preloaded up = nn::preload(tl, mlp.up_t, f.mlp_ahead);
      const nn::Preloaded gate = f.gated ? nn::preload(tl, mlp.gate_t, f.mlp_ahead) : nn::Preloaded{};
      mlp.up_ahead = &up;
      if (f.gated) mlp.gate_ahead = &gate;
      add_up("attn_all_reduce");
      tl.phase("mlp_norm");
      nn::mlp_features(tl, normalized(tl, x, mlp_norm, f, weights), mlp, hidden);
    }
    hand_in(nn::mlp_down(tl, hidden, mlp));
  }
  last_add_up("mlp_all_reduce");
}

void decoder_layers(tl::Ctx& tl, const StepPlan& s, const std::vector<std::vector<LayerWeights>>& layers,
                    const tl::Tensor& x) {
  const std::uint32_t sip = tl.sip().value;
  const auto frame = tl.persistent_scope();
  QkvAhead ahead;
  if (s.form.qkv_ahead && !layers.empty()) {
    const LayerWeights& first = layers.front().at(sip);
    const tl::Tensor qkv = ref_mine(tl, first.qkv_t);
    ahead.stage = nn::plan_preload(tl, qkv, s.form.qkv_ahead);
    ahead.stage.stage = tl.persistent({ahead.stage.stage_rows, qkv.cols()}, qkv.dtype(), "qkv_ahead");
    const RowRange norm = tl.shard_rows(first.attn_norm);
    ahead.norm = tl.persistent({static_cast<std::int64_t>(norm.count), static_cast<std::int64_t>(first.attn_norm.cols())},
                               first.attn_norm.dtype(), "attn_norm_ahead");
  }
  for (std::size_t i = 0; i < layers.size(); ++i) {
    ahead.next = ahead.stage.rows && i + 1 < layers.size() ? &layers[i + 1].at(sip) : nullptr;
    decoder_layer(tl, s, layers[i].at(sip), x, &ahead);
    ahead.mine = ahead.next != nullptr;
  }
}

}  // namespace kb::layer
