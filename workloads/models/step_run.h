#pragma once
// The host side of a model's decode step (docs/models.md): places the layers tensor-
// parallel over the run's SIPs (tp_plan.h) and each layer's paged KV cache as batched
// decode places it, launches the step on every PE (kernels/layer), and measures it: the
// latency, the time by op, the bytes of weights, KV and activations, and the FLOPs.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/npy.h"
#include "platform/runtime_context.h"
#include "workloads/models/model_presets.h"
#include "workloads/models/tp_plan.h"

namespace kb::workloads {

struct StepConfig {
  ModelPreset model;
  std::vector<std::uint64_t> lens;  // per request: its context, the step's new tokens included
  bool prefill = false;             // the prompts (their last q_len tokens), else one new token each
  std::uint64_t q_len = 0;          // prefill: new tokens a request, over a cached prefix (0: the whole prompt)
  std::uint32_t layers = 1;         // decoder layers simulated
  bool ends = false;                // the embedding, final norm and LM head (model_step)
  std::uint32_t page_rows = 16;
  std::vector<SipId> devices;       // the run's SIPs
  std::uint32_t batch() const { return static_cast<std::uint32_t>(lens.size()); }
  // Request r's new tokens, at positions [lens[r] - news(r), lens[r]); and all of them.
  std::uint64_t news(std::uint32_t r) const { return prefill ? (q_len ? std::min(q_len, lens[r]) : lens[r]) : 1; }
  std::uint64_t tokens() const;
};

// One layer's values: the weights by their Hugging Face Llama names, in nn.Linear's
// [out, in] layout (norms [1, h]; LayerNorm's bias as "<norm>.bias"), and each request's
// KV cache before the step, [H_kv, L - new tokens, d].
struct LayerValues {
  std::map<std::string, HostTensor> weights;
  std::vector<HostTensor> k_cache, v_cache;
};

// The values of a decoder layer's step (data mode): its input x [tokens, h] (the new
// tokens, request by request), their positions, and the layer's weights and cache, random from `seed` (weights and caches
// bf16-exact, as they are stored).
struct StepValues {
  HostTensor x;
  std::vector<std::int64_t> positions;
  LayerValues layer;
  static StepValues random(const StepConfig& c, std::uint32_t seed);
};

// The layer's output y [tokens, h] and the new K and V rows [tokens, H_kv, d] (after RoPE for K).
struct LayerOutputs {
  HostTensor y, k_new, v_new;
};

// The simulated layers: `layers` of them from cycle `begin` to `end`.
struct LayerSpan {
  std::uint64_t begin = 0, end = 0;
  std::uint32_t layers = 0;
};

struct StepResult {
  std::uint64_t cycles = 0;        // the simulated run
  LayerSpan layers;
  double layer_cycles = 0;          // a layer's, in the steady state of the simulated ones
  std::vector<SipId> devices;
  std::vector<std::pair<std::string, double>> by_op;  // mean cycles per PE in each op, step order
  // Bytes the DMA moved, as the op log counts them: the layers' (weights, KV cache and
  // activations: loads and stores of everything else), and the model's ends'.
  std::uint64_t weight_bytes = 0, kv_bytes = 0, activation_bytes = 0;
  std::uint64_t end_weight_bytes = 0, end_activation_bytes = 0;
  std::optional<LayerOutputs> out;  // data mode
};

// Throws ConfigError naming the fields: the heads against the SIPs, HBM and TCM.
TpPlan check_step(const StepConfig& c, const Topology& topo);
// Runs the step; `values` are required in data mode (decoder_layer only).
StepResult run_step(RuntimeContext& rt, const StepConfig& c, const StepValues* values);

}  // namespace kb::workloads
