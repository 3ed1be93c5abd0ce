#pragma once
// A decoder layer of a transformer LLM at a decode step, tensor-parallel over every PE of
// the run's SIPs (docs/models.md, Tensor-parallel placement). Every PE holds the step's
// residual stream x [B, h] (one row a request) in TCM and ends the layer with the next
// one's, whole:
//   1. it normalises x; the PEs of a KV head's group each compute their slice of the
//      group's Q, K and V features (column-parallel), and an all-gather over the group
//      gives every one of them all of it;
//   2. each rotates Q and K (RoPE), stores Q for the attention, and the rank holding a
//      request's new position appends its K and V to the paged cache;
//   3. the batched decode kernel (kernels/gqa/gqa_decode_batch.h) attends; a
//      reduce-scatter over the group hands each rank its slice of the heads' output;
//   4. each PE multiplies its slice by its rows of W_o^T (row-parallel), and an all-reduce
//      over every PE of the run adds the partial sums into x;
//   5. the MLP (kernels/nn/mlp.h) the same way: its features dealt over every PE, one
//      all-reduce. Falcon's parallel block adds the MLP's partial sum to the attention's
//      before the one all-reduce.
// Each part opens a phase (tl::Ctx::phase) named for the op, which the workload's
// breakdown by op reads.
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/collectives/plan.h"
#include "kernels/gqa/gqa_decode_batch.h"
#include "kernels/layer/block.h"
#include "kernels/nn/mlp.h"

namespace kb::layer {

// The layer's form and sizes, the same on every PE: its block, and how it is dealt.
struct LayerForm : Block {
  std::uint32_t hidden = 0, head_dim = 0, g = 1;  // g: query heads per KV head
  std::uint32_t batch = 1;                        // requests, one token each
  // The group's [Q | K | V] projection over its ranks: rank r takes column block r / qkv_splits
  // (qkv_cols of them, padded) over part r % qkv_splits of the inputs. A slice narrower than
  // the weights the HBM gives a cycle would leave the PE GEMM-bound (the array takes one
  // input row a cycle), so the inputs are split until it is not; the all-gather then hands
  // every rank the parts, which it adds.
  std::uint32_t qkv_cols = 0, qkv_splits = 1;
  std::uint32_t o_cols = 0;    // a group rank's features of the group's attention output (padded)
  // Bytes the DMA preloads while a collective runs in the TCM: the next layer's QKV
  // weights (during the MLP's all-reduce), each of the MLP's streams (during the
  // attention's), W_o's (during the scatter of O).
  std::uint64_t qkv_ahead = 0, mlp_ahead = 0, o_ahead = 0;
};

// A SIP's tensors of one layer. Norms: [n, h] on every PE (n = 1 row for RMSNorm,
// 2 for LayerNorm's weight and bias); the linears' transposed weights dealt 2-D over the
// SIP's PEs (a PE's shard is its slice, nn::linear's [in, out]).
struct LayerWeights {
  DeviceTensor attn_norm, mlp_norm;  // mlp_norm: none for a parallel block
  DeviceTensor qkv_t, qkv_bias;      // [PEs * h / qkv_splits, qkv_cols]; bias [PEs, qkv_cols]
  DeviceTensor o_t;                  // [PEs * o_cols, h]
  DeviceTensor gate_t, up_t;         // [PEs * h, i]; gate none for an ungated MLP
  DeviceTensor down_t;               // [PEs * i, h]
  // The attention's q, k, v and o of the SIP's KV-head groups: k and v this layer's cache.
  std::shared_ptr<const gqa::DecodeBatchParams> attention;
};

// A group rank's K and V append: request `request`'s new row is `row` of the cache.
struct Append {
  std::uint32_t request = 0, rank = 0;
  std::uint64_t row = 0;
};

// A group collective in two levels: among the PEs of each of the group's cubes (by its
// place in the group), on the cube's block of the buffer, and among the cubes (a rank a
// cube, its PEs the lanes), on all of it: (P - 1) + (cubes - 1) messages a PE where one
// level over the group's cubes x P ranks sends cubes x P - 1.
struct TwoLevel {
  std::vector<collectives::Plan> in_cube;
  collectives::Plan across;
};

// A KV head's group, and its collectives: the all-gather of Q, K and V (in the cube, then
// across), the reduce-scatter of O (across, then in the cube).
struct GroupPlan {
  SipId sip;
  std::uint32_t cube_start = 0;
  TwoLevel gather_qkv, scatter_o;
};

// What every layer of a step shares: the collectives and their buffers (per SIP, indexed
// by SIP id), the RoPE tables of the step's positions and where the new K and V go.
struct StepPlan {
  LayerForm form;
  std::uint32_t cubes = 1, pes = 1;  // a group's cubes, and PEs per cube
  std::vector<GroupPlan> groups;
  collectives::Plan all_reduce;          // over every PE of the run
  std::vector<DeviceTensor> rope_cos, rope_sin;  // [PEs * B, d / 2] replicated
  std::vector<Append> appends;
};

// The QKV weights' stage the layers share: each layer's arrive in it during the last
// all-reduce of the layer before (docs/models.md, Overlap), after its norm's weights.
struct QkvAhead {
  nn::Preloaded stage;
  tl::Tensor norm;                     // the attention norm's rows
  bool mine = false;                   // this layer's are in them
  const LayerWeights* next = nullptr;  // the layer to load it for, once this one's are used
};

// One layer on this PE: x [B, h] fp32 in TCM is updated in place to the layer's output.
void decoder_layer(tl::Ctx& tl, const StepPlan& s, const LayerWeights& w, const tl::Tensor& x,
                   const QkvAhead* ahead = nullptr);
// The layers in order (per layer, per SIP id), each preloading the next one's QKV weights.
void decoder_layers(tl::Ctx& tl, const StepPlan& s, const std::vector<std::vector<LayerWeights>>& layers,
                    const tl::Tensor& x);

// The norm of a layer from this PE's copy of `norm` (RMSNorm: its weight row; LayerNorm:
// weight and bias rows), converted to `dtype` (the GEMMs'), its temporaries freed.
tl::Tensor normalized(tl::Ctx& tl, const tl::Tensor& x, const DeviceTensor& norm, const LayerForm& f, DType dtype);

}  // namespace kb::layer
