#pragma once
// Where a model's decode step sits on the machine (docs/models.md, The layer on the PEs):
// each PE's place in a KV head's group, the form of the layer the kernels run, each
// layer's weights laid out per PE as the kernels stream them, the attention's paged
// cache, the step's collectives, and the ends of the model.
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "kernels/gqa/helpers.h"
#include "kernels/layer/model_step.h"
#include "workloads/attention/placement.h"
#include "workloads/gqa_decode_batch/batch_run.h"
#include "workloads/models/step_run.h"

namespace kb::workloads {

// Where a SIP's PEs sit among the KV-head groups.
struct Geometry {
  gqa::HeadPlacement heads;
  std::uint32_t sip_pes = 0, cube_pes = 0, ranks = 0;
  std::vector<std::uint32_t> starts;  // each group slot's first cube

  Geometry(const Topology& topo, std::uint32_t h_kv, std::size_t sips)
      : heads(gqa::place_heads(h_kv, sips, topo, false, std::nullopt, std::nullopt)),
        sip_pes(topo.pes_per_sip()),
        cube_pes(topo.cube.pes),
        ranks(heads.cubes * heads.pes) {
    for (std::uint32_t slot = 0; slot < heads.groups_per_sip; ++slot)
      starts.push_back(gqa::group_start(topo, heads.cubes, slot));
  }
  // The group slot and rank of a SIP's shard `i` (cube i / P, PE i % P), if it is in one.
  std::optional<std::pair<std::uint32_t, std::uint32_t>> role(const Mesh& mesh, std::uint32_t i) const {
    if (i % cube_pes >= heads.pes) return std::nullopt;
    for (std::uint32_t slot = 0; slot < starts.size(); ++slot)
      if (const auto idx = gqa::GroupGeometry::of(starts[slot], heads.cubes, mesh).index_of(CubeId(i / cube_pes)))
        return std::pair{slot, *idx * heads.pes + i % cube_pes};
    return std::nullopt;
  }
};

// The model's block (its norm, MLP, bias and form), as the layer kernels take it.
layer::Block block_of(const ModelPreset& m);
// The layer's form and per-rank column counts for the step.
layer::LayerForm form_of(const StepConfig& c, const Geometry& geo, const Topology& topo);
// Intermediate features per PE of a run of `pes` PEs.
std::uint32_t mlp_cols(const StepConfig& c, std::uint32_t pes);
// The tensors of layer `index` on one SIP (device index `di`), from `values` or empty
// (timing mode).
layer::LayerWeights place_layer(RuntimeContext& rt, const StepConfig& c, const Geometry& geo, const layer::LayerForm& f,
                                std::uint32_t di, SipId sip, std::uint32_t index, const LayerValues* values);
// Batched decode's configuration for the step's attention.
gqa::BatchConfig attention_config(const StepConfig& c, const Geometry& geo, const layer::LayerForm& f,
                                  const Topology& topo);
// The TCM the stage of the QKV weights preloaded for the next layer takes at most.
std::uint64_t qkv_stage_bytes(const layer::LayerForm& f, const Topology& topo);
// A layer's caches before the step in batched decode's varlen layout, the new rows zero.
gqa::BatchInputs cache_inputs(const StepConfig& c, const LayerValues& v);
// The step's collectives: each group's, and the all-reduce over every PE of the run.
void plan_collectives(layer::StepPlan& s, const Topology& topo, const Geometry& geo, const std::vector<SipId>& devices);
// The ends of the model (model_step, timing mode): the vocabulary dealt over every PE of
// the run, each PE's pick gathered by all.
layer::Ends place_ends(RuntimeContext& rt, const StepConfig& c, const Geometry& geo, const layer::LayerForm& f);

}  // namespace kb::workloads
