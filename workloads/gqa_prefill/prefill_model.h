#pragma once
// The closed-form prefill model (docs/gqa_prefill.md, The model): the cycles a shape
// should take on a placement and a topology, for either ring, from the busiest PE's GEMM
// work, the bytes its fabric port, its HBM channel and a ring link must carry, and the
// fill and drain around them. `--ring auto` picks the ring the model says is faster.
#include <string>

#include "base/topology.h"
#include "kernels/gqa/prefill_plan.h"

namespace kb::gqa {

struct PrefillModel {
  double gemm = 0;    // the busiest PE's pairs on the GEMM engine
  double fabric = 0;  // its fabric port: the bytes it sends and receives
  double hbm = 0;     // its HBM channel: KV, Q, state and O
  double noc = 0;     // the busiest ring link
  double fill = 0, drain = 0;
  double exposed = 0;  // transfers nothing overlaps (pass-Q with one tile per rank)
  double cycles = 0;
  std::string bound;  // the largest of gemm, fabric, hbm, noc
};

// `causal`, `s` and `t_q` as in the plan's shape.
PrefillModel prefill_model(const PrefillShape& shape, bool causal, const Topology& topo);

}  // namespace kb::gqa
