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
tl::Tensor gathered_qkv(tl::Ctx& tl, const StepPlan& s, const DeviceTensor& gathered, RowRange all) {
  const LayerForm& f = s.form;
  const std::uint32_t features = (f.g + 2) * f.head_dim;
  if (f.qkv_splits == 1) return tl.load(gathered, {all.begin, features});
  const std::uint32_t blocks = s.cubes * s.pes / f.qkv_splits, block = f.qkv_cols * f.batch;
  const tl::Tensor parts = tl.view(tl.load(gathered, all), {blocks, static_cast<std::int64_t>(f.qkv_splits) * block});
  tl::Tensor sum = tl.cols(parts, 0, block);
  for (std::uint32_t k = 1; k < f.qkv_splits; ++k) {
    const tl::Tensor next = tl.cols(parts, k * block, block);  // one op a statement
    sum = tl.add(sum, next);
  }
  return tl.rows(tl.view(sum, {static_cast<std::int64_t>(blocks) * f.qkv_cols, f.batch}), 0, features);
}

// Steps 1-4 on a rank of a KV head's group, from the normalised n [B, h] in the weights'
// dtype: its partial sum of the attention block's output, [B, h].
tl::Tensor attention(tl::Ctx& tl, const StepPlan& s, const LayerWeights& w, const Role& role, const tl::Tensor& n) {
  const LayerForm& f = s.form;
  const std::uint32_t d = f.head_dim, gd = f.g * d, b = f.batch, sip = tl.sip().value;
  const gqa::DecodeGroup& t = *role.tensors;
  {
    const auto scope = tl.scratch_scope();  // Q, K and V are in HBM when it ends
    tl.phase("qkv_proj");
    tl::Tensor bias;
    if (f.qkv_bias) bias = load_mine(tl, w.qkv_bias);
    const std::uint32_t inputs = f.hidden / f.qkv_splits;
    const tl::Tensor part = tl.cols(n, role.rank % f.qkv_splits * inputs, inputs);
    const tl::Tensor mine = nn::linear(tl, part, ref_mine(tl, w.qkv_t), f.qkv_bias ? &bias : nullptr);
    tl.wait(mine);  // each phase's time is its own op's (the breakdown by op)
    // Each rank's columns go into its part of the group's buffer transposed, [qkv_cols, B],
    // so the gathered buffer is, block by block, the splits' partial [Q | K | V]^T.
    tl.phase("qkv_gather");
    const DeviceTensor& gathered = s.qkv_buffer.at(sip);
    const RowRange all = tl.shard_rows(gathered);
    tl.store(gathered, {all.begin + std::uint64_t{role.rank} * f.qkv_cols, f.qkv_cols}, tl.trans(mine));
    collectives::run(tl, role.group->gather_qkv, s.qkv_buffer);
    const tl::Tensor qkv = tl.trans(gathered_qkv(tl, s, gathered, all));  // [B, (G + 2) d]
    tl.phase("rope");
    const tl::Tensor cos = load_mine(tl, s.rope_cos.at(sip));
    const tl::Tensor sin = load_mine(tl, s.rope_sin.at(sip));
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
  const DeviceTensor& scattered = s.o_buffer.at(sip);
  const RowRange whole = tl.shard_rows(scattered);
  const tl::Tensor o = tl.cast(tl.load(t.o, {0, std::uint64_t{b} * f.g}), DType::fp32);
  tl.store(scattered, {whole.begin, gd}, tl.trans(tl.view(o, {b, gd})));
  collectives::run(tl, role.group->scatter_o, s.o_buffer);
  const tl::Tensor slice = tl.trans(tl.load(scattered, {whole.begin + std::uint64_t{role.rank} * f.o_cols, f.o_cols}));
  tl.phase("o_proj");
  const tl::Tensor in = tl.cast(slice, w.o_t.dtype());  // one op a statement: arguments have no order
  return nn::linear(tl, in, ref_mine(tl, w.o_t));
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

void decoder_layer(tl::Ctx& tl, const StepPlan& s, const LayerWeights& w, const tl::Tensor& x) {
  const LayerForm& f = s.form;
  const auto layer = tl.scratch_scope();
  // The partial sums of every PE, all-reduced in the TCM, added to x.
  const Shape rows{static_cast<std::int64_t>(x.elements() / s.all_reduce.cols), s.all_reduce.cols};
  const tl::Tensor sum = tl.empty(rows, DType::fp32, "partial_sum");
  auto add_up = [&](const char* phase) {
    tl.phase(phase);
    {
      const auto scope = tl.scratch_scope();
      collectives::run_in_tcm(tl, s.all_reduce, sum);
    }
    tl.add(x, tl.view(sum, x.shape()), &x);
  };
  const DType weights = w.down_t.dtype();
  const std::optional<Role> role = role_of(tl, s, w);
  {
    const auto scope = tl.scratch_scope();
    tl.phase("attn_norm");
    const tl::Tensor n = normalized(tl, x, w.attn_norm, f, weights);
    // A PE outside every group (a placement that leaves cubes idle) adds nothing.
    tl::Tensor partial = role ? attention(tl, s, w, *role, n) : tl.full(x.shape(), 0.0f);
    if (f.parallel) {
      partial = tl.add(partial, nn::mlp_partial(tl, n, mlp_share(tl, w, f)));
    }
    tl.wait(partial);
    tl.copy(tl.view(partial, rows), sum);
  }
  add_up("attn_all_reduce");
  if (f.parallel) return;
  {
    const auto scope = tl.scratch_scope();
    tl.phase("mlp_norm");
    const tl::Tensor n = normalized(tl, x, w.mlp_norm, f, weights);
    const tl::Tensor partial = nn::mlp_partial(tl, n, mlp_share(tl, w, f));
    tl.wait(partial);
    tl.copy(tl.view(partial, rows), sum);
  }
  add_up("mlp_all_reduce");
}

}  // namespace kb::layer
