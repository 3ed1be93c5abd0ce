#pragma once
// Where a model's prefill step sits on the machine (docs/models.md, Prefill): the prompts'
// runs dealt over the lanes, each cube's share of the heads and MLP features, each layer's
// weights dealt over the cube's PEs as the prefill layer streams them, the groups' caches,
// the activations, and the collectives.
#include <cstdint>
#include <vector>

#include "kernels/layer/prefill_step.h"
#include "platform/runtime_context.h"
#include "workloads/models/layer_placement.h"

namespace kb::workloads {

struct PrefillStep {
  layer::PrefillPlan plan;
  std::vector<std::vector<layer::PrefillWeights>> layers;  // per layer, per SIP id
  layer::PrefillEnds ends;                                 // model_step (timing mode)
};

// Throws ConfigError when the model's features cannot be dealt over a cube's PEs, or the
// prompts' activations do not fit the HBM beside the weights and the KV cache.
void check_prefill(const StepConfig& c, const Topology& topo, const TpPlan& tp);
// The step's plan and every layer's tensors; the activations hold `values` (data mode).
PrefillStep place_prefill(RuntimeContext& rt, const StepConfig& c, const Geometry& geo,
                          const StepValues* values);
// After the run (data mode): y from each lane's rows, and the new tokens' K and V from the
// groups' caches, in the step's token order.
LayerOutputs read_prefill(RuntimeContext& rt, const StepConfig& c, const Geometry& geo,
                          const PrefillStep& step);

}  // namespace kb::workloads
