#pragma once
// The ends of a model: the embedding lookup of the step's tokens, and the LM head with a
// greedy pick of the next token. The vocabulary is split over PEs by rows (a PE holds a
// run of token ids of the embedding table and of the LM head's weights).
#include <cstdint>
#include <vector>

#include "kernels/tl/ctx.h"

namespace kb::nn {

// The table's rows of `ids` (each in one shard, this PE's or another's of the SIP),
// loaded into one [T, hidden] buffer of the table's dtype, a load per token.
tl::Tensor embed(tl::Ctx& tl, const DeviceTensor& table, const std::vector<std::uint64_t>& ids);

// The LM head on this PE's slice of the vocabulary: logits = x W^T for W^T's columns
// [first_id, first_id + cols) (a ref [hidden, cols], nn::linear), and per token the
// largest logit and its token id:
// [T, 2] (logit, id as fp32, exact below 2^24). The run's pick is the best of the slices'.
tl::Tensor lm_head_pick(tl::Ctx& tl, const tl::Tensor& x, const tl::Tensor& w_t, std::uint64_t first_id,
                        std::uint32_t tile_rows = 0);

}  // namespace kb::nn
