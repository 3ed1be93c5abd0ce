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

namespace kb::gqa {

struct DecodeConfig : AttentionShape {
  std::uint32_t cubes = 8, pes = 8;  // C, P
  Variant variant = Variant::Pipelined;
  std::uint32_t tile_rows = 0;  // 0: chosen from the shapes
  // Rows per composite streaming tile: small enough that the last tile's exposed GEMM
  // is short, large enough that each tile's GEMM still hides under its DMA.
  std::uint32_t stream_rows = 64;
  std::vector<SipId> devices;   // empty: all
  std::vector<SipId> simulate;  // the devices this process simulates (run --jobs); empty: all
};

// The tensors and kernel parameters of a decode, placed in HBM but not yet launched.
struct DecodePlan {
  std::vector<SipId> devices;
  std::uint32_t groups_per_sip = 0, tile_rows = 0;
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
  std::uint32_t groups_per_sip = 0, tile_rows = 0;
  std::vector<SipId> devices;
  DecodeBreakdown breakdown;
  std::uint64_t kv_bytes = 0;           // K and V bytes the DMA read
  double roofline_cycles = 0;           // 2*S*H_kv*d*bytes / (HBM bw of the PEs used)
  double model_cycles = 0;              // the closed-form model's prediction
  std::optional<HostTensor> o;          // [H_q, T_q, d] in data mode
  std::uint64_t issued_ops = 0;         // tl ops the CPUs issued
};

// Throws workloads::ConfigError naming the fields.
void validate(const DecodeConfig& c, const Topology& topo);
std::uint32_t auto_tile_rows(const DecodeConfig& c, const Topology& topo);

// Validates `c` and places its tensors: from `inputs`, or empty (zeros) without them.
DecodePlan plan_decode(RuntimeContext& rt, const DecodeConfig& c, const AttentionInputs* inputs);
// Launches the kernel of a plan on its devices (for the next run() or start()).
void launch_decode(RuntimeContext& rt, const DecodePlan& plan);

// Runs decode on `rt`'s system: plan, launch, run, and what the op log says. `inputs`
// is required in data mode.
DecodeResult run_decode(RuntimeContext& rt, const DecodeConfig& c, const AttentionInputs* inputs);

}  // namespace kb::gqa
