#pragma once
// How a decode sweep is cut to the machine, shared by the decode workloads (gqa_decode,
// gqa_decode_batch): the query rows swept at a time, the KV tile, whether V is loaded
// ahead, the TCM that takes, and the reduce's message segment, all from the topology.
#include <cstdint>
#include <string>
#include <vector>

#include "base/ids.h"
#include "base/topology.h"
#include "kernels/gqa/gqa_decode.h"
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
  std::vector<workloads::SimUnit> simulate;  // what this process simulates (run --jobs); empty: all
};

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
// KV rows per sweep tile for blocks of m query rows (the `tile` knob's auto).
std::uint32_t auto_tile_rows(const DecodeConfig& c, std::uint32_t m, const Topology& topo);
// KV rows of a rank (the largest shard).
std::uint64_t kv_rows_per_rank(const DecodeConfig& c);
// Rows of the first of two split blocks for all `rows` query rows at once (0: no split;
// DecodeParams::split_rows): the pipelined sweep, GEMM-bound, of two or more row passes.
std::uint32_t split_rows(const DecodeConfig& c, std::uint32_t rows, const Topology& topo);
// The MATH engine's cycles for a merge of `rows` state rows of head dim d, once its
// message is in: merge_into's ops (merge_state's steps for `fused`).
double merge_cycles(double rows, std::uint32_t d, const Topology& topo, Variant variant);
// Rows per reduce message segment (DecodeParams::segment_rows): the fewest whose transfer
// over a PE's fabric port covers their merge and the CPU's issue of send and merge.
std::uint32_t segment_rows(const DecodeConfig& c, const Topology& topo);

}  // namespace kb::gqa
