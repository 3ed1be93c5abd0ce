#pragma once
// A model's decode step on every PE of the run (docs/models.md): the embedding of the
// step's tokens, the decoder layers (kernels/layer/decoder_layer.h), the final norm and
// the LM head with a greedy pick. The vocabulary is dealt over every PE of the run: the
// PE holding a token's embedding row puts it into the all-reduce's buffer (the others
// zeros), so the all-reduce hands every PE x; each PE picks the best token of its slice
// of the LM head, an all-gather hands every PE every slice's pick, and each takes the best.
#include <cstdint>
#include <vector>

#include "kernels/layer/decoder_layer.h"

namespace kb::layer {

// The ends of the model, per SIP where a vector (indexed by SIP id).
struct Ends {
  std::uint64_t vocab_rows = 0;          // token ids a PE holds
  std::vector<std::uint32_t> first_pe;   // per SIP id: the run-wide index of its first PE
  std::vector<DeviceTensor> embed;       // [PEs * vocab_rows, h] dealt: a PE's run of token ids
  std::vector<DeviceTensor> final_norm;  // [PEs * n, h] replicated, as a layer's norms
  std::vector<DeviceTensor> head_t;      // [PEs * h, vocab_rows] dealt: its ids' columns of W_head^T
  std::vector<DeviceTensor> picks;       // [PEs * ranks * B, 2] fp32: the all-gather's buffer
  std::vector<DeviceTensor> rank_index;  // [PEs * B, ranks] replicated: each row 0, 1, ..., ranks - 1
  std::vector<DeviceTensor> next;        // [PEs * B, 1] fp32 replicated: the picked token ids
  collectives::Plan gather_picks;
  std::vector<std::uint64_t> tokens;     // the step's input token per request
};

// The step on this PE: `layers` in order, each with its SIPs' weights (indexed by SIP id).
void model_step(tl::Ctx& tl, const StepPlan& s, const Ends& e, const std::vector<std::vector<LayerWeights>>& layers);
// The model's end on this PE, from the last layer's x [B, h] (every PE's the same): the
// final norm, its slice of the LM head's best token, the picks gathered, and the best.
void next_tokens(tl::Ctx& tl, const Ends& e, const LayerForm& f, const tl::Tensor& x);

}  // namespace kb::layer
