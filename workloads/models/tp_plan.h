#pragma once
// Megatron-style tensor parallelism of a model over the run's SIPs (docs/models.md,
// Tensor-parallel placement): what each SIP and each of its PEs holds, and whether it
// fits the HBM channels. Within a SIP the column-parallel linears are split by output
// rows over its PEs and the row-parallel ones by input columns, each PE streaming its
// share from its own channel; the vocabulary (embedding and LM head) is split over every
// PE of the run.
#include <cstdint>
#include <string>

#include "base/topology.h"
#include "workloads/models/model_presets.h"

namespace kb::workloads {

// One SIP's share of a decoder layer.
struct LayerShare {
  std::uint32_t heads_q = 0, heads_kv = 0;  // KV heads are replicated when fewer than the SIPs
  std::uint64_t qkv_rows = 0;  // rows of W_q, W_k and W_v (output features): column-parallel
  std::uint64_t o_cols = 0;    // columns of W_o (its heads' features): row-parallel, then an all-reduce
  std::uint64_t mlp = 0;       // rows of W_gate and W_up, columns of W_down (intermediate / SIPs)
};

struct TpPlan {
  std::uint32_t sips = 1, pes = 1;  // SIPs, and PEs per SIP
  LayerShare share;
  std::uint64_t layer_bytes_per_sip = 0;  // a layer's weights on one SIP (bf16), norms included
  std::uint64_t vocab_rows_per_pe = 0;    // rows of the embedding table (and of an untied LM head)
  std::uint64_t weight_bytes_per_channel = 0;  // the fullest channel's weights, every layer's
  std::uint64_t kv_bytes_per_token = 0;        // K and V of every layer for one token, on one SIP
  std::uint64_t channel_capacity = 0;

  // The tokens of KV cache (every request's context together) the channels hold beside
  // the weights, with the KV spread evenly over a SIP's channels.
  std::uint64_t kv_token_capacity() const;
};

// The plan on `sips` SIPs of `topo`; throws ConfigError when the heads do not split over
// them or the weights do not fit (naming how many SIPs the weights need).
TpPlan plan_tensor_parallel(const ModelPreset& m, const Topology& topo, std::uint32_t sips);
// The fewest SIPs of `topo`'s kind whose channels hold the model's weights and over which
// its heads split (0 if none up to 64).
std::uint32_t min_sips(const ModelPreset& m, const Topology& topo);
// Throws ConfigError when `tokens` of KV cache do not fit beside the weights, saying how
// many do.
void check_kv_fits(const ModelPreset& m, const TpPlan& plan, std::uint64_t tokens);

}  // namespace kb::workloads
