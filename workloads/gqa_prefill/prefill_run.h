#pragma once
// The host side of GQA prefill: validation (shape, placement, TCM) before any simulation,
// placement of every KV head (and its replicas) on its group, Q laid out and O read back
// in the plan's tile order, launch, and what the op log says (FLOPs, GEMM roofline, PE
// balance).
#include <optional>
#include <string>
#include <vector>

#include "kernels/gqa/gqa_prefill.h"
#include "platform/runtime_context.h"
#include "workloads/attention/attention.h"
#include "workloads/attention/placement.h"
#include "workloads/gqa_prefill/prefill_model.h"

namespace kb::gqa {

// t_q (AttentionShape) 0 means S: a whole prompt; fewer rows are a chunk of a prompt
// after a cached prefix of S - t_q positions.
struct PrefillConfig : AttentionShape {
  PrefillConfig() {
    s = 16384;
    t_q = 0;
  }
  std::uint32_t cubes = 0, pes = 0;  // C, P; 0: the default placement's
  RowLayout layout = RowLayout::Striped;
  std::optional<Ring> ring;      // empty: auto, by the model (PrefillModel)
  std::uint32_t chunk_rows = 0;  // 0: the largest of 256, 128, ... 16 whose buffers fit TCM
  std::uint32_t q_tile = 64;
  Variant variant = Variant::Pipelined;  // pipelined (tl ops) or fused (sequences)
  std::vector<SipId> devices;   // empty: all
  std::vector<workloads::SimUnit> simulate;  // what this process simulates (run --jobs); empty: all
  std::uint32_t q_len() const { return t_q ? t_q : static_cast<std::uint32_t>(s); }
  // The problem with T_q resolved (shapes of the inputs and the reference).
  AttentionShape shape() const;
};

// Everything decided before the run: where the heads go and how the work is cut.
struct PrefillSetup {
  HeadPlacement placement;
  PrefillShape plan_shape;
  std::string ring_reason;  // why this ring: asked for, or auto's reason
  PrefillModel model;       // the closed-form model of that ring
};

// Throws workloads::ConfigError naming the fields (shape, placement, TCM), before any simulation.
PrefillSetup validate(const PrefillConfig& c, const Topology& topo);

struct PrefillResult {
  std::uint64_t cycles = 0;
  HeadPlacement placement;
  bool placement_given = false;  // C and P both given
  std::uint32_t chunk_rows = 0, tile_heads = 0, tile_positions = 0;
  Ring ring = Ring::KV;
  std::string ring_reason;
  PrefillModel model;  // the closed-form model of this run's ring
  std::vector<SipId> devices;  // the SIPs that hold a group
  double flops = 0;            // causal-aware attention FLOPs (the work that must be done)
  double gemm_flops = 0;       // FLOPs the GEMM engines actually did
  double roofline_cycles = 0;  // flops over the GEMM peak of every PE of the SIPs used
  // Every message of the ring PE to PE, and the bytes of those crossing a link between cubes.
  std::uint64_t ring_transfers = 0, ring_bytes = 0, ring_link_bytes = 0;
  // Per PE of the SIPs used: GEMM busy cycles (max and sum), over `pes_measured` PEs.
  double busy_max = 0, busy_total = 0;
  std::uint64_t pes_measured = 0;
  double busy_mean() const { return pes_measured ? busy_total / static_cast<double>(pes_measured) : 0; }
  std::optional<HostTensor> o;
};

// The tensors and kernel parameters of a prefill, placed in HBM but not yet launched.
struct PrefillPlacement {
  PrefillSetup setup;
  std::shared_ptr<const PrefillPlan> plan;
  std::vector<SipId> devices;                           // the SIPs that hold a group
  std::vector<std::shared_ptr<PrefillParams>> params;   // per device
  struct Placed {
    std::uint32_t head;  // the KV head
    PrefillGroup group;  // its tensors on one replica's group
  };
  std::vector<Placed> placed;  // in head order, then replica
};

// Validates `c` and places its tensors (in `at`'s regions where given): from `inputs`,
// or empty (zeros) without them.
PrefillPlacement plan_prefill(RuntimeContext& rt, const PrefillConfig& c, const AttentionInputs* inputs,
                              const TensorRegions& at = {});
// Launches the kernel of a placement on its devices (for the next run() or start()).
void launch_prefill(RuntimeContext& rt, const PrefillPlacement& placement);

PrefillResult run_prefill(RuntimeContext& rt, const PrefillConfig& c, const AttentionInputs* inputs);

// Every row of a replica's group Q and O (and state), in the plan's tile order: fn(row of
// the group's tensor, query head of the group, query position). Each (head, position)
// belongs to exactly one replica and rank.
template <class Fn>
void for_each_row(const PrefillPlan& plan, std::uint32_t replica, Fn fn) {
  for (std::uint32_t cube = 0; cube < plan.shape.cubes; ++cube)
    for (std::uint32_t pe = 0; pe < (plan.kv_split ? 1 : plan.shape.pes); ++pe) {
      const std::uint64_t base = plan.qo_base(cube, pe);
      for (const PrefillTile& t : plan.ranks[plan.rank_of(replica, cube, pe)])
        for (std::uint32_t j = 0; j < t.heads; ++j)
          for (std::uint64_t i = 0; i < t.positions; ++i)
            fn(base + t.row + j * t.positions + i, t.head0 + j, t.pos0 + i);
    }
}

}  // namespace kb::gqa
