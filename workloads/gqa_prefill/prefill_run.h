#pragma once
// The host side of GQA prefill: validation, placement of every KV head on its group of
// C = G cubes, launch, and what the op log says (FLOPs, GEMM roofline, PE balance).
#include <optional>
#include <vector>

#include "platform/runtime_context.h"
#include "workloads/attention/attention.h"
#include "kernels/gqa/gqa_prefill.h"

namespace kb::gqa {

// t_q (AttentionShape) 0 means S: a whole prompt; fewer rows are a chunk of a prompt
// after a cached prefix of S - t_q positions.
struct PrefillConfig : AttentionShape {
  PrefillConfig() {
    s = 16384;
    t_q = 0;
  }
  std::uint32_t pes = 8;
  RowLayout layout = RowLayout::Zigzag;
  std::uint32_t chunk_rows = 256, q_tile = 64;
  std::vector<SipId> devices;  // empty: all
  std::vector<SipId> simulate;  // the devices this process simulates (run --jobs); empty: all
  std::uint32_t q_len() const { return t_q ? t_q : static_cast<std::uint32_t>(s); }
  // The problem with T_q resolved (shapes of the inputs and the reference).
  AttentionShape shape() const;
};

struct PrefillResult {
  std::uint64_t cycles = 0;
  std::uint32_t groups_per_sip = 0;
  std::vector<SipId> devices;
  double flops = 0;            // causal-aware attention FLOPs (the work that must be done)
  double gemm_flops = 0;       // FLOPs the GEMM engines actually did
  double roofline_cycles = 0;  // flops over the GEMM peak of the PEs used
  std::uint64_t ring_transfers = 0, ring_bytes = 0;
  // Per PE of the groups: GEMM busy cycles (max and sum), over `pes_measured` PEs.
  double busy_max = 0, busy_total = 0;
  std::uint64_t pes_measured = 0;
  double busy_mean() const { return pes_measured ? busy_total / static_cast<double>(pes_measured) : 0; }
  std::optional<HostTensor> o;
};

void validate(const PrefillConfig& c, const Topology& topo);
PrefillResult run_prefill(RuntimeContext& rt, const PrefillConfig& c, const AttentionInputs* inputs);

}  // namespace kb::gqa
