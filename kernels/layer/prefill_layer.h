#pragma once
// A decoder layer at a prefill step (docs/models.md, Prefill), over every PE of the run's
// SIPs. The prompts' new tokens are cut into runs of positions dealt over P lanes: lane p
// is PE p of every cube. Each cube owns a share of the layer (its query heads of one KV
// head's group, a block of the MLP's features) and each of its PEs computes that share for
// its lane's tokens, so a GEMM has a lane's tokens as rows and a cube's share as columns:
//   - activations live in HBM, each PE's lane's rows cut into P chunks of h / P columns
//     (chunk-major), so a chunk is whole rows of a load;
//   - column-parallel weights (Q, K and V, gate and up) are dealt over the cube's PEs by
//     rows: PE k holds rows chunk k of the cube's columns, and a PE adds chunk k of its
//     activations times sibling k's shard over k (the fabric carries the siblings' shards);
//   - row-parallel weights (O and down) by columns: sibling s's shard gives chunk s of the
//     partial sums, which an all-reduce over the lane (PE p of every cube of the run) adds.
// K and V: the cubes of a KV head's group split the lane's runs, project them, rotate K
// and append both to the group's cache; each PE then attends its cube's query heads for
// its lane's runs over the cache (flash tiles, causal). Each part opens a phase named as
// the decode layer's, which the breakdown by op reads.
#include <cstdint>
#include <vector>

#include "kernels/collectives/plan.h"
#include "kernels/layer/block.h"

namespace kb::layer {

// A run of a lane's tokens: consecutive new positions of one request.
struct TokenRun {
  std::uint32_t request = 0;
  std::uint64_t pos0 = 0, count = 0;  // positions [pos0, pos0 + count)
  std::uint64_t row = 0;              // its first row among the lane's tokens
  std::uint64_t kv_row = 0;           // its first row of K and V in a group's gathered buffer
};

// A request's keys: its cache holds positions [0, cached) from row cache_row on (and takes
// the new ones after them); its new ones are `runs`, in position order.
struct PromptKeys {
  std::uint64_t cache_row = 0, cached = 0;
  std::vector<TokenRun> runs;
};

struct PrefillForm : Block {
  std::uint32_t hidden = 0, head_dim = 0;
  std::uint32_t chunks = 1;       // P: a chunk is hidden / P columns
  std::uint32_t lane_rows = 0;    // rows of a lane's activations (the longest lane's)
  std::uint32_t block_rows = 16;  // tokens a GEMM block takes (the TCM's bound)
  std::uint32_t heads = 0;        // query heads a cube attends, the most of any cube
  std::uint32_t mlp_cols = 0;     // a cube's MLP features (padded to whole passes)
  std::uint32_t mlp_passes =
      1;                        // the features in passes of mlp_cols / mlp_passes (the TCM's bound)
  std::uint32_t run_rows = 64;  // positions a run holds at most, and keys an attention pair takes
  std::uint32_t chunk_cols() const { return hidden / chunks; }
};

// A cube's share of the attention: its query heads among its group's, the lane runs it
// projects K and V for (index % kv_parts == kv_part), and its group's cache. A cube the
// groups leave over (group kNone) has none of it.
struct CubeAttention {
  static constexpr std::uint32_t kNone = ~0u;
  std::uint32_t heads = 0;
  std::uint32_t kv_part = 0, kv_parts = 1;
  std::uint32_t group = kNone;  // index of the group's all-gather in PrefillPlan::gather_kv
  DeviceTensor k, v;  // [rows, d] bf16: every request's rows, row-wise over the group's PEs
};

// A SIP's tensors of one layer. Shards are per PE (cube c, PE p: shard c * P + p).
struct PrefillWeights {
  DeviceTensor attn_norm,
      mlp_norm;  // [n, h] on every PE (n: 1 RMSNorm, 2 LayerNorm); mlp_norm none when parallel
  DeviceTensor wq,
      wkv;  // [PEs * h/P, heads * d], [PEs * h/P, 2d]: rows chunk p of the cube's columns
  DeviceTensor q_bias, kv_bias;  // [PEs, heads * d], [PEs, 2d] fp32 (with qkv_bias)
  DeviceTensor wo;               // [PEs * heads * d, h/P]: the cube's heads' rows, columns chunk p
  DeviceTensor gate_up;   // [PEs * passes * h/P, (gated ? 2 : 1) * mlp_cols / passes]: pass j's
                          // columns of gate then up (up alone ungated), rows chunk p
  DeviceTensor down;      // [PEs * mlp_cols, h/P]
  std::vector<CubeAttention> cubes;  // per cube of the SIP
};

// What every layer of the step shares. Per SIP (indexed by SIP id), each PE's shard its own:
// x and sums (fp32: the residual stream, or partial sums with it added by one cube, which
// an all-reduce turns into its next value: x -> sums -> x a layer) and a (the norm's
// output, the weights' dtype) [PEs * P * lane_rows, h/P], chunk-major; q and o [PEs * heads *
// lane_rows, d] bf16, a run's rows head-major at heads * its row; the RoPE tables of the
// lane's positions, [PEs * lane_rows, d/2]; hidden, the MLP's activated features [PEs *
// passes * lane_rows, mlp_cols / passes] (the weights' dtype), pass after pass.
struct PrefillPlan {
  PrefillForm form;
  std::vector<std::vector<TokenRun>> lanes;  // per lane
  std::vector<PromptKeys> prompts;           // per request
  collectives::Plan all_reduce;              // a rank a cube of the run, its PEs the lanes
  // Per KV-head group: an all-gather over its PEs of the K and V rows each projected,
  // [ranks * part rows, 2d] fp32 on every one (kv_gather, per SIP).
  std::vector<collectives::Plan> gather_kv;
  std::vector<DeviceTensor> x, a, sums, q, o, rope_cos, rope_sin, kv_gather, hidden;
};

// Rows [r0, r0 + n) of this PE's lane in chunk k of an activation tensor t (x, a, sums).
RowRange chunk_rows(const tl::Ctx& tl, const PrefillForm& f, const DeviceTensor& t, std::uint32_t k,
                    std::uint64_t r0, std::uint64_t n);

// One layer on this PE: its lane's rows of x are updated in place to the layer's output.
void prefill_layer(tl::Ctx& tl, const PrefillPlan& s, const PrefillWeights& w);

}  // namespace kb::layer
