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
  std::string placement = "given";   // who chose C and P: given, SP table or default rule
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
// The TCM a PE of the decode kernel needs at most when it sweeps `rows` query rows at a
// time, bytes (an upper bound: a tile's scratch counted at its largest).
std::uint64_t decode_tcm_bytes(const DecodeConfig& c, std::uint32_t rows, std::uint32_t tile_rows,
                               std::uint32_t stream_rows, bool prefetch_v, bool split);
// Whether blocks of `rows` query rows make the sweep GEMM-bound: a KV row's two GEMMs take
// longer than its K and V bytes on the HBM channel (the pipelined sweep then prefetches V).
bool gemm_bound(const DecodeConfig& c, std::uint32_t rows, const Topology& topo);
// Whether the pipelined sweep loads V tiles ahead: when GEMM-bound, or when the whole-tile
// P.V at the end costs less than the HBM latency a V stream waits for.
bool prefetch_v(const DecodeConfig& c, std::uint32_t rows, std::uint32_t tile_rows, const Topology& topo);
// The query rows swept at a time and the KV tile: all G * T_q rows when their buffers fit
// TCM, else the largest block of whole heads, else of a run of one head's positions.
// Throws ConfigError when not even one row fits.
struct DecodeTiling {
  std::uint32_t row_block = 0, tile_rows = 0;
  std::uint32_t split_rows = 0;  // all rows as two blocks, K and V kept in TCM (0: no split)
  bool prefetch_v = false;  // the pipelined sweep loads V tiles ahead
  std::uint64_t tcm_bytes = 0;
};
DecodeTiling decode_tiling(const DecodeConfig& c, const Topology& topo);
// Sets C and P where not given: the SP table's fastest at this S when the table was
// measured on this shape and topology and its choice fits the run's SIPs, else the
// default rule (docs/workloads.md, Placement). Returns a note saying which.
std::string choose_placement(DecodeConfig& c, const std::string& sp_table, std::optional<std::uint32_t> cubes,
                             std::optional<std::uint32_t> pes, const Topology& topo);
// KV rows per sweep tile for blocks of m query rows (the `tile` knob's auto).
std::uint32_t auto_tile_rows(const DecodeConfig& c, std::uint32_t m, const Topology& topo);
// KV rows of a rank (the largest shard).
std::uint64_t kv_rows_per_rank(const DecodeConfig& c);
// Rows of the first of two split blocks for all `rows` query rows at once (0: no split;
// DecodeParams::split_rows): the pipelined sweep, GEMM-bound, of two or more row passes.
std::uint32_t split_rows(const DecodeConfig& c, std::uint32_t rows, const Topology& topo);

// The MATH cycles of tl.merge_state on `rows` state rows of head dim d.
double merge_cycles(double rows, std::uint32_t d, const Topology& topo);
// Rows per reduce message segment (DecodeParams::segment_rows): the fewest whose transfer
// over a PE's fabric port covers their merge and the CPU's issue of send and merge.
std::uint32_t segment_rows(const DecodeConfig& c, const Topology& topo);

// Validates `c` and places its tensors: from `inputs`, or empty (zeros) without them.
DecodePlan plan_decode(RuntimeContext& rt, const DecodeConfig& c, const AttentionInputs* inputs);
// Launches the kernel of a plan on its devices (for the next run() or start()).
void launch_decode(RuntimeContext& rt, const DecodePlan& plan);

// Runs decode on `rt`'s system: plan, launch, run, and what the op log says. `inputs`
// is required in data mode.
DecodeResult run_decode(RuntimeContext& rt, const DecodeConfig& c, const AttentionInputs* inputs);

}  // namespace kb::gqa
