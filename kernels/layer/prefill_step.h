#pragma once
// A model's prefill step on every PE of the run (docs/models.md, Prefill): the embedding of
// the prompts' tokens, the prefill layers (prefill_layer.h), and, on each prompt's last
// token, the model's end as a decode step has it (model_step.h). The embedding's rows are
// dealt over the cubes, each cube's replicated on its PEs: a lane's PE puts the rows its
// cube holds into its lane's rows of x (zeros elsewhere), and the lane's all-reduce hands
// it all of them. A prompt's last row lives in one lane; an all-reduce over each cube's PEs
// (each putting its lane's last rows) gives every PE all of them.
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/layer/model_step.h"
#include "kernels/layer/prefill_layer.h"

namespace kb::layer {

struct PrefillEnds {
  Ends head;                              // the final norm, the LM head and the picks, as decode's
  std::uint64_t cube_vocab_rows = 0;      // token ids a cube holds
  std::vector<std::uint32_t> first_cube;  // per SIP id: the run-wide index of its first cube
  std::vector<DeviceTensor> embed;  // [cubes * cube_vocab_rows, h] bf16, row-wise over the cubes
  std::vector<std::vector<std::uint64_t>> tokens;  // per lane: the token id of each of its rows
  std::vector<std::pair<std::uint32_t, std::uint64_t>>
      last;                                 // per request: its last token's lane and row
  std::vector<collectives::Plan> cube_sum;  // per run-wide cube: an all-reduce over its PEs
};

// The step on this PE: `layers` in order, each with its SIPs' weights (indexed by SIP id).
void prefill_step(tl::Ctx& tl, const PrefillPlan& s, const PrefillEnds& e,
                  const std::vector<std::vector<PrefillWeights>>& layers);

}  // namespace kb::layer
