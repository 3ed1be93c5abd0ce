#include "workloads/attention/decode_tiling.h"

#include <algorithm>
#include <cmath>

#include "base/units.h"
#include "kernels/gqa/helpers.h"

namespace kb::gqa {

std::uint64_t decode_tcm_bytes(const DecodeConfig& c, std::uint32_t rows, std::uint32_t tile_rows,
                               std::uint32_t stream_rows, bool prefetch_v, bool split) {
  using tl::tcm_bytes;
  const DType f = DType::fp32, dt = c.dtype;
  const std::int64_t m = rows, t = tile_rows, d = c.d;
  const std::uint64_t scores = tcm_bytes({m * t, 1}, f), p = tcm_bytes({m * t, 1}, dt), o_rows = tcm_bytes({m, d}, f),
                      col = tcm_bytes({m, 1}, f), stage = tcm_bytes({4 * static_cast<std::int64_t>(stream_rows), d}, dt);
  // Q and the running state, then each variant's buffers (gqa_decode.cpp) with the most
  // a tile allocates in its scope: scaled scores, the mask and the masked scores, P; the
  // softmax columns; O rescaled.
  std::uint64_t b = tcm_bytes({m, d}, dt) + tcm_bytes({m, d + 2}, f);
  const std::uint64_t tile_scratch = 4 * scores + 4 * col + o_rows;
  switch (c.variant) {
    case Variant::Pipelined:
      b += 2 * (scores + p + o_rows + col + stage) + tile_scratch;
      if (split) b += 2 * tcm_bytes({static_cast<std::int64_t>(kv_rows_per_rank(c)), d}, dt);  // K and V kept
      else b += prefetch_v ? 3 * tcm_bytes({t, d}, dt) : 2 * stage;
      break;
    case Variant::Fused: b += 3 * (scores + p + o_rows + 3 * col + 2 * stage); break;
    case Variant::Naive:
      b += col + tile_scratch + scores + p + o_rows + 2 * tcm_bytes({2 * static_cast<std::int64_t>(stream_rows), d}, dt);
      break;
  }
  // After the sweep: at the root cube O (fp32 and stored), and the reduce's received
  // states with each merge's columns: log2 P halving messages (P - 1 segments when P is
  // not a power of two, fewer bytes) and up to 4 Level-1 segments, each at most a state.
  const std::uint64_t children = binomial_rounds(c.pes) + 4;
  return b + o_rows + tcm_bytes({m, d}, dt) + children * (tcm_bytes({m, d + 2}, f) + 3 * col);
}

bool gemm_bound(const DecodeConfig& c, std::uint32_t rows, const Topology& topo) {
  // Per KV row: its two GEMMs (Q.K^T over d, P.V into d columns) against its K and V bytes.
  // Both sides times the GEMM's columns, to stay in integers.
  const auto& g = topo.pe.gemm;
  const std::uint64_t gemm = (rows + g.rows - 1) / g.rows * (c.d + (c.d + g.cols - 1) / g.cols * g.cols);
  return gemm * topo.cube.hbm.bytes_per_cycle > 2ull * c.d * dtype_bytes(c.dtype) * g.cols;
}

bool prefetch_v(const DecodeConfig& c, std::uint32_t rows, std::uint32_t tile_rows, const Topology& topo) {
  if (c.variant != Variant::Pipelined) return false;
  // A V tile streamed by its P.V composite starts only once P is ready, and pays the HBM
  // latency where the DMA has nothing else queued; loaded ahead, its P.V is one GEMM
  // over the whole tile, longer than a streamed tile's last chunk by g (t - s) cycles.
  const auto& g = topo.pe.gemm;
  const std::uint64_t per_row = (rows + g.rows - 1) / g.rows * ((c.d + g.cols - 1) / g.cols);
  const std::uint64_t extra = per_row * (tile_rows - std::min(c.stream_rows, tile_rows));
  return gemm_bound(c, rows, topo) || extra < topo.cube.hbm.latency_cycles;
}

std::uint64_t kv_rows_per_rank(const DecodeConfig& c) {
  return (c.s + static_cast<std::uint64_t>(c.cubes) * c.pes - 1) / (static_cast<std::uint64_t>(c.cubes) * c.pes);
}

std::uint32_t split_rows(const DecodeConfig& c, std::uint32_t rows, const Topology& topo) {
  // All but the last GEMM row pass, in whole heads: the last pass's GEMMs then hide the
  // first block's reduce. One pass, or rows that do not split into whole heads: none.
  const std::uint32_t array = topo.pe.gemm.rows, passes = (rows + array - 1) / array;
  if (c.variant != Variant::Pipelined || passes < 2 || !gemm_bound(c, rows, topo)) return 0;
  return (passes - 1) * array / c.t_q * c.t_q;
}

double merge_cycles(double rows, std::uint32_t d, const Topology& topo, Variant variant) {
  // Per row of m: max, two exp_diffs and the copy; over [O | l]: merge_into scales one
  // side and adds it to the other scaled (mul, fma), merge_state scales both and adds.
  // merge_into's ops go out one by one: the one after maximum waits for its issue.
  const auto& math = topo.pe.math;
  auto cost = [&](const char* op) { return static_cast<double>(math.cycles.at(op)); };
  const double column = std::ceil(rows / math.lanes), ol = std::ceil(rows * (d + 1) / math.lanes);
  const double steps = column * (cost("max") + 2 * cost("exp") + cost("copy"));
  if (variant == Variant::Fused) return steps + ol * (2 * cost("mul") + cost("add"));
  const double gap = std::max(0.0, static_cast<double>(topo.pe.cpu.issue_cycles.at("math")) - column * cost("max"));
  return steps + ol * (cost("mul") + cost("fma")) + gap;
}

std::uint32_t segment_rows(const DecodeConfig& c, const Topology& topo) {
  // The fewest rows whose transfer over a PE's fabric port (the narrowest link a state
  // crosses) takes at least as long as their merge and the CPU's issue of the send, the
  // receive and the merge (smaller segments would leave the port idle while the MATH
  // engine or the CPU catches up): merge_state is one sequence and its three scratch
  // columns; merge_into four column views and six MATH ops.
  const auto& cpu = topo.pe.cpu.issue_cycles;
  const double merge_issue = c.variant == Variant::Fused ? cpu.at("sequence") + 3 * cpu.at("alloc")
                                                         : 4 * cpu.at("view") + 6 * cpu.at("math");
  const double issue = static_cast<double>(cpu.at("send") + cpu.at("recv")) + merge_issue;
  const double row = (c.d + 2.0) * 4 / static_cast<double>(topo.cube.fabric.bytes_per_cycle);
  std::uint32_t rows = 1;
  while (rows * row < std::max(merge_cycles(rows, c.d, topo, c.variant), issue)) ++rows;
  return rows;
}

DecodeTiling decode_tiling(const DecodeConfig& c, const Topology& topo) {
  const std::uint32_t g = c.h_q / c.h_kv;
  std::vector<std::uint32_t> candidates;  // whole heads x T_q, largest first, then runs of one head's positions
  for (std::uint32_t heads = g; heads >= 1; --heads) candidates.push_back(heads * c.t_q);
  for (std::uint32_t n = c.t_q / 2; n >= 1; n /= 2) candidates.push_back(n);
  DecodeTiling t;
  for (const std::uint32_t rows : candidates) {
    t.row_block = rows;
    t.tile_rows = c.tile_rows ? c.tile_rows : auto_tile_rows(c, rows, topo);
    t.prefetch_v = prefetch_v(c, rows, t.tile_rows, topo);
    const std::uint32_t stream = std::min(c.stream_rows, t.tile_rows);
    if (rows == g * c.t_q && (t.split_rows = split_rows(c, rows, topo)) > 0) {
      t.tcm_bytes = decode_tcm_bytes(c, rows, t.tile_rows, stream, t.prefetch_v, true);
      if (t.tcm_bytes <= topo.pe.tcm_bytes) return t;
      t.split_rows = 0;  // K and V do not fit beside the rest: one block, V tiles
    }
    t.tcm_bytes = decode_tcm_bytes(c, rows, t.tile_rows, stream, t.prefetch_v, false);
    if (t.tcm_bytes <= topo.pe.tcm_bytes) return t;
  }
  throw workloads::ConfigError("decode needs " + units::format_bytes(t.tcm_bytes) +
                               " of TCM per PE even one query row at a time (d " + std::to_string(c.d) +
                               ", sweep tiles of " + std::to_string(t.tile_rows) + " rows); a PE has " +
                               units::format_bytes(topo.pe.tcm_bytes) + ": give a smaller {tile} or {head_dim}");
}

std::uint32_t auto_tile_rows(const DecodeConfig& c, std::uint32_t m, const Topology& topo) {
  const std::uint64_t per_rank = kv_rows_per_rank(c);
  // Tiles of at most 16K scores keep the per-tile buffers small (64 KiB of fp32), in
  // whole GEMM column blocks so that no Q.K^T pays for columns it does not fill; two
  // tiles per rank let the pipelined sweep overlap, but not below one column block: a
  // rank of at most 64 keys sweeps one tile (two would pay two GEMM fills in a row for
  // nothing to overlap: S = 4K, 1,574 -> 1,381 cycles).
  const std::uint64_t cols = topo.pe.gemm.cols;
  std::uint64_t t = std::clamp<std::uint64_t>(16384 / std::max<std::uint32_t>(m, 1), 16, 512);
  if (t >= cols) t = t / cols * cols;
  t = std::min<std::uint64_t>(t, std::max<std::uint64_t>(cols, (per_rank + 1) / 2));
  return static_cast<std::uint32_t>(t);
}

}  // namespace kb::gqa
