#pragma once
// The host side of GQA decode: validates a configuration against the machine, places
// Q/K/V/O of every KV head on its CUBE Group (heads spread over the devices), launches
// the kernel and reports what the op log says about where the time went.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/gqa/gqa_decode.h"
#include "platform/runtime_context.h"
#include "workloads/attention/attention.h"
#include "workloads/attention/decode_tiling.h"

namespace kb::gqa {

// The tensors and kernel parameters of a decode, placed in HBM but not yet launched.
struct DecodePlan {
  std::vector<SipId> devices;
  std::uint32_t groups_per_sip = 0, tile_rows = 0, row_block = 0, split_rows = 0;
  std::vector<std::shared_ptr<DecodeParams>> params;  // per device; groups (q, k, v, o) in KV-head order
  std::vector<DeviceTensor> outputs;                  // O of each KV head, in head order
};

// Where the time went, in cycles from the start of the run (spans over all PEs).
struct Phase {
  std::uint64_t begin = 0, end = 0;
};
struct DecodeBreakdown {
  Phase sweep, level2, level1, store;
};

struct DecodeResult {
  std::uint64_t cycles = 0;
  std::uint32_t groups_per_sip = 0, tile_rows = 0, row_block = 0;
  std::uint32_t split_rows = 0;  // the first of two overlapped row blocks (0: no split)
  bool prefetch_v = false;     // the sweep loads V tiles ahead (GEMM-bound)
  std::uint32_t segment_rows = 0;  // rows per Level-1 message segment
  std::vector<SipId> devices;  // the SIPs that hold a group
  DecodeBreakdown breakdown;
  std::uint64_t kv_bytes = 0;           // K and V bytes the DMA read
  // max(K/V bytes / HBM bandwidth, FLOPs / GEMM peak) of every PE of the SIPs used
  double roofline_cycles = 0;
  double flops = 0;                     // causal-aware attention FLOPs
  std::string bound;                    // which term of the roofline is larger: hbm or gemm
  double model_cycles = 0;              // the closed-form model's prediction
  std::optional<HostTensor> o;          // [H_q, T_q, d] in data mode
  std::uint64_t issued_ops = 0;         // tl ops the CPUs issued
};

// Throws workloads::ConfigError naming the fields: the shape, the placement, and the
// TCM a PE needs, before any simulation.
void validate(const DecodeConfig& c, const Topology& topo);
// Sets C and P where not given: the SP table's fastest at this S when the table was
// measured on this shape and topology and its choice fits the run's SIPs, else the
// default rule (docs/workloads.md, Placement). Returns a note saying which.
std::string choose_placement(DecodeConfig& c, const std::string& sp_table, std::optional<std::uint32_t> cubes,
                             std::optional<std::uint32_t> pes, const Topology& topo);

// Validates `c` and places its tensors (in `at`'s regions where given): from `inputs`,
// or empty (zeros) without them.
DecodePlan plan_decode(RuntimeContext& rt, const DecodeConfig& c, const AttentionInputs* inputs,
                       const TensorRegions& at = {});
// Launches the kernel of a plan on its devices (for the next run() or start()).
void launch_decode(RuntimeContext& rt, const DecodePlan& plan);

// Runs decode on `rt`'s system: plan, launch, run, and what the op log says. `inputs`
// is required in data mode.
DecodeResult run_decode(RuntimeContext& rt, const DecodeConfig& c, const AttentionInputs* inputs);

}  // namespace kb::gqa
